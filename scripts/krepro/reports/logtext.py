"""A kernel log as users paste it, turned line by line into the plain console
form the report classifier reads (reports/console.py): "[    1.234567] " timestamps
or none, one message a line, frames as "func+0x1c/0x40".

What comes off the front of a line, in this order, each where present:
  - a mail quote: "> "
  - blanks: a markdown code block's indent before a timestamp, or the 16 or
    more journalctl puts under a record's first line for its later lines
  - a syslog or journal prefix ending in "kernel: ": journalctl's short,
    short-precise, short-iso and short-monotonic forms, RFC 3164 and ISO
    syslog times (a month named in the locale's language too), with or
    without a host name
  - dmesg's "kern  :warn  : " (-x), a "<4>" level (-r), /dev/kmsg's
    "4,1234,5678,-;"
  - one timestamp: "[  123.456789]", "[Mon Nov 13 08:58:21 2023]" (-T),
    "[Nov13 08:58]" and "[  +0.000123]" (-H, -d), "2023-11-13T08:58:21,123456+00:00"
    (--time-format iso)
  - printk's caller id: "[T14140]", "[ C1]", right after the timestamp or alone
  - a vendor kernel's own piece: "[pid:123,cpu1,comm]", "[0:  swapper:  0]",
    "(0)[123:comm]"; or crash's `log -m` level, "<4>"
and a CR at the end. A pasted line that is several messages, or none, is
made one by reports/pasted.py first. Frames decoded to source lines, by
scripts/decode_stacktrace.sh ("kfree (mm/slub.c:3567)") or in syzbot's mails
(" __dump_stack lib/dump_stack.c:88 [inline]"), become "kfree+0x0/0x0": the
classifier reads a frame by its offset, and the offset is never part of a
title. An inlined one keeps its " [inline]": syzkaller titles a report from
the console's own lines, where an inlined function has no frame. Their
source lines are kept for the reader (sources()).

unwrap() does the first part and keeps what a reader is shown; plain() the
whole. A plain console line is its own unwrap() and plain(), so a log reads
the same whatever its wrapping.
"""
import codecs
import io
import re

from .console_lines import MAX_LINE, last_message, raw_lines
# The pieces of text a regex's matches hold, once here: where they are.
from .needles import hit_lines, offsets

# journalctl -o short / short-precise: "Nov 13 08:58:21[.123456] "; RFC 3164
# syslog the same; ISO: "2023-11-13T08:58:21[.123456][+00:00|Z] ";
# short-monotonic: "[ 1234.567890] ". Then an optional host, a facility.level
# (OpenWrt's logread, syslog's "%syslogpriority-text%"), "kernel:" (or,
# where syslog relays /dev/kmsg's records, the record: "4,1676,...,-;").
# syslogd's wall message to terminals: " kernel:" alone.
# The month is the locale's: "Nov", "июл", "déc.", "11月".
_DAY = r"(?:[^\W\d_]{2,5}\.?|[ 0-9]?[0-9]月) [ 0-3]?[0-9] [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
_ISO = r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}:[0-9]{2}(?:[.,][0-9]+)?(?:Z|[+-][0-9]{2}:?[0-9]{2})?"
# printk's timestamp (a paste may cut it to whole seconds: "[  240.]"), in
# journalctl -o short-monotonic, on a console line, in a mail's quote.
MONO = r"\[ *[0-9]+\.[0-9]*\]"
_KMSG = r"[0-9]+,[0-9]+,[0-9]+,[^;]*;"
_SYSLOG = (rf"(?:<[0-9]+>)?(?:{_DAY}|{_ISO}|{MONO}) (?:[^ ]+ )?(?:[a-z0-9]+\.[a-z]+ )?(?:kernel: ?|(?={_KMSG}))"
           r"|[ \t]*kernel: ?")
# dmesg -x, dmesg -r / /proc/kmsg, /dev/kmsg
_LEVEL = (r"(?:kern|user|mail|daemon|auth|syslog|lpr|news|uucp|cron|authpriv|ftp|local[0-7]) *:"
          rf"(?:emerg|alert|crit|err|warn|notice|info|debug) *: |<[0-7]>|{_KMSG}")
