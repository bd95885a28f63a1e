"""Kernel reports in a console log, and the outcome of one guest run.

The report table is repro/lib/kernel-reports.tsv, shared with the in-guest
harness. A report found after the reproducer's start mark is this bug when it
matches one of the reproducer's declared signatures (kind, title pattern, a
function its trace must contain); any other report is OTHER.
"""
import os
import re

from .paths import TOP

PATTERNS_TSV = os.path.join(TOP, "repro", "lib", "kernel-reports.tsv")

TIMESTAMP = re.compile(r"^\[\s*[0-9]+\.[0-9]+\]\s?")
OFFSETS = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+")
INIT_STARTED = re.compile(r"^krepro-init: started")
START_MARK = re.compile(r"^krepro(-init)?: (running )?([A-Za-z0-9_.-]+)(: start)?$")
RESULT = re.compile(r"^krepro-init: result name=([A-Za-z0-9_.-]+) exit=([0-9]+)")
# Frames: x86 "func+0x1c/0x40", "RIP: 0010:func+0x..."; ARM "[<c0..>] (func) from".
FRAME = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\+0x[0-9a-f]+/0x[0-9a-f]+")
ARM_FRAME = re.compile(r"\] \(([A-Za-z_][A-Za-z0-9_.]*)\)")
REPORT_END = re.compile(r"^(---\[ end |={20,}$|krepro-init: )")
TRACE_LINES = 150

OUTCOMES = ("PASS", "FAIL", "OTHER", "HANG", "BROKEN", "SKIP")
EXIT_OUTCOME = {0: "PASS", 1: "FAIL", 2: "BROKEN", 4: "SKIP"}


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


def kinds():
    return {k for k, _, _ in load_patterns()}


def console_lines(text):
    """Console text as (line number, line without timestamp and CR)."""
    for n, raw in enumerate(text.splitlines(), 1):
        yield n, TIMESTAMP.sub("", raw.rstrip("\r"))


def classify(text, patterns=None):
    """Report header lines in a console log: dicts with kind, title, line, text."""
    patterns = patterns or load_patterns()
    found = []
    for n, line in console_lines(text):
        for kind, regex, title in patterns:
            m = regex.match(line)
            if m:
                t = OFFSETS.sub("", m.expand(title)).strip()
                found.append({"kind": kind, "title": t, "line": n, "text": line})
                break
    return found


def crashes(text, patterns=None):
    """Kernel reports as syzkaller counts them: the header lines of one report
    (a refcount_t line and its WARNING, FORTIFY then kernel BUG then Oops) are
    one crash, titled by its first header. A crash ends at an end-of-trace
    line, KASAN's closing rule, the next krepro line, or TRACE_LINES lines.
    Dicts: kind, title, line, headers [(kind, title)], frames (its trace's
    functions, in order)."""
    patterns = patterns or load_patterns()
    lines = list(console_lines(text))
    heads = {h["line"]: h for h in classify(text, patterns)}
    out, cur, start = [], None, 0
    for i, (n, line) in enumerate(lines):
        if cur is not None and (i - start >= TRACE_LINES or
                                (REPORT_END.match(line) and i > start)):
            cur = None
            if not line.startswith("krepro"):
                continue
        h = heads.get(n)
        if h is not None:
            if cur is None:
                cur = {"kind": h["kind"], "title": h["title"], "line": n, "headers": [], "frames": []}
                out.append(cur)
                start = i
            cur["headers"].append([h["kind"], h["title"]])
        if cur is not None:
            for f in FRAME.findall(line) + ARM_FRAME.findall(line):
                if f not in cur["frames"]:
                    cur["frames"].append(f)
    return out


def signature_matches(report, sig):
    """A crash is the bug when one of its headers has the signature's kind and
    title, and (if the signature names one) a function of its trace matches."""
    if sig.get("kind") in (None, "HANG"):
        return False
    if not any(k == sig["kind"] and (not sig.get("title") or re.search(sig["title"], t))
               for k, t in report.get("headers") or [[report["kind"], report["title"]]]):
        return False
    if sig.get("frame"):
        pat = re.compile(sig["frame"])
        if not any(pat.fullmatch(f) for f in report.get("frames", [])):
            return False
    return True


