"""Kernel reports in a console log, and the outcome of one guest run.

The report table is repro/lib/kernel-reports.tsv, shared with the in-guest
harness. A report found after the reproducer's start mark is this bug when it
matches one of the reproducer's declared signatures (kind, title pattern, a
function its crashing task's call trace must contain: TraceReader); any other
report is OTHER.

Beside its title a report gets its title by syzkaller's rules, the
"culprit" (syztitle.py): the row's stem, " in ", and the function its rule
finds, e.g. "WARNING: refcount bug in j1939_can_recv" where the title is
"refcount_t: addition on 0; use-after-free". When a log has several reports
the first one counts (syzkaller_title()).
"""
import functools
import os
import re

from .paths import TOP
from . import gated, syztitle
from .trace import FRAME, TraceReader, culprit_title, line_frames  # noqa: F401  (culprit_title: API)
from .protocol import EXIT_OUTCOME, INIT, INIT_STARTED, RESULT_RE, START_RE

PATTERNS_TSV = os.path.join(TOP, "repro", "lib", "kernel-reports.tsv")

# The printk timestamp, and the caller id ("[ T1234]", "[    C0]") a kernel
# with CONFIG_PRINTK_CALLER prints after it.
TIMESTAMP = re.compile(r"^\[\s*[0-9]+\.[0-9]+\](\[ *[TC][0-9]+\])?\s?")
OFFSETS = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+")
REPORT_END = re.compile(r"^(---\[ end |={20,}$|" + INIT + ")")
# How each of REPORT_END's alternatives starts: a line that starts
# otherwise (most) is no end line, and says so at once.
END_STARTS = ("---[ end ", "=" * 20, INIT)
TRACE_LINES = 150


class Table(list):
    """The report rows, and the rows of kind "-" as .ignore: regexes of
    lines that look like a report and are not one."""
    ignore = ()


def load_patterns(path=PATTERNS_TSV):
    """The table's report rows: (kind, compiled regex, title, culprit stem or
    None), a Table. Each row's culprit rule (column 5) is RULES[its regex's
    pattern]."""
    rows, ignore = Table(), []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) not in (3, 4, 5):
                raise ValueError(f"{path}:{n}: want kind<TAB>regex<TAB>title"
                                 "[<TAB>culprit stem[<TAB>culprit rule]]")
            kind, regex, title, stem, rule = cols + [None] * (5 - len(cols))
            compiled = re.compile("^(?:" + regex + ")")
            if kind == "-":
                ignore.append(compiled)
                continue
            rows.append((kind, compiled, title, stem))
            RULES[compiled.pattern] = rule
    rows.ignore = tuple(ignore)
    return rows


# A row's culprit rule, by its compiled regex's pattern (load_patterns()).
RULES = {}


def console_lines(text):
    """Console text as (line number, line without timestamp and CR)."""
    return numbered(text.splitlines())


# A timestamp inside a line: the console merged two messages ("login: [
# 16.3] INFO: ...", a line cut short and the next); the last message counts.
INNER_STAMP = re.compile(r"\[ *[0-9]+\.[0-9]{6}\](\[ *[TC][0-9]+\])? ?|^[^ ]+ login: ")


def last_message(line):
    """The last console message of a line the console merged (a program's
    output, then a kernel message with its timestamp); the line itself when
    it holds one message."""
    inner = None
    for inner in INNER_STAMP.finditer(line):
        pass
    return line[inner.end():] if inner else line


def numbered(raw_lines):
    for n, raw in enumerate(raw_lines, 1):
        yield n, last_message(TIMESTAMP.sub("", raw.rstrip("\r")))


# The kernel prints at most 1 KiB a line (printk's limit): the streaming
# reader keeps a line's first MAX_LINE characters, so a line of garbage with
# no end costs neither memory nor the frame regexes' time, which grows with
# the square of a line's length.
MAX_LINE = 8 << 10


