"""A pasted log's lines made one console message each, before logtext.unwrap()
reads them: what a paste put several messages on one line, one message on
several lines, or lines no kernel printed among them.

  - rsyslog's "#012" for each newline inside one record ("#011" a tab)
  - a line whose newlines the paste lost: split before each timestamp
  - journalctl -o verbose and crash's `log -d`: a record's fields, one a
    line ("    MESSAGE=..."); the MESSAGE is the line, the others none
  - markdown fences (```), pstore's "Oops#1 Part1" headers: no line; a
    fence's ticks on a log's own line come off it
  - a mail's quoted line its client wrapped at 72-80 columns: joined again
  - a format=flowed mail's line (RFC 3676, "delsp=yes": syzbot's mails until
    2020) broken before the word that passed 78 columns, the break marked
    by a second blank at the line's end: joined again, one blank less
Each line keeps its own number: a line split is its pieces, each numbered
as it was (a report's line is where a user finds it in the paste).
"""
import re

from . import console
from .console_lines import MAX_LINE
from .logtext import MONO

# A line longer than this with a timestamp inside may hold several messages
# (the console's merged pair is shorter and logtext.unwrap() reads its last).
# Shorter lines pass at once, for speed: two short journal lines run
# together are read as one.
LONG = 160
# Where a lost newline was: before a timestamp, a syslog/journal prefix, or
# a console level ("... <1>BUG: unable ... <4>PGD 0"), a blank before it.
_DAY = r"[A-Z][a-z]{2} [ 0-3]?[0-9] [0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]+)?"
LOST = re.compile(rf"(?<=.)(?=(?:<[0-7]>)?\[ *[0-9]+\.[0-9]{{6}}\]|{_DAY} [^ ]+ kernel: )|(?<= )(?=<[0-7]>(?! \())")
# A block of journalctl -o verbose: a report's window is ten times as many
# lines (console.TRACE_LINES messages at nine or so lines each).
WIDE = ("\n    MESSAGE=", (console.TRACE_LINES + 1) * 10)
# journalctl -o verbose's fields, crash's `log -d` dictionary lines.
FIELD = re.compile(r"^ +([A-Z_][A-Z0-9_]*)=(.*)$")
# journalctl -o verbose's record heading: "Mon 2023-11-13 08:58:21.123456 UTC [s=...;i=...]".
VERBOSE_HEAD = re.compile(r"^[A-Z][a-z]{2} [0-9]{4}-[0-9]{2}-[0-9]{2} [0-9:.]+ [^ ]+ \[s=[0-9a-f]+;")
# Lines no kernel printed: pstore's part headers; after a markdown fence's
# ticks, its language ("```text") or nothing.
NOISE = re.compile(r"^(?:Oops|Panic|Emergency|Shutdown|Halt|Poweroff|Restart|Unknown)#[0-9]+ Part[0-9]+$")
# syslogd's and wall's heading before a message sent to terminals (its
# message follows: " kernel:BUG: soft lockup ..."), perhaps indented.
WALL = re.compile(r"^\s*(?:Broadcast message|Message) from [^ ]+@")
FENCE_TAG = re.compile(r"^[A-Za-z0-9_+.-]*\s*$")
# A mail's quote, and what a quoted line must be for its client to have
# wrapped it: a timestamped message as long as a wrapped line is (clients
# wrap at 72 to 80 columns).
QUOTE = re.compile(r"^(?:> ?)+")
STAMPED = re.compile(r"(?:<[0-7]>)?" + MONO)
WRAP_MIN, WRAP_MAX = 72, 80
# A flowed line's end: the blank that was there and the one the break adds.
FLOWED = "  "
# The first characters of a line pieces() may change, and of a quote.
PLAIN_NOT = frozenset(" \t`~OPEHSRUMTWFB>")


