"""Reports from run.json alone: summary.md, results.ktap, junit.xml, the exit
status, and the gate's comparison.

render() and gate() never raise on a bad run directory or run.json: they say
what is wrong in one line on stderr and return USAGE."""
import json
import os
import statistics
import sys
from xml.sax.saxutils import escape, quoteattr

from . import stats
from .protocol import INTERRUPTED, UNDECIDED, USAGE
from .decode import report_lines
from .paths import read
from .reports import evidence_crash

EXPECTED = {"bug": "FAIL", "fixed": "PASS"}


def row_record(repro, kernel, role, row, meta, expect, rate_note="", **extra):
    """A decided row as run.json keeps it, its cell included. extra: what the
    runner knows of the row besides (unbounded: why a clean verdict cannot
    be bounded; evidence: what the kernel can show, evidence.Sight.record())."""
    counts = {o: row.count(o) for o in ("FAIL", "PASS", "OTHER", "HANG", "BROKEN", "SKIP") if row.count(o)}
    n = len(row.outcomes)
    rec = {"repro": repro, "kernel": kernel, "role": role, "decision": row.decision,
           "runs": n, "counts": counts, "fails": row.fails, "trials": row.trials,
           "why": row.why, "fix": meta.fix, "target_miss": row.target,
           "rate": None, "miss": None}
    if role == "bug":
        if row.rate is not None:
            f, t, src = row.rate[0] + row.fails, row.rate[1] + row.trials, row.rate[2]
            src = f"{src}; this row {row.fails}/{row.trials}"
        else:
            f, t, src = row.fails, row.trials, rate_note or "measured in this run"
        rec["rate"] = {"fails": f, "runs": t, "low": stats.rate_lower(f, t), "source": src}
    elif row.rate is not None:
        f, t, src = row.rate
        rec["rate"] = {"fails": f, "runs": t, "low": stats.rate_lower(f, t), "source": src}
        if row.fails == 0 and rec["rate"]["low"] > 0:
            rec["miss"] = stats.miss(rec["rate"]["low"], row.count("PASS"))
    rec.update(extra)
    want = EXPECTED.get(role) if expect else None
    rec["expected"] = want
    rec["as_expected"] = None if want is None else row.decision == want
    rec["cell"] = cell(rec)
    return rec


def cell(rec):
    d, n = rec["decision"], rec["runs"]
    c = rec["counts"]
    if d == "FAIL":
        s = f"FAIL {rec['fails']}/{rec['trials'] or n}"
        if rec["role"] == "bug" and rec["rate"]:
            s += f" ({stats.rate_bound(rec['rate']['low'])})"
        return s
    if d == "PASS":
        s = f"PASS {c.get('PASS', 0)}/{n}"
        if rec["role"] == "bug" and rec["rate"] and rec["rate"]["low"] > 0:
            m = stats.miss(rec["rate"]["low"], c.get("PASS", 0))
            return s + (f" (not shown where its {stats.rate_bound(rec['rate']['low'])} would have: "
                        f"{stats.miss_bound(m)})")
        # A blind path the bound does not already stand on.
        note = (rec.get("evidence") or {}).get("note")
        why = rec.get("unbounded") or "no FAIL rate"
        pre = f"{note}; " if note and note != why else ""
        if rec["miss"] is not None:
            return s + f" ({pre}{stats.miss_bound(rec['miss'])})"
        return s + f" ({pre}{why}; miss not bounded)"
    if d == "OTHER":
        return f"OTHER {c.get('OTHER', 0)}/{n}"
    if d == "UNDECIDED" and not n:
        # Not booted: every evidence path is blind on the kernel.
        return f"undecided: not booted ({rec['evidence']['note']}; nothing else could show the bug)"
    if d == "UNDECIDED":
        return "undecided: " + ", ".join(f"{k} {v}" for k, v in c.items()) + f" in {n} runs"
    return f"{d} {c.get(d, 0)}/{n}"