def file_lines(f):
    """console_lines(f.read()) for a text file opened with universal newlines
    (open()'s default), holding one line at a time: the same lines, numbered
    alike (splitlines() also ends a line at a form feed and the like)."""
    def raw():
        while True:
            chunk = f.readline(MAX_LINE)
            if not chunk:
                return
            if len(chunk) == MAX_LINE and not chunk.endswith("\n"):
                while True:
                    rest = f.readline(MAX_LINE)
                    if not rest or rest.endswith("\n"):
                        break
            yield from chunk.splitlines()
    return numbered(raw())


def any_header(patterns):
    """One regex matching where some row of the table does, or None: most
    console lines are no report's header, and it says so at once."""
    src = "|".join(regex.pattern for _, regex, _, _ in patterns)
    if re.search(r"\\[1-9]|\(\?P=", src):
        return None   # a back reference would not survive the renumbered groups
    try:
        return re.compile(src)
    except re.error:
        return None


# A title's group references, \1..\9: Match.expand() parses its template
# again at each call, half of classify_line()'s time on a header.
GROUP_REF = re.compile(r"\\([1-9])(?![0-9])")


@functools.lru_cache(maxsize=1024)
def template(text):
    """text split at its group references (text, group, text, ...), or None
    when it has another escape (expand() leaves it to Match.expand())."""
    parts = GROUP_REF.split(text)
    return None if any("\\" in p for p in parts[::2]) else tuple(parts)


def expand(m, text):
    """m.expand(text), its template parsed once."""
    parts = template(text)
    if parts is None:
        return m.expand(text)
    out = [parts[0]]
    for i in range(1, len(parts), 2):
        out += (m.group(int(parts[i])) or "", parts[i + 1])
    return "".join(out)


def classify_line(line, patterns, quick=None):
    """The report header a console line is (kind, title, stem, culprit
    rule), or None."""
    line = syztitle.unbracketed(line.lstrip())
    if quick is not None and not quick.match(line):
        return None
    if any(regex.match(line) for regex in getattr(patterns, "ignore", ())):
        return None
    for kind, regex, title, stem in patterns:
        m = regex.match(line)
        if m:
            t, st = (OFFSETS.sub("", expand(m, x)).strip() if x else None for x in (title, stem))
            return kind, t, st, RULES.get(regex.pattern)
    return None


def classify(text, patterns=None):
    """Report header lines in a console log: dicts with kind, title, stem (the
    culprit stem, None for the title), line, text."""
    patterns = patterns or load_patterns()
    quick = any_header(patterns)
    found = []
    for n, line in console_lines(text):
        h = classify_line(line, patterns, quick)
        if h:
            found.append({"kind": h[0], "title": h[1], "stem": h[2], "line": n, "text": line})
    return found


def crashes(text, patterns=None):
    """Kernel reports as syzkaller counts them: the header lines of one report
    (a refcount_t line and its WARNING, FORTIFY then kernel BUG then Oops) are
    one crash, titled by its first header. A crash ends at an end-of-trace
    line, KASAN's closing rule, the next krepro line, or TRACE_LINES lines.
    Dicts: kind, title, line, headers [(kind, title)], frames (every
    function its lines name, in order: what a reader is shown), trace_frames
    (the reliable frames of the crashing task's call trace, TraceReader: what
    a signature's frame must match), and syzkaller's title of it
    (syztitle.py): culprit (the title, "STEM in FUNCTION"), stem (with
    KASAN's access type), access ("Read", "Write" or None), function (the
    culprit function or None) and corrupted (True when its stack has no
    culprit or is mixed with another's)."""
    return list(crashes_stream(console_lines(text), patterns))


def crashes_stream(lines, patterns=None):
    """crashes() of (line number, line) pairs (console_lines(), file_lines()),
    each crash yielded once it ends. A crash looks forward only, at most
    TRACE_LINES lines from its first header: what is kept is that one crash,
    however long the log."""
    yield from crashes_marked(((n, line, True) for n, line in lines), patterns)