# The timestamp: printk's own (a vendor's CPU after it, "@0"; a locale's
# decimal comma), dmesg -T, dmesg -H/-d (its minute headings in the
# locale's words: "[Jan14 21:40]", "[30. Jul 08:55]"), dmesg --time-format
# iso (a console capture's " -" after it), Android's last_kmsg
# ("1276.705430:   <1> (01-28 07:22:33.304698634)").
_STAMP = (r"\[ *\+?[0-9]+[.,][0-9]*(?:@[0-9]+)?\]|\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ 0-3]?[0-9] [0-9:]{8} [0-9]{4}\]"
          r"|\[[^\[\]]{3,16} [0-9]{2}:[0-9]{2}\]|\[ *\+? *[0-9]+\.[0-9]+ *<[^>]*>\]"
          r"|[0-9]+\.[0-9]{6}: +(?:<[0-7]> +)?\([0-9]{2}-[0-9]{2} [0-9:.]+\)"
          rf"|{_ISO}(?: -(?= ))?")
# The printk caller id, or a vendor's bare CPU number ("[0]").
_CALLER = r"\[ *[TC]?[0-9]+\]"
# After the timestamp, vendor kernels' own: "[pid:123,cpu1,comm]" (HiSilicon),
# "[0:   swapper:    0]" and " [L3:   comm:  715]" (Samsung), "(0)[123:comm]" (MediaTek), "c0 1
# (swapper/0)" and "c1 " (older Android kernels' CPU, pid and comm); crash's
# `log -m` level, "<4>".
_VENDOR = (r"\[pid:[0-9]+,cpu[0-9]+,[^\]]*\]| ?\[ *[A-Z]?[0-9]+: *[^\]]*: *[0-9]+\]|\([0-9]+\)\[[0-9]+:[^\]]*\]"
           r"|c[0-9]{1,3}(?: +[0-9]+ \([^)]*\))?(?= )|<[0-7]>")
# Blanks before it all: a markdown code block's indent (before a timestamp,
# a level or a journal's date), or journalctl's under a message's first
# line for its next ones (16 or more: as wide as the prefix it has no copy of).
_BLANKS = (r"(?:[ \t]+(?=\[ *\+?[0-9]+[.,][0-9]*|<[0-7]>\[|[0-9]+\.[0-9]{6}: |[A-Z][a-z]{2} [ 0-3]?[0-9] [0-9]{2}:)"
           r"| {16,}(?=[^ ]))")
WRAPPING = re.compile(rf"^(?:> ?)*{_BLANKS}?(?:{_SYSLOG})?(?:{_LEVEL})?(?:(?:{_STAMP}) ?)?(?:{_CALLER} ?)?"
                      rf"(?:(?:{_VENDOR}) ?)?")

# A decoded frame: "name (file.c:12)", inlines "name (a.c:1 b.h:2)", each
# line perhaps with "(discriminator 1)"; a segment before it ("0010:name
# (...)") kept as it is. A message's "at (file.c:12)" (an assertion's
# place) names no function "at".
_SRC = r"[A-Za-z0-9_./+~-]+\.[A-Za-z]+:[0-9]+"
_DISC = r"(?: \(discriminator [0-9]+\))?"
DECODED = re.compile(rf"(?<![A-Za-z0-9_.+/])(?!at \()([A-Za-z_][A-Za-z0-9_.]*) "
                     rf"\(({_SRC}{_DISC}(?: {_SRC}{_DISC})*)\)")
SRC = re.compile(_SRC)
# What every source line has (a dot, letters, a colon, a digit), found fast
# (a literal first): a line without it has no decoded frame to read.
SRC_HINT = re.compile(r"\.[A-Za-z]+:[0-9]")
# syzbot's: " name file.c:12 [inline]" (no offset), and
# " name+0x1c/0x40 file.c:12" (the offset is there: nothing to do).
INLINE = re.compile(rf"^( *(?:\? )?)([A-Za-z_][A-Za-z0-9_.]*) ({_SRC}) (\[inline\])$")
# ARM's verbose "[<c0..>] (name) from [<c0..>] (caller+0x..)" once decoded:
# "(name) from caller (file.c:12)", its addresses gone; read as the
# unwinder's other form, "name from caller+0x..".
ARM_DECODED = re.compile(r"^( *)\(([A-Za-z_][A-Za-z0-9_.]*)\) from (?=[A-Za-z_])")
SYZ_FRAME = re.compile(rf"([A-Za-z_][A-Za-z0-9_.]*)\+0x[0-9a-f]+/0x[0-9a-f]+ ({_SRC})")
PLACEHOLDER = "+0x0/0x0"


# Most lines of a console log: printk's timestamp and the message.
CONSOLE_STAMP = re.compile(MONO + " ?")