def bug_reported(console, meta):
    """Has the console, so far, a report after the start mark that matches
    the reproducer's signatures? (The guest may then be stopped early.)"""
    sigs = meta.get("signatures") or []
    if not sigs:
        return False
    res = decide(console, meta)
    return res["outcome"] == "FAIL" and (res["signature"] or "").startswith("report: ")


def hang_is_bug(meta):
    return any(s.get("kind") == "HANG" for s in meta.get("signatures") or [])


def own_evidence(ktap, cases):
    """The reproducer's own FAIL lines ("# <case>: FAIL: ..."), not the
    harness's summary of kernel reports or taint."""
    out = []
    for line in ktap.splitlines():
        if not line.startswith("# ") or line.startswith("# hint:"):
            continue
        case, sep, rest = line[2:].partition(": FAIL:")
        if sep and (case in cases or not cases):
            out.append(line[2:])
    return out


def ktap_lines(ktap, tag):
    return [l[2:] for l in ktap.splitlines()
            if l.startswith("# ") and tag in l and not l.startswith("# hint:")]


def decide(console, meta, ktap="", timed_out=False, qemu_status=0):
    """One guest run's outcome: dict with outcome, evidence, signature (the
    report or own evidence that made it FAIL), reports, exit."""
    repro = meta["name"]
    sigs = meta.get("signatures") or []
    lines = list(console_lines(console))
    reports = crashes(console)
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
    for r in after:
        r["bug"] = any(signature_matches(r, s) for s in sigs)
    res = {"exit": exit_code, "timed_out": timed_out, "reports": reports,
           "init_line": init_line, "mark_line": mark_line, "signature": None}

    def out(outcome, evidence, signature=None):
        res.update(outcome=outcome, evidence=evidence, signature=signature)
        return res

    hung = " ; guest hung" if timed_out else ""
    if init_line is None:
        if before:
            return out("BROKEN", f"kernel did not reach init: {before[0]['title']}")
        return out("BROKEN", "kernel did not reach init"
                   + (" (timed out)" if timed_out else f" (qemu exit {qemu_status})"))
    if before:
        return out("BROKEN", f"kernel report before the test started: {before[0]['title']}")
    bug = [r for r in after if r["bug"]]
    own = own_evidence(ktap, meta.get("cases") or []) if exit_code == 1 else []
    others = [r for r in after if not r["bug"]]
    also = f" (+{len(others)} later report(s) not in its signature: {others[0]['title']})" if others else ""
    if bug:
        more = f" (+{len(bug) - 1} more)" if len(bug) > 1 else ""
        return out("FAIL", f"{bug[0]['title']}{more}{also}{hung}", "report: " + bug[0]["title"])
    if own:
        return out("FAIL", " | ".join(own[:3]) + also, "own evidence")
    if others:
        return out("OTHER", f"{others[0]['title']}"
                   + (f" (+{len(others) - 1} more)" if len(others) > 1 else "") + hung)
    if timed_out:
        if hang_is_bug(meta):
            return out("FAIL", "hang: no result within the time limit", "hang")
        return out("HANG", "no result within the time limit")
    if exit_code is None:
        return out("BROKEN", f"guest ended without a result (qemu exit {qemu_status})")
    outcome = EXIT_OUTCOME.get(exit_code, "BROKEN")
    if outcome == "FAIL":
        # The harness failed the run on taint with no report on the console.
        why = ktap_lines(ktap, "REPORT:") + ktap_lines(ktap, "FAIL:")
        return out("OTHER", " | ".join(why[:2]) or "exit 1 without the reproducer's evidence")
    tag = {"PASS": "PASS:", "BROKEN": "BROKEN", "SKIP": "SKIP"}[outcome]
    return out(outcome, " | ".join(ktap_lines(ktap, tag)[:3]) or f"exit {exit_code}")