def crashes_marked(lines, patterns=None, read=None):
    """crashes_stream() of (line number, line, hit) triples, hit false for a
    line that cannot be a report's header (logtext.marked_lines(): it has
    no needle of the table's): such a line is passed over unless a crash is
    open, and is never classified. read(number, line), when given, makes
    the line the classifier reads of the one given, only for the lines it
    reads."""
    patterns = patterns or load_patterns()
    quick = any_header(patterns)
    # cur: the open crash; kept: its lines (cur["_lines"], the same list).
    cur, kept = None, None
    for n, line, hit in lines:
        if cur is None and not hit:
            continue
        if read is not None:
            line = read(n, line)
        ended = cur is not None and line.startswith(END_STARTS) and REPORT_END.match(line)
        if cur is not None and (len(kept) >= TRACE_LINES or ended and kept):
            yield finish(cur, "line" if ended else None)
            cur, kept = None, None
            if not line.startswith("krepro"):
                continue
        h = classify_line(line, patterns, quick) if hit else None
        if h is not None:
            if cur is None:
                kept = []
                cur = {"kind": h[0], "title": h[1], "line": n, "headers": [], "_lines": kept, "_heads": []}
            cur["headers"].append([h[0], h[1]])
            cur["_heads"].append((len(kept), h[2], h[3]))
        if kept is not None:
            kept.append(line)
    if cur is not None:
        yield finish(cur, "log")


@functools.lru_cache(maxsize=1)
def frame_needles():
    """What a line with a frame holds (trace.FRAME's alternatives' needles),
    or None: most lines of a report have no frame, and say so at once.
    Worked out at first use: logtext imports this module."""
    from . import logtext
    return logtext.any_needles(FRAME.pattern)


def read_frames(lines, heads):
    """(frames, trace_frames) of a crash's lines, heads the indexes of its
    header lines: every function the lines name, in order, each once; and
    the crashing task's reliable frames (TraceReader). Read when the crash
    ends, each line's frames found once for both, and only while a reader
    still wants them."""
    needles = frame_needles()
    reader, found = TraceReader(), {}
    for i, line in enumerate(lines):
        frames = line_frames(line) if gated.has_needle(line, needles) else ()
        if reader.state != "after":
            reader.feed(line, i in heads, frames)
        for f in frames:
            found[f] = None
    return list(found), reader.frames


def finish(cur, end=None):
    """The crash's dict, titled by syzkaller's rules from the first header
    that names it (a stem other than "-"). end: what ended the crash, "log"
    (the log's end), "line" (an end line) or None (its length)."""
    lines, heads = cur.pop("_lines"), cur.pop("_heads")
    cur["frames"], cur["trace_frames"] = read_frames(lines, {i for i, _, _ in heads})
    named = next(((i, stem, rule) for i, stem, rule in heads if stem != "-"), None)
    if named is None or named[1] is None:
        title = cur["headers"][named and heads.index(named) or 0][1]
        cur.update(culprit=syztitle.sanitize(title), stem=None, access=None, function=None,
                   corrupted=False)
        return cur
    i, stem, rule = named
    cur.update(syztitle.title(stem, lines[i:], rule, end))
    return cur


def signature_matches(report, sig):
    """A crash is the bug when one of its headers has the signature's kind and
    title, and (if the signature names one) a reliable frame of the crashing
    task's call trace matches: not a "? " frame, not a KASAN allocation or
    free stack, not a lock lockdep lists as held, not another task's dump.
    (No signature looks in the allocation or free stacks: every declared
    bug's own function is in its crashing trace. A reproducer whose bug
    shows only there would add a signature field saying so.)"""
    if sig.kind is None or sig.is_hang:
        return False
    if not any(k == sig.kind and (not sig.title or re.search(sig.title, t))
               for k, t in report.get("headers") or [[report["kind"], report["title"]]]):
        return False
    if sig.frame:
        pat = re.compile(sig.frame)
        if not any(pat.fullmatch(f) for f in report.get("trace_frames", [])):
            return False
    return True


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


def first_label(sigs, test):
    """The label of the first declared signature that passes test, or None."""
    return next((s.label(i) for i, s in enumerate(sigs, 1) if test(s)), None)