# An interrupted run's status, re-rendered or not: 128 + SIGINT, as a shell
# reports a Ctrl-C.


class BadRun(Exception):
    """A run directory or run.json that cannot be rendered; str() says which
    file and why, in one line."""


NONE = type(None)
ANY = object
NUM = (int, float)
# What rendering reads from run.json: key -> (required, allowed types). A
# list's items are checked by ITEMS; keys not named here are left alone.
REPORT_RECORD = {
    "rows": (True, list), "runs": (True, list), "finished": (True, (str, NONE)),
    "arch": (True, ANY), "started": (True, ANY), "mode": (True, dict),
    "interrupted": (False, (bool, NONE)), "expect": (False, (bool, NONE)),
    "any_report": (False, (bool, NONE)), "jobs": (False, (int, NONE)),
    "cut_off": (False, (list, NONE)), "prepare": (False, (list, NONE)),
    "kernels": (False, (list, NONE)),
}
GATE_RECORD = {
    "rows": (True, list), "runs": (True, list), "finished": (True, (str, NONE)),
    "interrupted": (False, (bool, NONE)), "kernels": (False, (list, NONE)),
}
ROW = {"repro": (True, str), "kernel": (True, str), "decision": (True, str), "cell": (True, str),
       "counts": (True, dict), "runs": (True, int), "role": (False, (str, NONE)),
       "expected": (False, (str, NONE)), "as_expected": (False, (bool, NONE)), "rate": (False, (dict, NONE)),
       "miss": (False, (*NUM, NONE)), "why": (False, (str, NONE))}
GATE_ROW = {k: ROW[k] for k in ("repro", "kernel", "decision", "cell")}
RUN = {"repro": (True, str), "kernel": (True, str), "outcome": (True, str), "run": (True, ANY),
       "evidence": (True, (str, NONE)), "log": (True, str), "seconds": (False, (*NUM, NONE)),
       "ktap": (False, (str, NONE)), "report": (False, (str, NONE)), "reports": (False, (list, NONE)),
       "lava_results": (False, (dict, NONE))}
GATE_RUN = {k: RUN[k] for k in ("repro", "kernel", "outcome", "evidence", "log")}
ITEMS = {
    "report": {"rows": ROW, "runs": RUN, "cut_off": {k: (True, ANY) for k in ("repro", "kernel", "run", "log")},
               "prepare": {"repro": (True, ANY), "outcome": (True, ANY), "log": (True, ANY),
                           "seconds": (True, NUM)},
               "kernels": {"label": (False, str)}},
    "gate": {"rows": GATE_ROW, "runs": GATE_RUN, "kernels": {"label": (False, str)}},
}
RATE = {"source": (True, str), "low": (True, NUM)}
CRASH = {"title": (False, (str, NONE)), "line": (False, int), "frames": (False, list)}
JSON_TYPES = ((bool, "a boolean"), (int, "a number"), (float, "a number"), (str, "a string"),
              (list, "a list"), (dict, "an object"), (NONE, "null"))


def json_type(v):
    return next(name for t, name in JSON_TYPES if isinstance(v, t))


def type_names(types):
    types = types if isinstance(types, tuple) else (types,)
    names = []
    for t in types:
        n = dict(JSON_TYPES)[t]
        if n not in names:
            names.append(n)
    return " or ".join(names)


def mismatch(obj, schema, where):
    """Why obj does not fit schema (a sentence), or None."""
    if not isinstance(obj, dict):
        return f"{where or 'the record'} is {json_type(obj)}, not an object"
    for key, (required, types) in schema.items():
        if key not in obj:
            if required:
                return f"{where}{'.' if where else ''}{key} is missing"
            continue
        if types is not ANY and not isinstance(obj[key], types):
            return (f"{where}{'.' if where else ''}{key} is {json_type(obj[key])}, "
                    f"not {type_names(types)}")
    return None


