#!/usr/bin/env python3
"""krepro host side: console classification, verdicts and run reports.

  krepro.py classify CONSOLE             print the kernel reports found, one per line
  krepro.py verdict RUNDIR KEY=VALUE...   decide one guest run's verdict (writes verdict.json)
  krepro.py report RESULTS [--expect]    matrix as Markdown, KTAP and JUnit XML
  krepro.py gate RESULTS BASE SERIES      what changed from kernel BASE to SERIES

The verdict rules are DESIGN.md's: a kernel report after the reproducer's
start mark is FAIL with the report's title; one before it is BROKEN; a guest
that does not finish in time is FAIL (hang); a kernel that never reaches init
is BROKEN; otherwise the reproducer's exit code decides.
"""
import json
import os
import re
import statistics
import sys
from xml.sax.saxutils import escape, quoteattr

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PATTERNS_TSV = os.path.join(TOP, "repro", "lib", "kernel-reports.tsv")

TIMESTAMP = re.compile(r"^\[\s*[0-9]+\.[0-9]+\]\s?")
OFFSETS = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+")
INIT_STARTED = re.compile(r"^krepro-init: started")
START_MARK = re.compile(r"^krepro(-init)?: (running )?([A-Za-z0-9_.-]+)(: start)?$")
RESULT = re.compile(r"^krepro-init: result name=([A-Za-z0-9_.-]+) exit=([0-9]+)")

VERDICTS = ("PASS", "FAIL", "BROKEN", "SKIP")
EXIT_VERDICT = {0: "PASS", 1: "FAIL", 2: "BROKEN", 4: "SKIP"}


def load_patterns(path=PATTERNS_TSV):
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) != 3:
                raise ValueError(f"{path}:{n}: want kind<TAB>regex<TAB>title")
            kind, regex, title = cols
            rows.append((kind, re.compile("^(?:" + regex + ")"), title))
    return rows


def console_lines(text):
    """Console text as (line number, line without timestamp and CR)."""
    for n, raw in enumerate(text.splitlines(), 1):
        yield n, TIMESTAMP.sub("", raw.rstrip("\r"))


def classify(text, patterns=None):
    """Kernel reports in a console log: dicts with kind, title, line, text."""
    patterns = patterns or load_patterns()
    found = []
    for n, line in console_lines(text):
        for kind, regex, title in patterns:
            m = regex.match(line)
            if m:
                t = m.expand(title)
                t = OFFSETS.sub("", t).strip()
                found.append({"kind": kind, "title": t, "line": n, "text": line})
                break
    return found


def decide(console, repro, timed_out=False, qemu_status=0, ktap=""):
    """One guest run's verdict: dict with verdict, evidence, reports."""
    lines = list(console_lines(console))
    reports = classify(console)
    init_line = next((n for n, l in lines if INIT_STARTED.match(l)), None)
    mark_line = None
    for n, l in lines:
        m = START_MARK.match(l)
        if m and m.group(3) == repro and (m.group(2) or m.group(4)):
            mark_line = n
            break
    exit_code = None
    for _, l in lines:
        m = RESULT.match(l)
        if m and m.group(1) == repro:
            exit_code = int(m.group(2))
    before = [r for r in reports if mark_line is None or r["line"] < mark_line]
    after = [r for r in reports if mark_line is not None and r["line"] >= mark_line]
    res = {"repro": repro, "exit": exit_code, "timed_out": timed_out,
           "reports": reports, "init_line": init_line, "mark_line": mark_line}

    def out(verdict, evidence):
        res.update(verdict=verdict, evidence=evidence)
        return res

    if init_line is None:
        if before:
            return out("BROKEN", f"kernel did not reach init: {before[0]['title']}")
        return out("BROKEN", "kernel did not reach init"
                   + (" (timed out)" if timed_out else f" (qemu exit {qemu_status})"))
    if before:
        return out("BROKEN", f"kernel report before the test started: {before[0]['title']}")
    if after:
        more = f" (+{len(after) - 1} more)" if len(after) > 1 else ""
        return out("FAIL", f"{after[0]['title']}{more}" + (" ; guest hung" if timed_out else ""))
    if timed_out:
        return out("FAIL", "hang: no result within the time limit")
    if exit_code is None:
        return out("BROKEN", f"guest ended without a result (qemu exit {qemu_status})")
    verdict = EXIT_VERDICT.get(exit_code, "BROKEN")
    evidence = ktap_evidence(ktap, verdict) or f"exit {exit_code}"
    return out(verdict, evidence)


