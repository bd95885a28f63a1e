"""A crash's title by syzkaller's rules: "STEM in FUNCTION".

The stem is the report table's column 4 (repro/lib/kernel-reports.tsv), with
KASAN's access type added ("KASAN: use-after-free Read"). The function is
the first frame a rule finds that is not reporting machinery, locking,
allocation or string functions (SKIP, searched in the name as syzkaller
does), without its compiler suffix and one syscall wrapper prefix.
Addresses, numbers, CPU numbers and task names are then dropped from the
title (sanitize()).

The rules and the patterns they use: reports/syzrules.py.
"""
import functools
import itertools
import re

from .needles import each_needle, has_needle, lines_holding, needles_of, search
from .rustname import demangle
from .syzrules import (ACCESS, ARM_ENTRY, DISPATCH, FRAME_LINE, FRAME_WITHIN, HANG_ANCHORS, HANG_SKIP,
                       INJECTED, LINES_AFTER_HEADING, QUESTIONABLE, SKIP, STACK_HEADINGS, STACK_START,
                       STEPS, SUFFIX, WRAPPER, parse_rule)


# A log names the same frames over and over: each name's answers are
# worked out once (bounded: a long log of garbage holds many names).
@functools.lru_cache(maxsize=8192)
def canonical(frame):
    name = SUFFIX.sub("", frame)
    if name.startswith("_R"):
        return demangle(name)   # a Rust frame, named by its path
    return WRAPPER.sub("", name, count=1) or name


def frames_of(lines, plan, skipped, first=False):
    """The frames a plan of steps finds, skipped ones left out (first: no
    more once one is found); and whether the stack was clean (no injected
    fault's frames in it)."""
    frames, i, s = [], 0, 0
    starts = needles_of(STACK_START.pattern)
    # Once first has its frame only an injected fault can change the
    # answer: no line after the last with "should_fail" is read.
    text = "\n".join(lines) if first else ""
    at = text.rfind("should_fail")
    last = text.count("\n", 0, at) if at >= 0 else -1

    def take(m):
        if not (first and frames):
            frames.extend(g for g in m.groups() if g and not skipped(g))
    while s < len(plan):
        step, s = plan[s], s + 1
        nxt = STEPS.get(plan[s]) if step == "stack" and s < len(plan) else None
        while i < len(lines):
            if first and frames and i > last:
                return frames, True
            line, i = lines[i], i + 1
            if line.endswith("[inline]"):
                continue    # a symbolised log's inlined function: no frame on the console
            if "should_fail" in line and INJECTED.match(line):
                return frames, False
            if step != "stack":
                m = search(STEPS[step], line)
                if m:
                    take(m)
                    i -= step == "calls" and bool(ARM_ENTRY.match(line))   # the trace's first entry
                    break
                continue
            if has_needle(line, starts) and STACK_START.search(line):
                break
            m = search(nxt, line) if nxt else None
            if m:
                take(m)
                s += 1
                break
            if first and frames:
                # The rest of the stack is read for an injected fault only.
                continue
            m = FRAME_LINE.match(line) if "+0x" in line else None
            if m:
                take(m)
    return frames, True


def hung_function(frames):
    for f in frames:
        for anchor, name in HANG_ANCHORS:
            if anchor in f:
                return name or f
    return next((f for f in frames if not HANG_SKIP.search(f)), None)


def stall_function(frames):
    """The frame before the first dispatch point (a stall loops somewhere
    below it; the caller of the syscall, work or timer names it)."""
    prev = frames[0] if frames else None
    for f in frames:
        if DISPATCH.search(f):
            return "smp_call_function" if "smp_call_function" in f else prev
        prev = f
    return None


@functools.lru_cache(maxsize=8192)
def machinery(frame):
    """Whether SKIP finds the frame name (never a culprit)."""
    return SKIP.search(frame) is not None


def culprit(lines, rule):
    """(function or None, clean): the crash's culprit function by its rule."""
    def skipped(f):
        if rule["raw"]:
            return False
        return bool(machinery(f) or rule["skip"] and rule["skip"].search(f))
    func, clean = None, True
    for plan in rule["plans"]:
        # Only the hung and stall pickers look past the first frame.
        frames, clean = frames_of(lines, plan, skipped, first=rule["pick"] is None)
        frames = [canonical(f) for f in frames]
        if rule["pick"] == "hung":
            func = hung_function(frames)
        elif rule["pick"] == "stall":
            func = stall_function(frames)
        else:
            func = frames[0] if frames else None
        if func:
            break
    return func, clean


def access(lines):
    """KASAN's access type: Read or Write, or None."""
    for line in lines[1:12]:
        m = ACCESS.match(line)
        if m:
            return m.group(1)
    return None


