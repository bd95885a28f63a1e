"""krepro bisect's record: bisect.json, written again after every step so
that an interrupted bisection leaves what it found, and summary.md, rendered
from bisect.json alone."""
import datetime
import json
import os
import sys

from .. import stats


def log(msg):
    """A line of the bisection's progress on stderr."""
    print(f"krepro: bisect: {msg}", file=sys.stderr, flush=True)


def now():
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def new_record(b, commits):
    """bisect.json's fields for Bisect b, searching `commits` commits, before
    its first step; its steps are b.steps, the same list."""
    return {"format": 1, "tree": os.path.realpath(b.tree), "good": b.good, "bad": b.bad,
            "repro": b.repro, "arch": b.arch, "commits": commits,
            "rate_mode": b.rate_mode, "miss": b.miss, "floor": b.floor,
            "max_runs": b.max_runs, "started": now(), "finished": None,
            "interrupted": False, "rate": None, "steps": b.steps, "skipped": [],
            "culprit": None, "confidence": None, "stopped": None, "notes": [], "exit": None}


def new_step(n, role, commit, subject):
    """A step's fields in bisect.json before it is built and decided."""
    return {"n": n, "role": role, "commit": commit, "subject": subject,
            "build_seconds": None, "build": None, "text": None, "rows": [], "runs": 0,
            "fails": 0, "trials": 0, "clean": 0, "verdict": "skip", "why": "", "miss": None,
            "confidence": None}


def save(results, data):
    """bisect.json in results, replaced whole: a reader never sees half of it."""
    path = os.path.join(results, "bisect.json")
    with open(path + ".tmp", "w") as f:
        json.dump(data, f, indent=1)
    os.replace(path + ".tmp", path)


def write_summary(results, data):
    """summary.md in results, and on stdout."""
    text = render_summary(data)
    with open(os.path.join(results, "summary.md"), "w") as f:
        f.write(text)
    print(text, end="")


def render_summary(d):
    """summary.md's bisection section, from bisect.json alone."""
    out = [f"## Bisection: {d['repro']} ({d['arch']})", ""]
    out.append(f"{d['commits']} commits on the first-parent line, GOOD {d['good'][:12]} to BAD "
               f"{d['bad'][:12]}; a good verdict's target miss {stats.pct_up(d['miss'])}, floor "
               f"{d['floor']}, at most {d['max_runs']} guests a step.")
    if d.get("direction") == "fix":
        out.append("A fix: the search reads the line from the series' tip (GOOD: it PASSes) back to "
                   "BASE (BAD: it FAILs); its culprit is the last commit that still FAILs, the fix the "
                   "one after it.")
    if d.get("rate"):
        r = d["rate"]
        out.append(f"FAIL rate: {r['source']} (rate >= {stats.pct(r['low'])} at 95%); a good step "
                   f"wants {r['good_step_runs']} clean runs.")
    out += ["", "| step | role | commit | subject | build s | rows | runs | verdict | miss | confidence |",
            "|---|---|---|---|---|---|---|---|---|---|"] + step_rows(d) + [""] + answer_lines(d)
    if d.get("skipped"):
        out.append("")
        out.append("Skipped: " + "; ".join(f"{s['commit'][:12]} ({s['why']})" for s in d["skipped"]))
    for n in d.get("notes", []):
        out.append(f"- note: {n}")
    out.append("")
    out.append(f"Exit status {d.get('exit')}.")
    return "\n".join(out) + "\n"


def step_rows(d):
    """The steps table's rows, one a step."""
    out = []
    for s in d["steps"]:
        verdict = s["verdict"] + (f": {s['why']}" if s.get("why") else "")
        rows = "; ".join(r.get("cell") or f"{r['decision']} in {r['runs']}" for r in s["rows"]) or "-"
        out.append(f"| {s['n']} | {s['role']} | {s['commit'][:12]} | {s['subject'][:50]} | "
                   f"{s['build_seconds'] if s['build_seconds'] is not None else '-'} | {rows} | "
                   f"{s['runs']} (FAIL {s['fails']}, PASS {sum(r['counts'].get('PASS', 0) for r in s['rows'])})"
                   f" | {verdict} | "
                   f"{'-' if s.get('miss') is None else format(s['miss'], '.3f')} | "
                   f"{'-' if s.get('confidence') is None else format(s['confidence'], '.3f')} |")
    return out


def answer_lines(d):
    """What the bisection named: the fix, the culprit, or why neither."""
    out = []
    c = d.get("culprit")
    if c and c.get("fix"):
        out.append(f"**The fix: {c['fix']['commit'][:12]} (\"{c['fix']['subject']}\")**, the first commit "
                   f"that PASSes (the last that FAILs: {c['commit'][:12]}), confidence {c['confidence']:.3f} "
                   f"(at 95% for the rate); revert check: {c['revert']['verdict']}: {c['revert']['why']}.")
        for f in c.get("flags", []):
            out.append(f"- flag: {f}")
    elif c:
        out.append(f"**Culprit: {c['commit'][:12]} (\"{c['subject']}\")**, confidence "
                   f"{c['confidence']:.3f} (at 95% for the rate); revert check: {c['revert']['verdict']}: "
                   f"{c['revert']['why']}.")
        for f in c.get("flags", []):
            out.append(f"- flag: {f}")
    else:
        out.append(f"**No culprit named**: {d.get('stopped')}.")
        cand = d.get("candidate")
        if cand:
            out.append(f"- the candidate's checks: culprit again {cand['refail']['verdict']}; revert "
                       f"{cand['revert']['verdict']}: {cand['revert']['why']}")
    return out