def record_mismatch(rec, kind):
    """Why rec is not a run record render() (kind "report") or gate() ("gate")
    can read, or None."""
    why = mismatch(rec, REPORT_RECORD if kind == "report" else GATE_RECORD, "")
    if why:
        return why
    for key, schema in ITEMS[kind].items():
        for i, item in enumerate(rec.get(key) or []):
            why = mismatch(item, schema, f"{key}[{i}]")
            if why:
                return why
            if kind != "report":
                continue
            if key == "rows" and item.get("rate"):
                why = mismatch(item["rate"], RATE, f"{key}[{i}].rate")
            if key == "runs":
                for j, crash in enumerate(item.get("reports") or []):
                    why = why or mismatch(crash, CRASH, f"{key}[{i}].reports[{j}]")
                    if not why and any(not isinstance(f, str) for f in crash.get("frames") or []):
                        why = f"{key}[{i}].reports[{j}].frames holds what is not a string"
            if why:
                return why
    if kind == "report":
        mode = rec["mode"]
        want = {"kind": (True, str), "repeat": (True, ANY)} if mode.get("kind") == "fixed" else \
            {"kind": (True, str), "miss": (True, NUM), "cap": (True, ANY)}
        why = mismatch(mode, want, "mode")
        if not why and "miss" in want and not 0 < mode["miss"] < 1:
            why = f"mode.miss is {mode['miss']}, not a probability"
        return why
    return None


def load(results, kind="report"):
    """run.json of a run directory, checked to be a run record that render()
    (kind "report") or gate() ("gate") can read; BadRun otherwise."""
    if not os.path.isdir(results):
        raise BadRun(f"{results}: {'not a directory' if os.path.exists(results) else 'no such directory'}")
    path = os.path.join(results, "run.json")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        raise BadRun(f"{path}: no such file (not a krepro run directory)") from None
    except IsADirectoryError:
        raise BadRun(f"{path}: is a directory, not a krepro run record") from None
    except UnicodeDecodeError:
        raise BadRun(f"{path}: not a krepro run record (not UTF-8 text)") from None
    except OSError as e:
        raise BadRun(f"{path}: cannot read it ({e.strerror or e})") from None
    if not text.strip():
        raise BadRun(f"{path}: not a krepro run record (empty file)")
    try:
        rec = json.loads(text)
    except json.JSONDecodeError as e:
        cut = "truncated JSON" if e.pos >= len(text.rstrip()) else "not JSON"
        raise BadRun(f"{path}: not a krepro run record ({cut}: {e.msg} at line {e.lineno} "
                     f"column {e.colno})") from None
    except RecursionError:
        raise BadRun(f"{path}: not a krepro run record (nested too deeply)") from None
    why = record_mismatch(rec, kind)
    if why:
        raise BadRun(f"{path}: not a krepro run record ({why})")
    return rec


def refuse(prog, err):
    print(f"{prog}: {err}", file=sys.stderr)
    return USAGE


def seconds_stats(runs):
    secs = [r["seconds"] for r in runs if isinstance(r.get("seconds"), (int, float))]
    if not secs:
        return "-"
    return f"{min(secs):.1f}/{statistics.median(secs):.1f}/{max(secs):.1f}"


def md_cell(s):
    s = (s or "").replace("|", "\\|").replace("\n", " ")
    return s if len(s) <= 160 else s[:157] + "..."


def excerpt(results, run, lines=40):
    """The kernel report behind a FAIL or OTHER (decoded to file:line where
    the runner could), or the reproducer's own lines."""
    rep = evidence_crash(run)
    if rep:
        decoded = read(os.path.join(results, run["report"])) if run.get("report") else ""
        if decoded:
            return rep, decoded.splitlines()
        console = read(os.path.join(results, run["log"]))
        if console and isinstance(rep.get("line"), int):
            return rep, report_lines(console, rep, lines)
    ktap = read(os.path.join(results, run["ktap"])).splitlines() if run.get("ktap") else []
    picked = [l for l in ktap if l.startswith("# ") and "FAIL" in l][:12]
    return None, picked or [l for l in ktap if l.startswith(("# ", "not ok"))][:12]


