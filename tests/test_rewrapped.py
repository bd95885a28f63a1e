#!/usr/bin/env python3
"""krepro classify on logs whose lines a paste did not keep one message each
(scripts/krepro/reports/pasted.py), and on vendor kernels' and tools' prefixes.

(1) Every golden console log (tests/console/*.log), re-wrapped as a whole the
    ways tools and users have it (journalctl's continuation lines and -o
    verbose, a locale's month names, rsyslog's #012, newlines lost, a mail
    client's wrapping of quoted lines, format=flowed mails, markdown, vendor
    prefixes, crash's `log -m`, pstore,
    netconsole to syslog, userspace lines interleaved, inlined decoded
    frames), gives the reports the log itself gives: kind, title, culprit
    and the trace a signature reads (the line numbers may differ: a record
    of several lines is one line).
(2) Older lockdep banners ("[ INFO: ... ]"), blanks after them or not, are
    titled as syzkaller titles them.
(3) The classify command reads a whole log pasted on one line.
Boots nothing.
"""
import io
import os
import sys
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro.reports import classify, console, logtext, pasted  # noqa: E402
from krepro.reports.console_lines import MAX_LINE  # noqa: E402
from rewrap import GOLDEN, HERE, WRAPPINGS, read  # noqa: E402


def crashes_of(text):
    """The classify reader's reports of a pasted text, without line numbers."""
    found = classify.reports_of(io.StringIO(text))
    return [(c["kind"], c["title"], classify.title_of(c), tuple(c["trace_frames"])) for c, _ in found]


class Rewrapped(unittest.TestCase):
    def test_golden_logs_read_the_same_whatever_their_wrapping(self):
        total = same = 0
        misses = {}
        for log in GOLDEN:
            text = read(log)
            want = crashes_of(text)
            lines = text.splitlines()
            for name, wrap in WRAPPINGS.items():
                got = crashes_of("\n".join(wrap(lines)) + "\n")
                total += 1
                if got == want:
                    same += 1
                else:
                    misses.setdefault(name, []).append(f"{os.path.basename(log)}: {got[:1]} != {want[:1]}")
        print(f"re-wrapped golden logs that read as the log itself: {same}/{total}")
        self.maxDiff = None
        self.assertEqual({k: v[:3] + [f"... {len(v)} logs"] for k, v in misses.items()}, {})

    def test_pieces(self):
        self.assertEqual(pasted.pieces("a#012b#011c"), ["a", "b\tc"])
        self.assertEqual(pasted.pieces("    MESSAGE=WARNING: x"), ["WARNING: x"])
        self.assertEqual(pasted.pieces("    _HOSTNAME=h"), [])
        self.assertEqual(pasted.pieces("```"), [])
        self.assertEqual(pasted.pieces("```console"), [])
        self.assertEqual(pasted.pieces("```[   12.000001] WARNING: x"), ["[   12.000001] WARNING: x"])
        self.assertEqual(pasted.pieces("`[   12.000001] BUG: x`"), ["[   12.000001] BUG: x"])
        self.assertEqual(pasted.pieces("Oops#2 Part3"), [])
        long = "[   12.000001] " + "x" * 200
        self.assertEqual(pasted.pieces(long + " " + long), [long, long])
        self.assertEqual(pasted.pieces("plain"), ["plain"])
        # A mail archive's log whose newlines were lost, console levels kept;
        # Android's last_kmsg level is no such place.
        lost = "we hit the panic as below: <1>BUG: unable to handle kernel paging request at 0000000b819fdb98 " \
               "<1>IP: [<ffffffff812a588f>] notify_remote_via_irq+0x13/0x34 <4>PGD 94b10067 PUD 0"
        self.assertEqual(pasted.pieces(lost), ["we hit the panic as below:",
                                               "<1>BUG: unable to handle kernel paging request at 0000000b819fdb98",
                                               "<1>IP: [<ffffffff812a588f>] notify_remote_via_irq+0x13/0x34",
                                               "<4>PGD 94b10067 PUD 0"])
        kmsg = "  1276.705430:   <1> (01-28 07:22:33.304698634) " + "x" * 200
        self.assertEqual(pasted.pieces(kmsg), [kmsg])

    def test_flowed_lines(self):
        def joined(*raw):
            return [line for _, line, _ in pasted.lines((i, r, False) for i, r in enumerate(raw))]
        # syzbot's mails of 2019: the break's blank added to the one there.
        self.assertEqual(joined("WARNING: CPU: 0 PID: 108 at drivers/usb/core/urb.c:477  ",
                                "usb_submit_urb+0x1188/0x13b0 drivers/usb/core/urb.c:477"),
                         ["WARNING: CPU: 0 PID: 108 at drivers/usb/core/urb.c:477 "
                          "usb_submit_urb+0x1188/0x13b0 drivers/usb/core/urb.c:477"])
        self.assertEqual(joined("> input: Aiptek as  ", "> /devices/platform/dummy_hcd.0/usb1/1-1/1-1:0.237/input/input5"),
                         ["> input: Aiptek as /devices/platform/dummy_hcd.0/usb1/1-1/1-1:0.237/input/input5"])
        # The kernel's own line that ends in one blank; a next word that
        # would have fit; a timestamped message; a quote after a plain line.
        cpu = "CPU: 0 UID: 0 PID: 1 Comm: sh Not tainted 6.12.0 #1 PREEMPT(voluntary) "
        for raw in [(cpu, "Hardware name: QEMU Standard PC"), ("short line  ", "next"),
                    ("[    1.000000] a line that ends in two blanks, long enough  ", "[    1.000001] next"),
                    ("a plain line that ends in two blanks and is long enough to wrap  ", "> quoted"),
                    ("a plain line that ends in two blanks and is long enough to wrap  ", "> a_long_quoted_word")]:
            self.assertEqual(joined(*raw), list(raw))

    def test_vendor_prefixes(self):
        want = "WARNING: CPU: 1 PID: 7 at a.c:1 f+0x1/0x2"
        for line in ["[  12.345678] [pid:123,cpu1,kworker/1:1]" + want, "[    0.000000] [0:      swapper:    0] " + want,
                     "[  12.345678] (0)[123:kworker/0:1]" + want, "<6>[  12.345678] [T123] " + want,
                     "[  12.345678] <4>" + want, "[    0.693542] c0 1 (swapper/0) " + want,
                     "<4>[169739.712633] c1 " + want, "    [  12.345678] " + want, " " * 29 + want]:
            self.assertEqual(logtext.plain(line), want, line)