# printk's caller id after a timestamp: "[  12.345678][ T1234]".
CALLER_ID = re.compile(r"\[ *[0-9]+\.[0-9]+\]\[ *([TC][0-9]+)\]")


def caller_id(line):
    """The printk caller id of a pasted line's (last) message, or None."""
    if "][" not in line:
        return None
    ids = CALLER_ID.findall(line)
    return ids[-1] if ids else None


def unwrap(line):
    """The console message of one pasted line: wrapping and CR off, decoded
    frames as they are. Where the console merged two messages on one line
    (a program's output, then a kernel message with its timestamp), the last
    one counts, as in the guest run's reader (console_lines.INNER_STAMP)."""
    line = line.rstrip("\r\n")
    m = CONSOLE_STAMP.match(line)
    if m is None or line.startswith(("[", "(", "<", "c", " ["), m.end()) or "kernel:" in line:
        m = WRAPPING.match(line)
    msg = line[m.end():] if m.end() else line
    return last_message(msg) if "]" in msg or " login: " in msg else msg


def plain(line):
    """unwrap(line) with decoded frames as "func+0x0/0x0"."""
    return undecoded(unwrap(line))


def undecoded(line):
    """An unwrapped line with decoded frames as "func+0x0/0x0"."""
    if ":" in line and ("(" in line or "[inline]" in line):
        # A decoded frame names its source, which SRC_HINT finds quicker
        # than DECODED tries each place a name could start.
        if SRC_HINT.search(line):
            if line.endswith("[inline]"):
                line = INLINE.sub(r"\1\2" + PLACEHOLDER + r" \4", line)
            line = DECODED.sub(r"\1" + PLACEHOLDER, line)
        if line.startswith("(", len(line) - len(line.lstrip(" "))):
            line = ARM_DECODED.sub(r"\1\2 from ", line)
    return line


def sources(line):
    """{function: "file.c:12"} a line names (decoded or syzbot's frames): the
    first source line of each (the outermost of an inline chain is last)."""
    out = {}
    if ":" not in line or not SRC_HINT.search(line):
        return out
    # Each regex tries every place in the line: asked only of a line with
    # the text each of its matches holds.
    for m in DECODED.finditer(line) if " (" in line else ():
        out.setdefault(m.group(1), SRC.findall(m.group(2))[-1])
    m = INLINE.match(line) if "[inline]" in line else None
    if m:
        out.setdefault(m.group(2), m.group(3))
    for m in SYZ_FRAME.finditer(line) if "+0x" in line else ():
        out.setdefault(m.group(1), m.group(2))
    return out


def sources_of(lines):
    """sources() of lines, the first source line of a function kept."""
    found = {}
    # Only the lines with a source line's hint are read, found by searching
    # the lines joined (SRC_HINT spans no line end): few lines have one.
    text = "\n".join(lines)
    m = SRC_HINT.search(text)
    while m:
        start, end = text.rfind("\n", 0, m.start()) + 1, text.find("\n", m.end())
        end = len(text) if end < 0 else end
        for f, src in sources(text[start:end]).items():
            found.setdefault(f, src)
        m = SRC_HINT.search(text, end)
    return found


def file_lines(f):
    """(line number, line) of a log opened as text, one line held at a time
    and numbered as console_lines.file_lines() numbers them; a line longer
    than printk's limit keeps its first MAX_LINE characters."""
    return enumerate(raw_lines(f), 1)


BLOCK = 1 << 20
# The longest line kept whole for reports/pasted.py to split: a log pasted with its
# newlines lost; any other line keeps its first MAX_LINE characters.
PASTED_LINE = 64 * MAX_LINE
INNER_STAMP = re.compile(r" \[ *[0-9]+\.[0-9]{6}\]")
# Separators str.splitlines() ends a line at, besides "\n" (text mode has
# turned "\r\n" and "\r" into "\n").
OTHER_ENDS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def report_lines(f, needles, after, block_size=BLOCK):
    """file_lines(f), but only the lines a report can be in: each line that
    contains one of needles and the `after` lines that follow it. A report's
    first line holds one of them (needles: one for each row of the report
    table); every other line is passed over a block at a time. needles None:
    every line. Numbered as file_lines() numbers them; a line longer than
    MAX_LINE keeps its first MAX_LINE characters."""
    for n, line, _ in marked_lines(f, needles, after, block_size):
        yield n, line