def status(rec, any_report=False):
    """Exit status. A run that did not finish decides nothing, whatever rows it
    holds: 130 (INTERRUPTED) when it was interrupted, else 125 (killed, or
    still running). A finished one: with --expect, 0 every row as expected,
    else 1; otherwise git bisect's: 1 a row reproduced its bug, 125 a row
    undecided, 0 all clean."""
    if rec.get("interrupted"):
        return INTERRUPTED
    if not rec.get("finished"):
        return UNDECIDED
    rows = rec["rows"]
    if rec.get("expect"):
        return 0 if rows and all(r.get("as_expected") for r in rows) else 1
    ds = [r["decision"] for r in rows]
    if "FAIL" in ds or (any_report and "OTHER" in ds):
        return 1
    if not rows or any(d != "PASS" for d in ds):
        return UNDECIDED
    return 0


def render(results, any_report=None, quiet=False, prog="krepro: report"):
    """summary.md, results.ktap and junit.xml from DIR/run.json, and the exit
    status (status()). A missing or bad run.json: one line on stderr, USAGE."""
    return guarded(prog, results, lambda: render_record(results, load(results), any_report, quiet))


def guarded(prog, results, work):
    """work()'s status; a BadRun, or a fault of the record that the record
    check let through, as one line on stderr and USAGE."""
    try:
        return work()
    except BadRun as e:
        return refuse(prog, e)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError) as e:
        return refuse(prog, f"{os.path.join(results, 'run.json')}: not a krepro run record "
                            f"(unexpected content: {type(e).__name__}: {e})")