# Older lockdep banners and their titles, syzkaller's own (its parser's test
# logs: a deadlock's title is today's; the BUG and INFO ones keep theirs).
OLD_LOCKDEP = [
    ("[ INFO: possible circular locking dependency detected ]", "possible deadlock in taker_fn"),
    ("[ INFO: possible recursive locking detected ]", "possible deadlock in taker_fn"),
    ("[ BUG: bad unlock balance detected! ]", "BUG: bad unlock balance in taker_fn"),
    ("[ BUG: held lock freed! ]", "BUG: held lock freed in taker_fn"),
]

LOCKDEP_BODY = """{banner}
4.4.0-rc1 #1 Not tainted
-------------------------------------------------------
t/7 is trying to acquire lock:
 (&a->lock){+.+.}, at: [<ffffffff81000000>] taker_fn+0x1/0x2
 (&a->lock){+.+.}, at: [<ffffffff81000000>] taker_fn+0x1/0x2

but task is already holding lock:
 (&b->lock){+.+.}, at: [<ffffffff81000100>] holder_fn+0x1/0x2

which lock already depends on the new lock.

other info that might help us debug this:
 1 lock held by t/7:
 #0:  (&b->lock){+.+.}, at: [<ffffffff81000100>] holder_fn+0x1/0x2

stack backtrace:
CPU: 0 PID: 7 Comm: t Not tainted 4.4.0-rc1 #1
Call Trace:
 [<ffffffff81000200>] dump_stack+0x1/0x2
 [<ffffffff81000300>] lock_acquire+0x1/0x2
 [<ffffffff81000400>] taker_fn+0x1/0x2
 [<ffffffff81000500>] caller_fn+0x1/0x2
"""


RCU_BODY = """{banner}
4.4.0 #1 Not tainted
-------------------------------
net/core/dev.c:123 suspicious rcu_dereference_check() usage!

stack backtrace:
CPU: 0 PID: 7 Comm: t Not tainted 4.4.0 #1
Call Trace:
 [<ffffffff81000200>] dump_stack+0x1/0x2
 [<ffffffff81000300>] lockdep_rcu_suspicious+0x1/0x2
 [<ffffffff81000400>] dev_fn+0x1/0x2
"""


class OldLockdep(unittest.TestCase):
    def test_suspicious_rcu_usage_with_its_source_line(self):
        old = console.crashes(RCU_BODY.replace("{banner}", "[ INFO: suspicious RCU usage. ]   "))
        self.assertEqual([c["culprit"] for c in old], ["INFO: suspicious RCU usage in dev_fn"])
        modern = console.crashes(RCU_BODY.replace("{banner}", "WARNING: suspicious RCU usage"))
        self.assertEqual([c["culprit"] for c in modern], ["WARNING: suspicious RCU usage in dev_fn"])

    def test_older_banners_are_titled_as_syzkaller_titles_them(self):
        # With the blanks a terminal leaves after a line, or without.
        for banner, want in OLD_LOCKDEP:
            for blanks in ("", "      "):
                with self.subTest(banner + blanks):
                    got = console.crashes(LOCKDEP_BODY.replace("{banner}", banner + blanks))
                    self.assertEqual([c["culprit"] for c in got], [want])


class OneLine(unittest.TestCase):
    def test_a_whole_log_on_one_line(self):
        text = read(os.path.join(HERE, "console", "kasan-uaf.log"))
        want = crashes_of(text)
        self.assertTrue(want)
        self.assertEqual(crashes_of(" ".join(text.splitlines()) + "\n"), want)
        # Longer than printk's limit, and a log's only line: kept to be split.
        long = "".join(read(log) for log in GOLDEN if "real-" in log)
        want = crashes_of(long)
        self.assertGreater(len(long), 8 * MAX_LINE)
        for ends in ("\n", ""):
            self.assertEqual(crashes_of(" ".join(long.splitlines()) + ends), want)


if __name__ == "__main__":
    unittest.main(verbosity=2)
