"""What a run's verdict quotes as its evidence: its KTAP lines (the
reproducer's own FAILs, its BROKEN cases), bounded; the console's landmarks
(init started, the start mark, the exit code); the crash a run names."""
import re

from .console_lines import console_lines
from ..protocol import INIT_STARTED, RESULT_RE, START_RE

# Evidence kept of a run: its lines whole (a case's line is at most the
# harness's 2 KiB message), bounded for a KTAP stream that is untrusted.
EVIDENCE_LINES = 16
EVIDENCE_CHARS = 16 << 10


def joined(lines):
    """Evidence lines as one string, " | " between them, bounded."""
    text = " | ".join(lines[:EVIDENCE_LINES])
    more = len(lines) - EVIDENCE_LINES
    text = text[:EVIDENCE_CHARS] + (" …" if len(text) > EVIDENCE_CHARS else "")
    return text + (f" (+{more} more lines)" if more > 0 else "")


BROKEN_POINT = re.compile(r"^not ok [0-9]+ (\S+) # BROKEN\b")


def broken_cases(ktap, cases):
    """The cases a run's KTAP marks BROKEN, each with its first BROKEN line:
    ["punch: BROKEN: xfs.c:12: ..."]. A FAIL outranks BROKEN in the exit
    code; these keep the cases it would hide."""
    names = []
    for line in ktap.splitlines():
        m = BROKEN_POINT.match(line)
        if m and (m.group(1) in cases or not cases) and m.group(1) not in names:
            names.append(m.group(1))
    out = []
    for name in names[:EVIDENCE_LINES]:
        why = next((l[2:] for l in ktap.splitlines()
                    if l.startswith(f"# {name}: BROKEN:")), f"{name}: BROKEN")
        out.append(why)
    return out


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


# A race's counts (repro/lib/race.c): "# race: ... ; W window hits (...)",
# printed when the race ends, by its bound or by its evidence ("stopped early").
RACE_HITS = re.compile(r"^# race: .*?(, stopped early)?; ([0-9]{1,12}) window hits \(")


def window_hits(ktap):
    """How often a race run reached its window: up to its evidence (the
    counts of a race stopped early), else by its last counts line; None for
    a run that printed none."""
    hits = None
    for line in ktap.splitlines():
        m = RACE_HITS.match(line)
        if m and m.group(1):
            return int(m.group(2))
        if m:
            hits = int(m.group(2))
    return hits


def ktap_lines(ktap, tag):
    return [l[2:] for l in ktap.splitlines()
            if l.startswith("# ") and tag in l and not l.startswith("# hint:")]


def evidence_crash(run):
    """The crash a FAIL or OTHER run names in its evidence, or None."""
    return next((r for r in run.get("reports") or []
                 if r.get("title") and r["title"] in (run.get("evidence") or "")), None)


def landmarks(console, repro):
    """The line init started on, the line of the reproducer's start mark, and
    the exit code init reported for it (each None when absent)."""
    init_line = mark_line = exit_code = None
    for n, l in console_lines(console):
        if init_line is None and l.startswith(INIT_STARTED):
            init_line = n
        m = START_RE.match(l)
        if mark_line is None and m and m.group(3) == repro and (m.group(2) or m.group(4)):
            mark_line = n
        m = RESULT_RE.match(l)
        if m and m.group(1) == repro:
            exit_code = int(m.group(2))
    return init_line, mark_line, exit_code