def render_record(results, rec, any_report, quiet):
    if any_report is None:
        any_report = rec.get("any_report", False)
    runs, rows = rec["runs"], rec["rows"]
    by_row = {}
    for r in runs:
        by_row.setdefault((r["repro"], r["kernel"]), []).append(r)
    mode = rec["mode"]
    how = (f"fixed {mode['repeat']} runs a row" if mode["kind"] == "fixed" else
           f"sequential: target {stats.miss_bound(mode['miss'])}, at most {mode['cap']} runs a row")
    md = ["# krepro results", ""]
    partial = rec.get("interrupted") or not rec.get("finished")
    if partial:
        cut = "".join(f"; cut off: {c['repro']} on {c['kernel']}, run {c['run']}"
                      for c in rec.get("cut_off") or [])
        md += [f"**PARTIAL**: this run did not finish ({'interrupted' if rec.get('interrupted') else 'killed or still running'}); "
               f"{len(runs)} guest runs were recorded{cut}.", ""]
    via = rec.get("via") or "qemu"
    where = "" if via == "qemu" else f", each guest a LAVA job ({via})"
    if (rec.get("jobs") or 1) > 1:
        where += f", up to {rec['jobs']} guests at once"
    md += [f"{rec['arch']}, {rec.get('accel') or '?'}{where}; {how}; krepro {rec.get('krepro', '?')}; "
           f"started {rec['started']}.", "",
           "| reproducer | kernel | verdict | expected | runs | seconds min/median/max | FAIL rate source | evidence | log |",
           "|---|---|---|---|---|---|---|---|---|"]
    decided = {(r["repro"], r["kernel"]) for r in rows}
    for r in rows:
        rs = by_row.get((r["repro"], r["kernel"]), [])
        want = r.get("expected")
        mark = "-" if want is None else (f"{want} ok" if r.get("as_expected") else f"{want} **UNEXPECTED**")
        first = next((x for x in rs if x["outcome"] == r["decision"]), rs[-1] if rs else None)
        counts = ", ".join(f"{k} {v}" for k, v in r["counts"].items())
        src = r["rate"]["source"] if r.get("rate") else (r.get("unbounded") or "-")
        md.append(f"| {r['repro']} | {r['kernel']} | {r['cell']} | {mark} | {counts} | {seconds_stats(rs)} | "
                  f"{md_cell(src)} | {md_cell(first['evidence'] if first else '')} | "
                  f"{first['log'] if first else '-'} |")
    for key, rs in by_row.items():
        if key not in decided:
            md.append(f"| {key[0]} | {key[1]} | (not decided: run stopped) | - | {len(rs)} runs | "
                      f"{seconds_stats(rs)} | - | {md_cell(rs[-1]['evidence'])} | {rs[-1]['log']} |")
    for c in rec.get("cut_off") or []:
        md.append(f"| {c['repro']} | {c['kernel']} | (cut off: run {c['run']} was running when the run "
                  f"stopped) | - | - | - | - | - | {c['log']} |")
    secs = [r.get("seconds") or 0 for r in runs]
    if runs:
        md += ["", f"{len(runs)} guest runs, {sum(secs):.0f} s of guests"
               f" ({min(secs):.1f}-{max(secs):.1f} s each; "
               + ("QEMU start to exit" if via == "qemu" else "LAVA job start to end") + ").", ""]
    prep = rec.get("prepare") or []
    if prep:
        md += ["Disks prepared on the patched kernel: " + "; ".join(
            f"{p['repro']} {p['outcome']} in {p['seconds']:.1f} s ({p['log']})" for p in prep), ""]
    findings = []
    for r in rows:
        rs = by_row.get((r["repro"], r["kernel"]), [])
        for outcome in ("FAIL", "OTHER"):
            bad = [x for x in rs if x["outcome"] == outcome]
            if not bad:
                continue
            rep, lines = excerpt(results, bad[0])
            findings += [f"### {r['repro']} on {r['kernel']}: {outcome} in {len(bad)} of {len(rs)} runs", ""]
            if outcome == "FAIL":
                findings.append(f"- this bug ({bad[0].get('signature') or 'evidence'}): {bad[0]['evidence']}")
                findings.append(f"- expected fix: {r.get('fix') or 'unknown'}")
            else:
                findings.append(f"- a kernel report that is not this bug: {bad[0]['evidence']}"
                                + ("" if r.get("role") == "bug" else " (a finding on this kernel)"))
            if rep and rep.get("culprit"):
                findings.append(f"- report: {rep.get('title')} | culprit (syzbot-style title): {rep['culprit']}")
            if rep and rep.get("frames"):
                findings.append(f"- trace: {' < '.join(rep['frames'][:12])}")
            if rep:
                findings.append(f"- decoded: {bad[0].get('report')} ({bad[0].get('decoded', 0)} lines with file:line)"
                                if bad[0].get("decoded") else
                                f"- not decoded: {bad[0].get('decode_error') or 'no decoding recorded'}")
            findings.append(f"- log: {bad[0]['log']}")
            lava_res = bad[0].get("lava_results")
            if lava_res:
                # LAVA's own reading, beside krepro's (which decides).
                mine = {k: v for k, v in lava_res.items() if not k.startswith("lava/")}
                findings.append(f"- LAVA ({bad[0].get('via')}): job {lava_res.get('lava/job', '?')}, "
                                + ", ".join(f"{k} {v}" for k, v in mine.items())
                                + f"; its log: {bad[0].get('lava_log')}")
            findings.append("")
            if lines:
                findings += ["```"] + lines + ["```", ""]
    if findings:
        md += ["## Failures and other reports", ""] + findings
    code = status(rec, any_report)
    write(os.path.join(results, "summary.md"), "\n".join(md) + "\n")
    write(os.path.join(results, "results.ktap"), ktap(rec, by_row))
    write(os.path.join(results, "junit.xml"), junit(rec, by_row, results))
    if not quiet:
        print("\n".join(md))
        print(f"written: {results}/summary.md, results.ktap, junit.xml (from run.json)")
        if rec.get("expect"):
            print("matrix: " + ("every row as expected" if code == 0 else
                                "UNEXPECTED rows above" if not partial else
                                "PARTIAL run: not every row was decided"))
    if partial:
        # Said on every rendering, the runner's own after a Ctrl-C too.
        print(f"krepro: {results} holds a partial run", file=sys.stderr)
    return code


