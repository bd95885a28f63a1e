"""Kernel reports in a console log, and the outcome of one guest run.

The report table is repro/lib/kernel-reports.tsv, shared with the in-guest
harness. A report found after the reproducer's start mark is this bug when it
matches one of the reproducer's declared signatures (kind, title pattern, a
function its crashing task's call trace must contain: TraceReader); any other
report is OTHER.

Beside its title a report gets its title by syzkaller's rules, the
"culprit" (reports/syztitle.py): the row's stem, " in ", and the function its rule
finds, e.g. "WARNING: refcount bug in j1939_can_recv" where the title is
"refcount_t: addition on 0; use-after-free". When a log has several reports
the first one counts (syzkaller_title()).
"""
import functools
import itertools
import os
import re

from ..paths import TOP
from . import syztitle
from .console_lines import console_lines
from .needles import any_needles, needles_of
from .trace import FRAME, TraceReader, line_frames
from ..protocol import INIT

PATTERNS_TSV = os.path.join(TOP, "repro", "lib", "kernel-reports.tsv")

OFFSETS = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+")
# A rule of "=" closes KASAN's, KCSAN's and UBSAN's reports; SLUB's banner
# (77 of them, slab_bug()) only ever opens one, also inside an older KASan
# report, so it ends nothing.
REPORT_END = re.compile(r"^(---\[ end |(?!={77}$)={20,}$|" + INIT + ")")
# How each of REPORT_END's alternatives starts: a line that starts
# otherwise (most) is no end line, and says so at once.
END_STARTS = ("---[ end ", "=" * 20, INIT)
TRACE_LINES = 150
# A report whose rule says "deep" (a stack overflow's recursion: syzkaller
# names it by a frame some hundreds of lines down) is read this far.
DEEP_TRACE_LINES = 1000


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


@functools.lru_cache(maxsize=256)
def window(rule_text):
    """How many lines a report of a row with this culprit rule is read to."""
    return DEEP_TRACE_LINES if syztitle.parse_rule(rule_text)["deep"] else TRACE_LINES


def deep_needles(patterns):
    """The needles of each row read to DEEP_TRACE_LINES (window()): a line
    holding one opens a window that long (logtext.marked_lines()). A deep
    row without needles is an error of the table, not a row never widened."""
    out = []
    for _, regex, _, _ in patterns:
        if window(RULES.get(regex.pattern)) > TRACE_LINES:
            found = needles_of(regex.pattern[len("^(?:"):-1])
            if found is None:
                raise ValueError(f"{PATTERNS_TSV}: a deep row needs fixed text to be found by: {regex.pattern}")
            out += found
    return tuple(out)


# A row's culprit rule, by its compiled regex's pattern (load_patterns()).
RULES = {}