def ktap_evidence(ktap, verdict):
    """The reproducer's own evidence lines for a verdict, joined."""
    tag = {"FAIL": "FAIL:", "BROKEN": "BROKEN:", "SKIP": "SKIP", "PASS": "PASS:"}[verdict]
    picked = []
    for line in ktap.splitlines():
        if line.startswith("# ") and tag in line and not line.startswith("# hint:"):
            picked.append(line[2:])
    return " | ".join(picked[:3])


RUN_FIELDS = {"repro": str, "kernel": str, "kernel_image": str, "run": int, "accel": str,
              "timeout": int, "timed_out": lambda v: v == "true", "qemu_status": int,
              "seconds": lambda v: round(float(v), 1), "broken": str, "fix": str}


def cmd_verdict(rundir, fields):
    run = {}
    for kv in fields:
        k, _, v = kv.partition("=")
        if k not in RUN_FIELDS:
            raise SystemExit(f"krepro.py verdict: unknown field {k}")
        run[k] = RUN_FIELDS[k](v)
    console = read(os.path.join(rundir, "console.log"))
    ktap = read(os.path.join(rundir, "ktap.txt"))
    if "broken" in run:
        # Not booted: the host could not set the run up (e.g. its disk).
        res = {"verdict": "BROKEN", "evidence": run.pop("broken"), "reports": [], "exit": None}
    else:
        res = decide(console, run["repro"], run.get("timed_out", False),
                     run.get("qemu_status", 0), ktap)
    run.update(verdict=res["verdict"], evidence=res["evidence"],
               reports=res["reports"][:20], exit=res["exit"])
    with open(os.path.join(rundir, "verdict.json"), "w") as f:
        json.dump(run, f, indent=1)
    print(f"{res['verdict']}\t{res['evidence']}")
    return 0


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return ""


RUN_DIR = re.compile(r"^[A-Za-z0-9_-]+\.[^/]+\.[0-9]+$")


def load_runs(results, missing=None):
    """The runs with a verdict; what a run directory lacks goes to `missing`."""
    runs = []
    missing = [] if missing is None else missing
    for d in sorted(os.listdir(results)):
        path = os.path.join(results, d)
        if not os.path.isdir(path) or not RUN_DIR.match(d):
            continue
        p = os.path.join(path, "verdict.json")
        if not os.path.isfile(p):
            missing.append(f"{d}: no verdict.json (the run was interrupted?): not in the matrix")
            continue
        try:
            with open(p) as f:
                r = json.load(f)
            r["repro"], r["kernel"], r["verdict"]
        except (ValueError, KeyError) as e:
            missing.append(f"{d}: verdict.json unreadable ({e}): not in the matrix")
            continue
        r.setdefault("run", 0)
        r.setdefault("evidence", "")
        r["dir"] = d
        for f in ("console.log", "ktap.txt"):
            if not os.path.isfile(os.path.join(path, f)):
                missing.append(f"{d}: no {f}")
        runs.append(r)
    return runs


def seconds_stats(rs):
    """Time to verdict (QEMU start to exit) of the runs that have it: min/median/max."""
    secs = [r["seconds"] for r in rs if isinstance(r.get("seconds"), (int, float))]
    if not secs:
        return "-"
    return f"{min(secs):.1f}/{statistics.median(secs):.1f}/{max(secs):.1f}"


def report_excerpt(results, run, lines=12):
    """First lines of the kernel report behind a FAIL, or the reproducer's own
    evidence when it was the program that said FAIL."""
    console = read(os.path.join(results, run["dir"], "console.log")).splitlines()
    reps = run.get("reports") or []
    after = [r for r in reps if r.get("title") and run["evidence"].startswith(r["title"])]
    if after and console:
        start = after[0]["line"] - 1
        return after[0]["title"], console[start:start + lines]
    ktap = read(os.path.join(results, run["dir"], "ktap.txt")).splitlines()
    picked = [l for l in ktap if l.startswith("# ") and "FAIL" in l][:lines]
    if not picked:
        picked = [l for l in ktap if l.startswith(("# ", "not ok"))][:lines]
    return run["evidence"], picked