def row_ok(rec, r):
    if rec.get("expect") and r.get("expected"):
        return bool(r.get("as_expected"))
    return r["decision"] in ("PASS", "SKIP")


def ktap(rec, by_row):
    rows = rec["rows"]
    out = ["KTAP version 1", f"1..{len(rows)}"]
    for i, r in enumerate(rows, 1):
        for x in by_row.get((r["repro"], r["kernel"]), []):
            out.append(f"# {r['repro']}.{r['kernel']}.{x['run']}: {x['outcome']}: {x['evidence']} (log: {x['log']})")
        out.append(f"# {r['repro']}.{r['kernel']}: {r['cell']}" + (f" ({r['why']})" if r.get("why") else ""))
        if r.get("rate"):
            out.append(f"# FAIL rate source: {r['rate']['source']}")
        name = f"{r['repro']}.{r['kernel']}"
        skip = " # SKIP" if r["decision"] == "SKIP" else ""
        out.append(f"{'ok' if row_ok(rec, r) else 'not ok'} {i} {name} # {r['cell']}{skip}"
                   if not skip else f"ok {i} {name}{skip} {r['cell']}")
    return "\n".join(out) + "\n"


def junit(rec, by_row, results):
    rows = rec["rows"]
    fails = sum(1 for r in rows if not row_ok(rec, r) and r["decision"] in ("FAIL", "PASS"))
    errors = sum(1 for r in rows if not row_ok(rec, r) and r["decision"] not in ("FAIL", "PASS", "SKIP"))
    skips = sum(1 for r in rows if r["decision"] == "SKIP")
    total = sum((x.get("seconds") or 0) for x in rec["runs"])
    x = ['<?xml version="1.0" encoding="UTF-8"?>',
         f'<testsuite name="krepro" tests="{len(rows)}" failures="{fails}" errors="{errors}" '
         f'skipped="{skips}" time="{total:.1f}">']
    for r in rows:
        rs = by_row.get((r["repro"], r["kernel"]), [])
        t = sum((y.get("seconds") or 0) for y in rs)
        x.append(f'  <testcase classname={quoteattr(r["repro"])} name={quoteattr(r["kernel"])} time="{t:.1f}">')
        x.append("    <properties>")
        props = {"verdict": r["cell"], "decision": r["decision"], "runs": r["runs"],
                 "expected": r.get("expected") or "", "target_miss": r.get("target_miss")}
        if r.get("rate"):
            props.update(rate_low=f"{r['rate']['low']:.4f}", rate_source=r["rate"]["source"])
        if r.get("miss") is not None:
            props["miss"] = f"{r['miss']:.5f}"
        for k, v in props.items():
            x.append(f"      <property name={quoteattr(k)} value={quoteattr(str(v))}/>")
        x.append("    </properties>")
        first = next((y for y in rs if y["outcome"] == r["decision"]), rs[-1] if rs else None)
        msg = quoteattr(f"{r['cell']}: {first['evidence'] if first else ''} (log: {first['log'] if first else '-'})")
        if not row_ok(rec, r):
            tag = "failure" if r["decision"] in ("FAIL", "PASS") else "error"
            x.append(f"    <{tag} message={msg}/>")
        elif r["decision"] == "SKIP":
            x.append(f"    <skipped message={msg}/>")
        out = "\n".join(f"run {y['run']}: {y['outcome']} {y.get('seconds') or 0:.1f}s {y['evidence']} (log: {y['log']})"
                        for y in rs)
        x.append(f"    <system-out>{escape(out)}</system-out>")
        x.append("  </testcase>")
    x.append("</testsuite>")
    return "\n".join(x) + "\n"


