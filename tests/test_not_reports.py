#!/usr/bin/env python3
"""Logs with no kernel report whose lines look like one: krepro must say
"no kernel report" for each, as syzkaller would (its ignore and
suppression lists, pkg/report/linux.go, learned not copied), on both of
its readers: the run's (console.crashes(), what decide() reads) and the
classify command's (classify.reports_of(), logs as users paste them).

Each case is lines written for this test, put into a real PASS console of
a krepro guest (tests/console) right after the reproducer's start mark."""
import io
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from krepro.reports import classify, console  # noqa: E402
from krepro.verdict import decide  # noqa: E402
from krepro.meta import Reproducer  # noqa: E402

PASS_LOG = "guest-bpf-percpu-reuse-patched-1.log"
MARK = "krepro: bpf-percpu-reuse: start\n"
T = "[    6.700000] "

# (what, lines, why syzkaller sees no report)
CASES = (
    ("a program's tool says BUG", "BUG: no syscalls can create resource fd_bpf_map\n",
     "on its BUG: list of lines that are not reports"),
    ("glibc's loader warns", "WARNING: Unsupported flag value(s) of 0x8000001 in DT_FLAGS_1.\n",
     "on its WARNING: list"),
    ("a mitigation notice", T + "WARNING: See https://docs.example/hw-vuln/x.html for mitigation options.\n",
     "on its WARNING: list"),
    ("a user program's general protection fault",
     T + "general protection fault ip:7feb96eb56a1 sp:20000fd0 error:0 in prog[400000+1b6000]\n"
     + T + "traps: prog[412] general protection fault ip:7f3a2b1c sp:7ffc9a8 error:0 in libc.so.6[7f3a2b000+155000]\n",
     "a fault in user space, not the kernel's: its general protection fault exception"),
    ("a program says Oops", "Oops: could not read /etc/prog.conf\n",
     "no kernel report starts with a bare \"Oops:\"; the kernel's carries its [#N] count"),
    ("the boot stub's line quoted back by a mount",
     T + "fuse: Unknown parameter '   Decompressing Linux... Parsing ELF... done.   Booting the kernel.   '\n",
     "its reboot header is ignored in a line saying Unknown parameter or Decompressing Linux"),
    ("a loader line like the boot stub's", "Booting the kernel (entry_offset: 0x0000000000000000).\n",
     "the header is \"Booting the kernel.\" with its full stop"),
    ("a call trace a program prints", "Call Trace:\n foo+0x1/0x2\n bar+0x3/0x4\n",
     "a stack alone starts no report"),
    ("SysRq's backtrace of all CPUs",
     T + "sysrq: Show backtrace of all active CPUs\n" + T + "NMI backtrace for cpu 0\n"
     + T + "CPU: 0 PID: 0 Comm: swapper/0 Not tainted 6.1.0 #1\n" + T + "RIP: 0010:default_idle+0xb/0x10\n"
     + T + "Call Trace:\n" + T + " <TASK>\n" + T + " default_idle_call+0x1/0x2\n" + T + " </TASK>\n",
     "a dump asked for, no report header"),
    ("SysRq's blocked tasks",
     T + "sysrq: Show Blocked State\n"
     + T + "task:kworker/0:1     state:D stack:0     pid:12    ppid:2      flags:0x00004000\n"
     + T + "Call Trace:\n" + T + " __schedule+0x1/0x2\n",
     "no report header"),
    ("KTAP lines around a report's stray lines",
     "ok 1 - percpu_hash\n ? foo+0x1/0x2\n" + T + "---[ end trace 0000000000000000 ]---\n"
     + T + "Code: 48 89 e5 <0f> 0b\nnot ok 2 - lru_percpu_hash\n",
     "frames, an end line and code bytes start no report"),
    ("a cut-here line alone", T + "------------[ cut here ]------------\n", "no report header"),
    ("user space's stack protector", "*** stack smashing detected ***: terminated\n", "no kernel header"),
    ("lockdep switched off", T + "INFO: lockdep is turned off.\n", "on its INFO: list"),
    ("a slow NMI handler", T + "INFO: NMI handler (perf_event_nmi_handler) took too long to run: 2.3 msecs\n",
     "on its INFO: list"),
    ("BTF's INFO", T + "INVALID BTF_INFO:1\n", "on its INFO: list"),
    ("a vendor daemon's INFO", "rmt_storage:INFO:check_support: modem found\n", "on its INFO: list"),
    ("Android's debug output", "DEBUG: BUG: #15 pc 000000000045c4a0 /system/lib64/libart.so\n",
     "on its BUG: list"),
    ("a file system's warning", T + "EXT4-fs (loop0): WARNING: mounting fs with errors, running e2fsck\n"
     + T + "XFS (loop0): WARNING: Reset corrupted AGFL on AG 0.\n", "on its WARNING: list"),
    ("sshd", "WARNING: /etc/ssh/moduli does not exist, using fixed modulus\n", "on its WARNING: list"),
)


def with_lines(lines):
    with open(os.path.join(HERE, "console", PASS_LOG)) as f:
        text = f.read()
    assert MARK in text
    at = text.index(MARK) + len(MARK)
    return text[:at] + lines + text[at:]


class NotReports(unittest.TestCase):
    def test_the_base_log_has_no_report(self):
        self.assertEqual(console.crashes(with_lines("")), [])

    def test_look_alikes(self):
        for what, lines, why in CASES:
            with self.subTest(what, syzkaller=why):
                self.assertEqual([c["culprit"] for c in console.crashes(with_lines(lines))], [])

    def test_look_alikes_pasted(self):
        # All in one log: a report any of them made would be listed (the
        # command's reader takes a second a log to set up).
        text = with_lines("".join(lines for _, lines, _ in CASES))
        self.assertEqual([c["culprit"] for c, _ in classify.reports_of(io.StringIO(text))], [])

    def test_a_run_with_look_alikes_still_passes(self):
        meta = Reproducer.from_json({"name": "bpf-percpu-reuse", "cases": ["percpu_hash"], "signatures": []})
        text = with_lines("".join(lines for _, lines, _ in CASES))
        self.assertEqual(decide(text, meta)["outcome"], "PASS")

    def test_the_kernels_own_lines_still_count(self):
        # The narrower rows still take the kernel's lines they stand beside.
        for line, title in (("Oops: 0000 [#1] PREEMPT SMP", "Oops in victim_fn"),
                            ("general protection fault, probably for non-canonical address "
                             "0xdffffc0000000001: 0000 [#1] PREEMPT SMP", "general protection fault in victim_fn"),
                            ("WARNING: CPU: 0 PID: 1 at mm/x.c:10 victim_fn+0x1/0x2", "WARNING in victim_fn"),
                            ("BUG: unable to handle page fault for address: ffff8880",
                             "BUG: unable to handle kernel paging request in victim_fn")):
            with self.subTest(line):
                text = with_lines(T + line + "\n" + T + "RIP: 0010:victim_fn+0x1/0x2\n"
                               + T + "Call Trace:\n" + T + " victim_fn+0x1/0x2\n" + T + " caller+0x1/0x2\n")
                self.assertEqual([c["culprit"] for c in console.crashes(text)], [title])


if __name__ == "__main__":
    unittest.main(verbosity=2)