def any_header(patterns):
    """One regex matching where some row of the table does, or None: most
    console lines are no report's header, and it says so at once. The
    alternatives are tried in the rows' order, each ending in an empty group
    "rN", N its row's index: the group a match ends in (Match.lastgroup)
    names the first row that matches. (At the end, not around the row: an
    alternative that starts with a literal is passed over the quickest.)"""
    src = "|".join(f"{regex.pattern}(?P<r{i}>)" for i, (_, regex, _, _) in enumerate(patterns))
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
    hit = quick.match(line) if quick is not None else None
    if quick is not None and hit is None:
        return None
    if any(regex.match(line) for regex in getattr(patterns, "ignore", ())):
        return None
    # The rows before the one quick found match nothing: not tried again.
    first = int(hit.lastgroup[1:]) if hit is not None and hit.lastgroup else 0
    for kind, regex, title, stem in itertools.islice(patterns, first, None):
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
    (reports/syztitle.py): culprit (the title, "STEM in FUNCTION"), stem (with
    KASAN's access type), access ("Read", "Write" or None), function (the
    culprit function or None) and corrupted (True when its stack has no
    culprit or is mixed with another's); window, the lines it could be
    read to (TRACE_LINES, or DEEP_TRACE_LINES when a header's rule says
    "deep")."""
    return list(crashes_stream(console_lines(text), patterns))


def crashes_stream(lines, patterns=None):
    """crashes() of (line number, line) pairs (console_lines(), file_lines()),
    each crash yielded once it ends. A crash looks forward only, at most
    TRACE_LINES lines from its first header: what is kept is that one crash,
    however long the log."""
    yield from crashes_marked(((n, line, True) for n, line in lines), patterns)


def crashes_marked(lines, patterns=None, read=None, caller=None):
    """crashes_stream() of (line number, line, hit) triples, hit false for a
    line that cannot be a report's header (logtext.marked_lines(): it has
    no needle of the table's): such a line is passed over unless a crash is
    open, and is never classified. read(number, line), when given, makes
    the line the classifier reads of the one given, only for the lines it
    reads. caller(line), when given, is the printk caller id of a line as
    given ("T123", "C1") or None: a crash whose header has one is read from
    that caller's lines only (Caller); another's headers are among its
    headers, their lines not among its lines."""
    patterns = patterns or load_patterns()
    quick = any_header(patterns)
    # cur: the open crash; kept: its lines (cur["_lines"], the same list);
    # limit: its window (cur["window"] once it ends), in lines read, its
    # own (kept) and another caller's (skipped); own: whose it is.
    cur, kept, limit, own, skipped = None, None, TRACE_LINES, None, 0
    for n, raw, hit in lines:
        if cur is None and not hit:
            continue
        line = read(n, raw) if read is not None else raw
        other = own is not None and own.other(caller(raw), line)
        ended = cur is not None and not other and line.startswith(END_STARTS) and REPORT_END.match(line)
        if cur is not None and (len(kept) + skipped >= limit or ended and kept):
            cur["window"] = limit
            yield finish(cur, "line" if ended else None)
            cur, kept, limit, own, other, skipped = None, None, TRACE_LINES, None, False, 0
            if not line.startswith("krepro"):
                continue
        h = classify_line(line, patterns, quick) if hit else None
        if h is not None:
            if cur is None:
                kept = []
                cur = {"kind": h[0], "title": h[1], "line": n, "headers": [], "_lines": kept, "_heads": []}
                own = Caller.of(caller(raw)) if caller else None
            cur["headers"].append([h[0], h[1]])
            if not other:
                limit = max(limit, window(h[3]))
                cur["_heads"].append((len(kept), h[2], h[3]))
        if other:
            skipped += 1
        elif kept is not None:
            kept.append(line)
    if cur is not None:
        cur["window"] = limit
        yield finish(cur, "log")


class Caller:
    """Whose lines a crash is read from when the console prints printk's
    caller id (CONFIG_PRINTK_CALLER), as syzkaller reads it: its header's
    caller's only (a line without an id is no kernel message of it); after
    "Sending NMI from CPU" (a backtrace of every CPU) any CPU's too."""

    def __init__(self, cid):
        self.cid, self.cpus = cid, False

    @classmethod
    def of(cls, cid):
        return cls(cid) if cid else None

    def other(self, cid, line):
        """Whether a line (its caller id cid) is another caller's."""
        if cid == self.cid or cid is not None and self.cpus and cid.startswith("C"):
            self.cpus = self.cpus or "Sending NMI from CPU" in line
            return False
        return True


@functools.lru_cache(maxsize=1)
def frame_needles():
    """What a line with a frame holds (trace.FRAME's alternatives' needles),
    or None: most lines of a report have no frame, and say so at once."""
    return any_needles(FRAME.pattern)


def read_frames(lines, heads):
    """(frames, trace_frames) of a crash's lines, heads the indexes of its
    header lines: every function the lines name, in order, each once; and
    the crashing task's reliable frames (TraceReader). Read when the crash
    ends, each line's frames found once for both, and only while a reader
    still wants them."""
    # has_needle() inlined, a call less a line; no needles: "" is in every line.
    needles = frame_needles() or ("",)
    reader, found = TraceReader(), {}
    feed = reader.feed
    for i, line in enumerate(lines):
        for s in needles:
            if s in line:
                frames = line_frames(line)
                for f in frames:
                    found[f] = None
                break
        else:
            frames = ()
        if reader.state != "after":
            feed(line, i in heads, frames)
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


def syzkaller_title(text, patterns=None):
    """The title syzkaller gives the log: its first crash's, or None."""
    cs = crashes(text, patterns)
    return cs[0]["culprit"] if cs else None