def pieces(raw):
    """The console lines one pasted line holds: usually itself alone."""
    if "#01" in raw:
        raw = raw.replace("#011", "\t")
        if "#012" in raw:
            return [p for r in raw.split("#012") for p in pieces(r)]
    first = raw[:1]
    if first in "`~" and raw.startswith(("```", "~~~", "`")):
        # Markdown: a fence (its language named or not) is no line; code's
        # ticks written on a log's first or last line come off it.
        rest = raw.lstrip("`~")
        if FENCE_TAG.match(rest):
            return []
        raw = rest.rstrip("`")
        first = raw[:1]
    if first == " " and "=" in raw:
        m = FIELD.match(raw)
        if m:
            return [m.group(2)] if m.group(1) == "MESSAGE" else []
    elif first in "OPEHSRUMTWF" and (NOISE.match(raw) or VERBOSE_HEAD.match(raw)):
        return []
    if first in " \tMB" and " from " in raw and WALL.match(raw):
        return []
    if len(raw) > LONG and LOST.search(raw):
        # The space a paste put where a newline was is no part of a message.
        most = MAX_LINE
        return [(p[:-1] if p.endswith(" ") else p)[:most] for p in LOST.split(raw)]
    return [raw[:MAX_LINE]]


def lines(numbered):
    """(number, line, hit) triples (logtext.marked_lines()) as the console
    lines they hold, each a triple with its pasted line's number and hit. A
    quoted line is held until the next says whether it goes on there."""
    held = None    # [number, line, hit, the last piece's number and length]
    plain_not, long = PLAIN_NOT, LONG
    for t in numbered:
        n, raw, hit = t
        # Most lines are one console line: told at once, for a log's speed.
        # (A line that ends in a blank may be a flowed mail's: not told.)
        if held is None and raw[:1] not in plain_not and raw[-1:] != " " and len(raw) <= long \
                and "#01" not in raw:
            yield t
            continue
        for line in pieces(raw):
            if held is not None:
                joined = _flowed(held, n, line) or _wrapped(held, n, line)
                if joined:
                    held[1:] = [joined, held[2] or hit, n, len(line)]
                    continue
                yield tuple(held[:3])
                held = None
            if line.startswith(">") or line.endswith(FLOWED) and len(line) <= WRAP_MAX:
                held = [n, line, hit, n, len(line)]
            else:
                yield n, line, hit
    if held is not None:
        yield tuple(held[:3])


def _unquoted(line):
    return line[QUOTE.match(line).end():] if line.startswith(">") else line


def _flowed(held, n, line):
    """The flowed line held with line joined on, one blank less, or None:
    line must be the next pasted line, in the same quote, no timestamped
    message of its own, its first word what would not fit on the held one."""
    _, text, _, last_n, last_len = held
    if n != last_n + 1 or not text.endswith(FLOWED) or last_len > WRAP_MAX:
        return None
    quote = QUOTE.match(text).group() if text.startswith(">") else ""
    if not line.startswith(quote.rstrip()) or not quote and line.startswith(">"):
        return None
    body = line[len(quote):] if line.startswith(quote) else line.lstrip(">")
    word = body.split(" ", 1)[0]
    if word and last_len - 1 + len(word) > WRAP_MIN and not STAMPED.match(body):
        return text[:-1] + _unquoted(line)
    return None


def _wrapped(held, n, line):
    """The quoted line held with line joined on, or None: line must be the
    next pasted line, quoted, no message of its own, after a timestamped
    line a mail client would have wrapped."""
    _, text, _, last_n, last_len = held
    if n != last_n + 1 or not line.startswith(">") or not text.startswith(">") or last_len > WRAP_MAX:
        return None
    body = _unquoted(line)
    word = body.split(" ", 1)[0]
    # The client wrapped the line where the next word would not fit.
    if word and last_len + 1 + len(word) > WRAP_MIN and not STAMPED.match(body) \
            and STAMPED.match(text, QUOTE.match(text).end()):
        return text + " " + body
    return None