def labels(rec):
    """The kernels a run names, in its order."""
    seen = {}
    for k in rec.get("kernels") or []:
        if k.get("label"):
            seen[k["label"]] = True
    for r in rec["rows"] + rec["runs"]:
        seen[r["kernel"]] = True
    return list(seen)


def gate(results, base, series, prog="krepro: gate"):
    """Compare BASE's and BASE+SERIES's row decisions. A FAIL or a kernel
    report that is not the bug (OTHER) on the series where BASE was clean is a
    regression. Exit 1 on a regression, 125 when a row is undecided, else 0.
    A bad run directory, or BASE or SERIES not a kernel of the run: one line
    on stderr, nothing written, USAGE."""
    return guarded(prog, results, lambda: gate_record(results, load(results, "gate"), base, series))


def gate_record(results, rec, base, series):
    have = labels(rec)
    missing = [k for k in (base, series) if k not in have]
    if missing:
        raise BadRun(f"{results}: no kernel {' or '.join(repr(k) for k in missing)} in this run "
                     f"(its kernels: {', '.join(have) if have else 'none recorded'})")
    if base == series:
        raise BadRun(f"BASE and SERIES are both {base!r}: give two kernels of the run")
    by = {}
    for r in rec["rows"]:
        by.setdefault(r["repro"], {})[r["kernel"]] = r
    groups = {"regression": [], "fix": [], "unchanged": [], "undecided": []}
    lines = []
    for repro in sorted(by):
        b, s = by[repro].get(base), by[repro].get(series)
        vb = b["decision"] if b else "MISSING"
        vs = s["decision"] if s else "MISSING"
        if vb == "PASS" and vs in ("FAIL", "OTHER"):
            kind = "regression"
        elif vb == "FAIL" and vs == "PASS":
            kind = "fix"
        elif vb == vs and vb in ("PASS", "FAIL", "SKIP"):
            kind = "unchanged"
        else:
            kind = "undecided"
        groups[kind].append(repro)
        ev = ""
        if kind != "unchanged" and s:
            run = next((x for x in rec["runs"] if x["repro"] == repro and x["kernel"] == series
                        and x["outcome"] == vs), None)
            if run:
                ev = f"{md_cell(run['evidence'])} ({run['log']})"
        lines.append(f"| {repro} | {b['cell'] if b else vb} | {s['cell'] if s else vs} | {kind} | {ev} |")
    md = [f"# krepro gate: {base} -> {series}", "",
          f"| reproducer | {base} | {series} | change | evidence on {series} |",
          "|---|---|---|---|---|"] + lines + [""]
    for kind, title in (("regression", "REGRESSIONS (PASS->FAIL, or a new kernel report (OTHER): the series broke these)"),
                        ("fix", "FIXES (FAIL->PASS: the series cures these)"),
                        ("unchanged", "unchanged"),
                        ("undecided", "undecided (BROKEN, SKIP, HANG, OTHER on BASE, or missing on one side)")):
        md.append(f"- {title}: {', '.join(groups[kind]) if groups[kind] else 'none'}")
    partial = rec.get("interrupted") or not rec.get("finished")
    if partial:
        md.append("- PARTIAL: the run did not finish")
    write(os.path.join(results, "gate.md"), "\n".join(md) + "\n")
    print("\n".join(md))
    print(f"written: {results}/gate.md")
    if groups["regression"]:
        return 1
    return UNDECIDED if groups["undecided"] or partial else 0


def write(path, text):
    try:
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
    except OSError as e:
        raise BadRun(f"{path}: cannot write it ({e.strerror or e})") from None
