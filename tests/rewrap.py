"""Golden console logs re-wrapped whole, the ways tools and users paste a
log (tests/test_rewrapped.py, bench/classify-pasted.py --rewrapped): each
wrapping a function of a log's lines to the pasted lines. No krepro import:
a bench reads them with another checkout's krepro.
"""
import glob
import os
import re

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN = sorted(glob.glob(os.path.join(HERE, "console", "*.log")))
STAMP = re.compile(r"^\[ *([0-9]+)\.([0-9]+)\] ?")
FRAME = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\+0x[0-9a-f]+/0x[0-9a-f]+")
JOURNAL = "Nov 13 08:58:21 host kernel: "
# %b in ru_RU, fr_FR, de_DE, zh_CN
LOCAL_MONTHS = ("июл", "déc.", "Mär", "11月")


def message(line):
    m = STAMP.match(line)
    return line[m.end():] if m else line


def groups(lines, size):
    return [lines[i:i + size] for i in range(0, len(lines), size)]


def continuation(lines):
    # A record of four messages: journalctl indents the later ones.
    return [x for g in groups(lines, 4)
            for x in [JOURNAL + message(g[0])] + [" " * len(JOURNAL) + message(l) for l in g[1:]]]


def verbose(lines):
    out = []
    for i, l in enumerate(lines):
        out += [f"Mon 2023-11-13 08:58:21.{i:06d} UTC [s=0a1b2c;i={i:x};b=3d4e;m={i:x};t=5f;x=6a]",
                "    _SOURCE_MONOTONIC_TIMESTAMP=1234", "    _TRANSPORT=kernel", "    PRIORITY=4",
                "    SYSLOG_FACILITY=0", "    SYSLOG_IDENTIFIER=kernel", "    MESSAGE=" + message(l),
                "    _BOOT_ID=7b8c", "    _HOSTNAME=host"]
    return out


def rsyslog(lines):
    return [JOURNAL + "#012".join(l.replace("\t", "#011") for l in g) for g in groups(lines, 6)]


def lost_newlines(lines):
    # Only a timestamp says where a message began: the log's own lines
    # without one stay lines (a paste loses the newlines of what it copies).
    out = []
    for l in lines:
        if out and STAMP.match(l) and STAMP.match(out[-1]) and len(out[-1]) < 4000:
            out[-1] += " " + l
        else:
            out.append(l)
    return out


def mail_wrapped(lines, width=76):
    out = []
    for l in lines:
        rest = "> " + l
        while len(rest) > width and " " in rest[:width]:
            cut = rest.rindex(" ", 0, width)
            out.append(rest[:cut])
            rest = "> " + rest[cut + 1:]
        out.append(rest)
    return out


def flowed(lines, width=78, quote=""):
    """format=flowed with delsp=yes (RFC 3676), as syzbot's mails were: a
    line broken at the last blank before the word that passes the width,
    the blank kept and a second one added to mark the break."""
    out = []
    for l in lines:
        rest = quote + l
        while len(rest) > width and " " in rest[len(quote):width - 1]:
            cut = rest.rindex(" ", len(quote), width - 1)
            out.append(rest[:cut + 1] + " ")
            rest = quote + rest[cut + 1:]
        out.append(rest)
    return out


def decoded_inline(line):
    """decode_stacktrace.sh's "name (file:line file:line)": an inline chain,
    no offset, no address."""
    msg = message(line)
    return FRAME.sub(lambda m: f"{m.group(1)} (include/linux/{m.group(1)[:2]}.h:3 fake/{m.group(1)[:3]}.c:9)",
                     msg)


def interleaved(lines):
    out = []
    for i, l in enumerate(lines):
        out.append(l)
        if i % 7 == 3:
            out.append("[  OK  ] Started Daily Cleanup of Temporary Directories.")
    return out


def per_line(f):
    return lambda lines: [f(l) for l in lines]