def marked_lines(f, needles, after, block_size=BLOCK, first=False, alone=(), wide=None, deep=()):
    """report_lines() as (number, line, hit): hit says the line holds one of
    needles, so it can be a report's header (console.crashes_marked());
    the others can only be inside a report. needles None: every line, each
    a hit. alone: needles that make a line a hit without the lines after
    it; first: the log's first line is such a hit too (reports/firmware.py: a banner
    and whose a log is are told by one line each). wide (text, lines): a
    block holding text opens windows of that many lines instead. deep
    ((text, lines), ...): a hit holding a text opens a window of its many
    lines, if more (a line is looked at, not a block: most blocks hold no
    such text, and a search of every block costs as much as the rest)."""
    if needles is None:
        for n, line in file_lines(f):
            yield n, line, True
        return
    n, left = 0, 0
    for block in _blocks(f, block_size):
        hits = sorted(p for s in needles for p in offsets(block, s))
        single = sorted(p for s in alone for p in offsets(block, s))
        if first and n == 0:
            single.insert(0, 0)
        other_ends = any(c in block for c in OTHER_ENDS)
        if not hits and not single and not left:
            # Nothing to read here: only its lines counted.
            n += len(block.splitlines()) if other_ends else block.count("\n")
            continue
        lines = block.splitlines()
        # Each hit opens a window of itself and `after` lines (one line, a
        # hit of alone); `left` is what remains of the last one, carried
        # across blocks.
        size = wide[1] + 1 if wide and wide[0] in block else after + 1
        hit = hit_lines(block, lines, hits, needles, other_ends)
        opens = [(h, _longest(lines[h], deep, size)) for h in hit] if deep else [(h, size) for h in hit]
        opens = sorted(opens + [(h, 1) for h in hit_lines(block, lines, single, alone, other_ends)])
        if first and n == 0 and lines and (not opens or opens[0][0] != 0):
            opens.insert(0, (0, 1))
        left = yield from _windows(lines, n, opens, left)
        n += len(lines)


def _longest(line, deep, size):
    """The window a hit line opens: size, or a deep text's if it holds one."""
    for text, k in deep:
        if text in line:
            size = max(size, k + 1)
    return size


def _blocks(f, block_size):
    """The text of f as blocks of whole lines (the last one's end perhaps
    missing), none empty. A line longer than PASTED_LINE is one line of its
    first PASTED_LINE characters: the rest of it is read and passed over as
    it comes, never held, and the lines after it are read as any others."""
    read = _reader(f, block_size)
    carry, passing = "", False
    while True:
        data = read()
        if not data:
            if carry:
                yield carry
            return
        if passing:
            # The rest of a cut line, up to its end.
            end = data.find("\n")
            if end < 0:
                continue
            data, passing = data[end + 1:], False
        text = carry + data if carry else data
        cut = text.rfind("\n") + 1
        block, carry = text[:cut], text[cut:]
        if len(carry) > PASTED_LINE:
            # A line with no end in sight: its first characters.
            block, carry, passing = block + carry[:PASTED_LINE] + "\n", "", True
        if block:
            yield block


def _windows(lines, n, opens, left):
    """The lines of a block (numbered from n + 1) in the windows opens
    [(line index, length)] open, the first `left` lines too (what is left
    of one open before): (number, line, hit). Returns what is left of the
    last window."""
    i, hit, most = 0, False, MAX_LINE
    # A line over printk's limit is cut, unless it is a paste's many
    # messages (timestamps inside it): reports/pasted.py splits it, then cuts.
    cut = lambda line: line[:PASTED_LINE] if INNER_STAMP.search(line, 1, most) else line[:most]  # noqa: E731
    for h, size in opens + [(len(lines), 0)]:
        end = min(h, i + left)
        if i < end:
            yield n + i + 1, lines[i] if len(lines[i]) <= most else cut(lines[i]), hit
        for j in range(i + 1, end):
            yield n + j + 1, lines[j] if len(lines[j]) <= most else cut(lines[j]), False
        left -= end - i
        i, hit = h, True
        left = max(left, size)
    return left


def _reader(f, size):
    """A function that returns the next text of f, up to size characters,
    "" at its end: what has arrived (read1), so a pipe's reports are shown
    as they come, not once a whole block has; decoded and its line ends
    translated as open() does."""
    raw = getattr(f, "buffer", None)
    if raw is None or not hasattr(raw, "read1"):
        return lambda: f.read(size)
    decoder = io.IncrementalNewlineDecoder(
        codecs.getincrementaldecoder(f.encoding or "utf-8")(errors=f.errors or "strict"), translate=True)

    def read():
        while True:
            data = raw.read1(size)
            text = decoder.decode(data, final=not data)
            if text or not data:
                return text
    return read