def stack_missing(lines, end=None):
    """Whether a report's stacks are cut or absent: a heading with no frame
    within FRAME_WITHIN lines (before the next heading), a heading the log
    ends right after (end "log"), or, in a report that ended (end "log" or
    "line", not cut at its length), no stack with a frame at all. Each kind
    of heading counts at its first line only, as syzkaller reads it."""
    first = first_headings(lines)
    seen = False
    for k in range(len(STACK_HEADINGS)):
        i = first.get(k)
        if i is None:
            continue
        # The lines after the heading, "? " frames left out, read as the
        # checks below need them: the first frame is usually the next line.
        after = (line for line in itertools.islice(lines, i + 1, None) if not QUESTIONABLE.match(line))
        head = list(itertools.islice(after, LINES_AFTER_HEADING))
        if end == "log" and len(head) < LINES_AFTER_HEADING:
            return True
        for line in itertools.islice(itertools.chain(head, after), FRAME_WITHIN):
            if ANY_HEADING.search(line):
                return True
            if "(stack is not available)" in line or "+0x" in line and FRAME_LINE.match(line):
                seen = True
                break
        else:
            return True
    return end is not None and not seen


# Any of STACK_HEADINGS: a line it finds nothing in is no heading (most of
# a report's lines), one search instead of one a heading.
HEADING_PATTERNS = tuple(h.pattern for h in STACK_HEADINGS)
ANY_HEADING = re.compile("|".join(f"(?:{p})" for p in HEADING_PATTERNS))


def first_headings(lines):
    """{index in STACK_HEADINGS: the first line that heading is in}."""
    first = {}
    for i in lines_holding(lines, each_needle(HEADING_PATTERNS)):
        line = lines[i]
        if ANY_HEADING.search(line):
            for k, h in enumerate(STACK_HEADINGS):
                if k not in first and h.search(line):
                    first[k] = i
            if len(first) == len(STACK_HEADINGS):
                break
    return first


def unbracketed(line):
    """Older lockdep's banner, "[ INFO: inconsistent lock state ]", without
    its brackets and the blanks a paste may leave after it (a terminal's
    width): the table's INFO and BUG rows read it, titled as syzkaller
    titles it (its own rows for these, not today's WARNING ones: the
    older reports' lines differ). Another line as it is."""
    if line.startswith("[ ") and line.rstrip().endswith(" ]"):
        return line.rstrip()[2:-2]
    return line


def title(stem, lines, rule_text, end=None):
    """dict: culprit (the title), stem, access, function, corrupted. A
    report without what its rule needs (KASAN's access line, lockdep's "is
    trying to acquire") is titled by its header line, and corrupted."""
    rule = parse_rule(rule_text)
    if rule["stem_next"] and len(lines) > 1 and lines[1].strip():
        stem = lines[1].strip()   # a Rust panic's message, the line after its header
    acc = access(lines) if rule["access"] else None
    if rule["access"] and not acc or rule["need"] and not any(map(rule["need"].search, lines)):
        line = unbracketed(lines[0].lstrip())
        line = line[5:] if line.startswith("BUG: ") and not stem.startswith("BUG") else line
        return {"culprit": sanitize(line), "stem": None, "access": None, "function": None,
                "corrupted": True}
    stem = f"{stem} {acc}" if acc else stem
    if rule["plans"] == [["none"]]:
        return {"culprit": sanitize(stem), "stem": stem, "access": acc, "function": None,
                "corrupted": rule["corrupted"] or not rule["nostack"] and stack_missing(lines, end)}
    func, clean = culprit(lines, rule)
    name = f"{func or 'corrupted'}{rule['after']}"
    return {"culprit": sanitize(f"{stem} in {name}"), "stem": stem, "access": acc,
            "function": func,
            "corrupted": not func or not clean or rule["corrupted"] or
            not rule["nostack"] and stack_missing(lines, end)}


# What varies between two logs of one bug is not part of its title:
# (pattern, replacement), applied in order, each until nothing changes.
VARYING = (
    (re.compile(r"syz-executor\.?[0-9]+([/:][0-9]+)?"), "syz-executor"),
    (re.compile(r"syzkaller[0-9]+([/:][0-9]+)?"), "syzkaller"),
    (re.compile(r"([^a-zA-Z0-9])(0x)?[0-9a-f]{6,}"), r"\1ADDR"),
    (re.compile(r"[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}\.[0-9]{1,3}"), "IP"),
    (re.compile(r"(\.[A-Za-z0-9_]+)(:[0-9]+)+"), r"\1:LINE"),
    (re.compile(r"([a-zA-Z][a-zA-Z0-9_.]+)\+0x[0-9a-z]+/0x[0-9a-z]+"), r"\1"),
    (re.compile(r"CPU#[0-9]+"), "CPU"),
    (re.compile(r"(\W)([0-9]+)(\W|$)"), r"\1NUM\3"),
    (re.compile(r"[0-9]{7,}"), "NUM"),
)
TITLE_MAX = 120


def sanitize(text):
    """A title as syzkaller keeps it: addresses, numbers, line numbers and
    executor names replaced, control characters dropped, spaces single."""
    return _short_sanitized(text) if len(text) <= TITLE_MAX * 2 else _sanitized(text)


def _sanitized(text):
    for pat, repl in VARYING:
        while True:
            new = pat.sub(repl, text)
            if new == text:
                break
            text = new
    text = "".join(c for c in text[:TITLE_MAX].replace("\t", " ") if " " <= c < "\x7f")
    return re.sub(r"  +", " ", text).strip()


# A log's reports repeat their titles, each a score of regex passes: a
# short one is sanitized once (bounded, in titles and their length).
_short_sanitized = functools.lru_cache(maxsize=1024)(_sanitized)