class Outcome:
    """decide()'s result being made: called with the outcome, it completes
    and returns the record. A FAIL (or OTHER) keeps the cases its KTAP marks
    BROKEN in its evidence: the higher outcome must not hide them."""

    def __init__(self, res):
        self.res = res

    def __call__(self, outcome, evidence, signature=None, matched=None):
        if outcome in ("FAIL", "OTHER") and self.res["broken_cases"]:
            evidence += f" ; also BROKEN: {joined(self.res['broken_cases'])}"
        self.res.update(outcome=outcome, evidence=evidence, signature=signature,
                        matched_signature=matched)
        return self.res


def decide(console, meta, ktap="", timed_out=False, qemu_status=0):
    """One guest run's outcome: dict with outcome, evidence, signature (the
    report or own evidence that made it FAIL), reports, exit."""
    sigs = meta.signatures
    init_line, mark_line, exit_code = landmarks(console, meta.name)
    # The boot stub's "Booting the kernel." before init is this boot's own.
    reports = [r for r in crashes(console)
               if r["kind"] != "REBOOT" or init_line is not None and r["line"] > init_line]
    before = [r for r in reports if mark_line is None or r["line"] < mark_line]
    after = [r for r in reports if mark_line is not None and r["line"] >= mark_line]
    for r in after:
        # The first declared signature it matches names it in the record.
        r["matched"] = first_label(sigs, lambda s: signature_matches(r, s))
        r["bug"] = r["matched"] is not None
    out = Outcome({"exit": exit_code, "timed_out": timed_out, "reports": reports,
                   "init_line": init_line, "mark_line": mark_line,
                   "broken_cases": broken_cases(ktap, meta.cases)})

    hung = " ; guest hung" if timed_out else ""
    if init_line is None:
        if before:
            return out("BROKEN", f"kernel did not reach init: {before[0]['title']}")
        return out("BROKEN", "kernel did not reach init"
                   + (" (timed out)" if timed_out else f" (qemu exit {qemu_status})"))
    if before:
        return out("BROKEN", f"kernel report before the test started: {before[0]['title']}")
    bug = [r for r in after if r["bug"]]
    own = own_evidence(ktap, meta.cases) if exit_code == 1 else []
    others = [r for r in after if not r["bug"]]
    also = f" (+{len(others)} later report(s) not in its signature: {others[0]['title']})" if others else ""
    if bug:
        more = f" (+{len(bug) - 1} more)" if len(bug) > 1 else ""
        return out("FAIL", f"{bug[0]['title']}{more}{also}{hung}", "report: " + bug[0]["title"],
                   bug[0]["matched"])
    if own:
        return out("FAIL", joined(own) + also, "own evidence", "own evidence")
    if others:
        return out("OTHER", f"{others[0]['title']}"
                   + (f" (+{len(others) - 1} more)" if len(others) > 1 else "") + hung)
    if timed_out:
        if meta.hang_is_bug:
            return out("FAIL", "hang: no result within the time limit", "hang",
                       first_label(sigs, lambda s: s.is_hang))
        return out("HANG", "no result within the time limit")
    if exit_code is None:
        return out("BROKEN", f"guest ended without a result (qemu exit {qemu_status})")
    return by_exit(out, ktap, exit_code)


def by_exit(out, ktap, exit_code):
    """A run with no report after its mark that ended in time: its exit."""
    outcome = EXIT_OUTCOME.get(exit_code, "BROKEN")
    if outcome == "FAIL":
        # The harness failed the run on taint with no report on the console.
        why = ktap_lines(ktap, "REPORT:") + ktap_lines(ktap, "FAIL:")
        return out("OTHER", " | ".join(why[:2]) or "exit 1 without the reproducer's evidence")
    tag = {"PASS": "PASS:", "BROKEN": "BROKEN", "SKIP": "SKIP"}[outcome]
    return out(outcome, " | ".join(ktap_lines(ktap, tag)[:3]) or f"exit {exit_code}")


def syzkaller_title(text, patterns=None):
    """The title syzkaller gives the log: its first crash's, or None."""
    cs = crashes(text, patterns)
    return cs[0]["culprit"] if cs else None
