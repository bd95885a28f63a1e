"""A console log read as numbered lines: printk's timestamps and CRs off,
the last message of a line the console merged, and a file read one bounded
line at a time (reports/console.py finds the reports in them)."""
import re

# The printk timestamp (a paste may cut it to whole seconds, "[  240.]"),
# and the caller id ("[ T1234]", "[    C0]") a kernel
# with CONFIG_PRINTK_CALLER prints after it.
TIMESTAMP = re.compile(r"^\[\s*[0-9]+\.[0-9]*\](\[ *[TC][0-9]+\])?\s?")


def console_lines(text):
    """Console text as (line number, line without timestamp and CR)."""
    return numbered(text.splitlines())


# A timestamp inside a line: the console merged two messages ("login: [
# 16.3] INFO: ...", a line cut short and the next); the last message counts.
INNER_STAMP = re.compile(r"\[ *[0-9]+\.[0-9]{6}\](\[ *[TC]?[0-9]+\])? ?|^[^ ]+ login: ")


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


def raw_lines(f):
    """The lines of a text file opened with universal newlines (open()'s
    default), one held at a time, each cut to its first MAX_LINE characters
    (splitlines() also ends a line at a form feed and the like)."""
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


def file_lines(f):
    """console_lines(f.read()), holding one line at a time: the same lines,
    numbered alike."""
    return numbered(raw_lines(f))