def described_fix(repro):
    """The fix a reproducer names (`--describe`), for runs that did not record
    it: from the build next to this script, marked as such."""
    import subprocess
    exe = os.path.join(os.environ.get("KREPRO_BUILD", os.path.join(TOP, "build")), "repro", repro)
    try:
        out = subprocess.run([exe, "--describe"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    for line in out.splitlines():
        if line.startswith("fix=") and line[4:]:
            return line[4:] + " (from the reproducer as built now; the run did not record it)"
    return ""


def failure_sections(results, rows):
    """Markdown: per row with a FAIL, the report title, its first lines and the fix."""
    out = []
    for (repro, kernel), rs in sorted(rows.items()):
        fails = [r for r in rs if r["verdict"] == "FAIL"]
        if not fails:
            continue
        first = fails[0]
        title, excerpt = report_excerpt(results, first)
        fix = first.get("fix") or described_fix(repro)
        out += [f"### {repro} on {kernel}: FAIL in {len(fails)} of {len(rs)} runs", "",
                f"- report: {title}",
                f"- expected fix: {fix or 'unknown (not recorded in this run)'}",
                f"- log: {first['dir']}/console.log", ""]
        if excerpt:
            out += ["```"] + excerpt + ["```", ""]
    return out


def expected(run):
    """The verdict the matrix expects: FAIL on unpatched, PASS on patched."""
    return {"unpatched": "FAIL", "patched": "PASS"}.get(run["kernel"])


def cmd_report(results, expect):
    missing = []
    runs = load_runs(results, missing)
    if not runs:
        print(f"krepro: no runs under {results}", file=sys.stderr)
        for m in missing:
            print(f"krepro: {m}", file=sys.stderr)
        return 2
    rows = {}
    for r in runs:
        rows.setdefault((r["repro"], r["kernel"]), []).append(r)
    ok_all = True
    md = ["# krepro results", "",
          "| reproducer | kernel | runs | verdicts | seconds min/median/max | expected | evidence | log |",
          "|---|---|---|---|---|---|---|---|"]
    for (repro, kernel), rs in sorted(rows.items()):
        counts = {v: sum(1 for r in rs if r["verdict"] == v) for v in VERDICTS}
        want = expected(rs[0])
        good = want is not None and counts.get(want, 0) == len(rs)
        if expect and not good:
            ok_all = False
        first = next((r for r in rs if r["verdict"] != want), rs[0])
        # FAIL, PASS and BROKEN always (the rates); SKIP when there is one.
        summary = ", ".join(f"{v} {counts[v]}" for v in ("FAIL", "PASS", "BROKEN", "SKIP")
                            if counts[v] or v != "SKIP")
        mark = "" if want is None else (" ok" if good else " **UNEXPECTED**")
        md.append(f"| {repro} | {kernel} | {len(rs)} | {summary} | {seconds_stats(rs)} | "
                  f"{want or '-'}{mark} | {md_cell(first['evidence'])} | {first['dir']}/console.log |")
    secs = [r.get("seconds", 0) for r in runs]
    md += ["", f"{len(runs)} guest runs, {sum(secs):.0f} s in all"
           f" ({min(secs):.1f}-{max(secs):.1f} s each). Seconds: time to verdict,"
           " QEMU start to exit.", ""]
    fail_md = failure_sections(results, rows)
    if fail_md:
        md += ["## Failures", ""] + fail_md
    if missing:
        md += ["## Missing from this directory", ""] + [f"- {m}" for m in missing] + [""]
    write(os.path.join(results, "summary.md"), "\n".join(md))

    ktap = ["KTAP version 1", f"1..{len(runs)}"]
    for i, r in enumerate(runs, 1):
        name = f"{r['repro']}.{r['kernel']}.{r['run']}"
        okw = "ok" if r["verdict"] in ("PASS", "SKIP") else "not ok"
        if expect and expected(r):
            okw = "ok" if r["verdict"] == expected(r) else "not ok"
        ktap.append(f"# {name}: {r['verdict']}: {r['evidence']} (log: {r['dir']}/console.log)")
        ktap.append(f"{okw} {i} {name}" + (" # SKIP" if r["verdict"] == "SKIP" else ""))
    write(os.path.join(results, "results.ktap"), "\n".join(ktap) + "\n")

    fails = sum(1 for r in runs if r["verdict"] == "FAIL")
    errors = sum(1 for r in runs if r["verdict"] == "BROKEN")
    skips = sum(1 for r in runs if r["verdict"] == "SKIP")
    x = ['<?xml version="1.0" encoding="UTF-8"?>',
         f'<testsuite name="krepro" tests="{len(runs)}" failures="{fails}" '
         f'errors="{errors}" skipped="{skips}" time="{sum(secs):.1f}">']
    for r in runs:
        name = f"{r['kernel']}.{r['run']}"
        x.append(f'  <testcase classname={quoteattr(r["repro"])} name={quoteattr(name)} '
                 f'time="{r.get("seconds", 0):.1f}">')
        msg = quoteattr(f"{r['evidence']} (log: {r['dir']}/console.log)")
        if r["verdict"] == "FAIL":
            x.append(f'    <failure message={msg}/>')
        elif r["verdict"] == "BROKEN":
            x.append(f'    <error message={msg}/>')
        elif r["verdict"] == "SKIP":
            x.append(f'    <skipped message={msg}/>')
        x.append(f'    <system-out>{escape(read(os.path.join(results, r["dir"], "ktap.txt")))}'
                 '</system-out>')
        x.append("  </testcase>")
    x.append("</testsuite>")
    write(os.path.join(results, "junit.xml"), "\n".join(x) + "\n")
    print("\n".join(md))
    print(f"written: {results}/summary.md, results.ktap, junit.xml")
    if missing:
        print(f"krepro: {results} is incomplete: {len(missing)} item(s) missing, listed above",
              file=sys.stderr)
    if expect:
        print("matrix: " + ("every row as expected" if ok_all else "UNEXPECTED rows above"))
        return 0 if ok_all else 1
    return bisect_status(r["verdict"] for r in runs)


def row_verdict(rs):
    """One verdict for a reproducer on a kernel over its runs: any FAIL is FAIL
    (a racy bug seen once is there); otherwise all PASS is PASS; else the
    undecided verdict seen."""
    vs = [r["verdict"] for r in rs]
    if "FAIL" in vs:
        return "FAIL"
    if vs and all(v == "PASS" for v in vs):
        return "PASS"
    return "BROKEN" if "BROKEN" in vs else "SKIP"


def cmd_gate(results, base, series):
    """Compare verdicts on kernel `base` and `series`: regressions (PASS->FAIL),
    fixes (FAIL->PASS), unchanged, undecided. Exit 1 on any regression, else
    125 when a row could not be decided, else 0."""
    missing = []
    runs = load_runs(results, missing)
    by = {}
    for r in runs:
        by.setdefault(r["repro"], {}).setdefault(r["kernel"], []).append(r)
    groups = {"regression": [], "fix": [], "unchanged": [], "undecided": []}
    lines = []
    for repro in sorted(by):
        b = by[repro].get(base, [])
        s = by[repro].get(series, [])
        vb = row_verdict(b) if b else "MISSING"
        vs = row_verdict(s) if s else "MISSING"
        if vb == "PASS" and vs == "FAIL":
            kind = "regression"
        elif vb == "FAIL" and vs == "PASS":
            kind = "fix"
        elif vb == vs and vb in ("PASS", "FAIL", "SKIP"):
            kind = "unchanged"
        else:
            kind = "undecided"
        ev = next((r for r in s if r["verdict"] == vs), None) if kind != "unchanged" else None
        groups[kind].append(repro)
        lines.append(f"| {repro} | {vb} | {vs} | {kind} | "
                     f"{md_cell(ev['evidence']) + ' (' + ev['dir'] + '/console.log)' if ev else ''} |")
    md = [f"# krepro gate: {base} -> {series}", "",
          f"| reproducer | {base} | {series} | change | evidence on {series} |",
          "|---|---|---|---|---|"] + lines + [""]
    for kind, title in (("regression", "REGRESSIONS (PASS->FAIL: the series broke these)"),
                        ("fix", "FIXES (FAIL->PASS: the series cures these)"),
                        ("unchanged", "unchanged"),
                        ("undecided", "undecided (BROKEN, SKIP or missing on one side)")):
        md.append(f"- {title}: {', '.join(groups[kind]) if groups[kind] else 'none'}")
    for m in missing:
        md.append(f"- missing: {m}")
    write(os.path.join(results, "gate.md"), "\n".join(md) + "\n")
    print("\n".join(md))
    print(f"written: {results}/gate.md")
    if groups["regression"]:
        return 1
    return 125 if groups["undecided"] else 0


def bisect_status(verdicts):
    """git bisect run: 0 all passed, 1 any failed, 125 undecided."""
    verdicts = list(verdicts)
    if "FAIL" in verdicts:
        return 1
    if any(v != "PASS" for v in verdicts):
        return 125
    return 0


def md_cell(s):
    s = s.replace("|", "\\|").replace("\n", " ")
    return s if len(s) <= 160 else s[:157] + "..."


def write(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def main(argv):
    if len(argv) >= 2 and argv[0] == "classify":
        for r in classify(read(argv[1])):
            print(f"{r['line']}\t{r['kind']}\t{r['title']}")
        return 0
    if len(argv) >= 2 and argv[0] == "verdict":
        return cmd_verdict(argv[1], argv[2:])
    if len(argv) >= 2 and argv[0] == "report":
        return cmd_report(argv[1], "--expect" in argv[2:])
    if len(argv) == 4 and argv[0] == "gate":
        return cmd_gate(argv[1], argv[2], argv[3])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