WRAPPINGS = {
    "journalctl-continuation": continuation,
    "journalctl-verbose": verbose,
    "journalctl-cat": per_line(message),
    "rsyslog-012": rsyslog,
    "lost-newlines": lost_newlines,
    # A log's tail of fewer lines stays as it is: a line of two short
    # messages (160 characters or fewer) is read as one (pasted.LONG).
    "lost-newlines-journal": lambda lines: [x for g in groups(lines, 8) for x in
                                            ([" ".join(JOURNAL + message(l) for l in g)] if len(g) == 8
                                             else [JOURNAL + message(l) for l in g])],
    "mail-wrapped": mail_wrapped,
    "mail-flowed": lambda lines: flowed([message(l) for l in lines]),
    "mail-flowed-stamped": flowed,
    "mail-flowed-quoted": lambda lines: flowed([message(l) for l in lines], quote="> "),
    "markdown-fence": lambda lines: ["```", *lines, "```"],
    "markdown-indent": per_line(lambda l: "    " + l),
    "github-fence-text": lambda lines: ["Here is dmesg:", "```text", *lines, "```", "Any idea?"],
    "fence-on-the-lines": lambda lines: ["```" + lines[0], *lines[1:-1], lines[-1] + "```"]
    if len(lines) > 1 else lines,
    "hisilicon": per_line(lambda l: (STAMP.match(l).group(0) + "[pid:123,cpu1,kworker/1:1]" + message(l)
                                     if STAMP.match(l) else l)),
    "samsung": per_line(lambda l: (STAMP.match(l).group(0) + "[1:  kworker/1:1:  123] " + message(l)
                                   if STAMP.match(l) else l)),
    "samsung-level": per_line(lambda l: (STAMP.match(l).group(0).rstrip() + "  [L3:  kworker/1:1:  123] " + message(l)
                                         if STAMP.match(l) else l)),
    "console-capture-iso": per_line(lambda l: "2025-08-31T23:36:54Z - " + message(l)),
    "android-cpu-pid-comm": per_line(lambda l: (STAMP.match(l).group(0) + "c1 123 (kworker/1:1) " + message(l)
                                                if STAMP.match(l) else l)),
    "mediatek": per_line(lambda l: (STAMP.match(l).group(0) + "(1)[123:kworker/1:1]" + message(l)
                                    if STAMP.match(l) else l)),
    "android-level-caller": per_line(lambda l: ("<6>" + STAMP.match(l).group(0) + "[  T123] " + message(l)
                                                if STAMP.match(l) else l)),
    "crash-log-m": lambda lines: ["crash> log -m"] + [(STAMP.match(l).group(0) + "<4>" + message(l)
                                                        if STAMP.match(l) else l) for l in lines],
    "pstore": lambda lines: ["Oops#1 Part1"] + ["<4>" + l for l in lines],
    "netconsole-syslog": per_line(lambda l: "Nov 13 08:58:21 10.0.0.2 " + l),
    "dmesg-x-T": per_line(lambda l: "kern  :warn  : [Mon Nov 13 08:58:21 2023] " + message(l)),
    "interleaved-userspace": interleaved,
    "decoded-inline": per_line(decoded_inline),
    # journalctl and syslog under a locale: the month in its language.
    "journalctl-localized-month": lambda lines: [
        f"{LOCAL_MONTHS[i % len(LOCAL_MONTHS)]} 13 08:58:21 host kernel: " + message(l)
        for i, l in enumerate(lines)],
    # A vendor's CPU after the timestamp, inside it ("@0") or after it ("[0]").
    "stamp-at-cpu": per_line(lambda l: (STAMP.match(l).group(0).rstrip()[:-1] + "@1] " + message(l)
                                        if STAMP.match(l) else l)),
    "logread-cpu": per_line(lambda l: ("Feb 25 20:33:54 fritz kern.warn kernel: "
                                       + (STAMP.match(l).group(0).rstrip() + "[0]" + message(l)
                                          if STAMP.match(l) else l))),
    # dmesg -H under a locale with a decimal comma, its minute heading first.
    "dmesg-H-comma": lambda lines: ["[30. Jul 08:55] " + message(lines[0])]
    + ["[  +0,000004] " + message(l) for l in lines[1:]],
    # journalctl in a tab-indented block.
    "journalctl-tab": per_line(lambda l: "\t" + JOURNAL + message(l)),
    # syslog relaying /dev/kmsg's records, no program tag.
    "syslog-kmsg": per_line(lambda l: "May 21 20:00:40 x 4,2903,86997972896,-;" + message(l)),
    # Android's last_kmsg: uptime, level and wall clock before each line.
    "last-kmsg": per_line(lambda l: "  1276.705430:   <4> (01-28 07:22:33.304698634) " + message(l)),
    # syslogd's messages to terminals, in a markdown indent: each line
    # " kernel:" and the message, a wall heading before the emergency ones
    # (here every 40th line).
    "wall-indented": lambda lines: [x for i, l in enumerate(lines) for x in
                                    (["    Message from syslogd@host at Sep  2 17:29:12 ..."] if i % 40 == 0 else [])
                                    + ["     kernel:" + message(l)]],
}


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()
