#!/usr/bin/env python3
"""One guest run's outcome (docs/design-notes.md's table) from golden console logs and
declared signatures; crash grouping; the gate's comparison from a run.json."""
import json
import os
import re
import shutil
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from krepro import meta as metamod, paths, protocol  # noqa: E402
from krepro.results import gate  # noqa: E402
from krepro.reports import console, run_evidence, trace  # noqa: E402
from krepro.meta import Reproducer  # noqa: E402
from krepro.verdict import decide  # noqa: E402


def golden(name):
    with open(os.path.join(HERE, "console", name)) as f:
        return f.read()


def meta(name, *sigs, cases=("a",)):
    return Reproducer.from_json({"name": name, "cases": list(cases),
                                 "signatures": [dict(zip(("kind", "title", "frame"), s)) for s in sigs]})


BOOT = "[    2.0] krepro-init: started, uptime 2.0 s\n[    2.1] krepro-init: running x\n" \
       "[    2.2] krepro: x: start\n"
TCMU = meta("tcmu-uio-rmdir", ("KASAN", "use-after-free", "uio_unregister_device"))
CAN = meta("can-j1939-echo", ("REFCOUNT", "addition on 0", "j1939_.*"))


class Outcomes(unittest.TestCase):
    def test_signature_report_is_fail_even_if_repro_passed(self):
        r = decide(golden("kasan-uaf.log").replace("exit=1", "exit=0"), TCMU)
        self.assertEqual((r["outcome"], r["evidence"]),
                         ("FAIL", "KASAN: use-after-free in uio_unregister_device"))
        self.assertEqual(r["signature"], "report: KASAN: use-after-free in uio_unregister_device")

    def test_report_without_the_signature_frame_is_other(self):
        m = meta("tcmu-uio-rmdir", ("KASAN", "use-after-free", "some_other_function"))
        self.assertEqual(decide(golden("kasan-uaf.log"), m)["outcome"], "OTHER")

    def test_report_of_a_reproducer_without_signatures_is_other(self):
        r = decide(golden("kasan-uaf.log"), meta("tcmu-uio-rmdir"))
        self.assertEqual(r["outcome"], "OTHER")

    def test_refcount_and_its_warning_are_one_crash(self):
        cs = console.crashes(golden("refcount-warning.log"))
        self.assertEqual(len(cs), 1)
        self.assertEqual(cs[0]["headers"], [["REFCOUNT", "refcount_t: addition on 0; use-after-free"],
                                            ["WARNING", "WARNING in refcount_warn_saturate"]])
        self.assertIn("j1939_can_recv", cs[0]["frames"])
        self.assertEqual(decide(golden("refcount-warning.log"), CAN)["outcome"], "FAIL")

    def test_arm_fortify_is_one_crash_with_arm_frames(self):
        cs = console.crashes(golden("fortify-arm.log"))
        self.assertEqual(cs[0]["title"], "detected buffer overflow in memcpy")
        self.assertIn("fortify_panic", cs[0]["frames"])
        m = meta("arm-kprobe-fortify", ("BUG", "kernel BUG at lib/string_helpers.c", "fortify_panic"))
        self.assertEqual(decide(golden("fortify-arm.log"), m)["outcome"], "FAIL")

    def test_report_before_mark_is_broken(self):
        r = decide(golden("boot-kasan-before-mark.log"), meta("xfs-nowait-dio"))
        self.assertEqual(r["outcome"], "BROKEN")
        self.assertIn("before the test started", r["evidence"])

    def test_fault_injection_noise_is_not_a_report(self):
        self.assertEqual(decide(golden("fault-injection-noise.log"), meta("nvme-tcp-timeout"))["outcome"], "PASS")

    def test_no_init_is_broken(self):
        r = decide("[    0.1] Linux version 6.1\n", meta("x"), timed_out=True)
        self.assertEqual(r["outcome"], "BROKEN")
        self.assertIn("did not reach init", r["evidence"])

    def test_hang_is_hang_unless_declared(self):
        self.assertEqual(decide(BOOT, meta("x"), timed_out=True)["outcome"], "HANG")
        self.assertEqual(decide(BOOT, meta("x", ("HANG", None, None)), timed_out=True)["outcome"], "FAIL")

    def test_hung_task_report_then_hang(self):
        m = meta("nvme-tcp-timeout", ("HUNG", "task hung", None))
        r = decide(golden("hung-task.log"), m, timed_out=True)
        self.assertEqual(r["outcome"], "FAIL")
        self.assertTrue(r["evidence"].startswith("INFO: task hung (kworker/u4:2)"))
        self.assertEqual(decide(golden("hung-task.log"), meta("nvme-tcp-timeout"), timed_out=True)["outcome"],
                         "OTHER")

    def test_exit_codes(self):
        ktap = "# a: FAIL: block 0 was written\n"
        for code, outcome in ((0, "PASS"), (1, "FAIL"), (2, "BROKEN"), (4, "SKIP"), (3, "BROKEN")):
            r = decide(BOOT + f"[ 3.0] krepro-init: result name=x exit={code}\n", meta("x"), ktap)
            self.assertEqual(r["outcome"], outcome, code)
        r = decide(BOOT + "[ 3.0] krepro-init: result name=x exit=1\n", meta("x"), ktap)
        self.assertEqual((r["evidence"], r["signature"]), ("a: FAIL: block 0 was written", "own evidence"))

    def test_exit_1_without_own_evidence_is_other(self):
        # The harness failed the run on taint; no report on the console.
        ktap = "# FAIL: kernel taint went from 0 to 512 during the test\n"
        r = decide(BOOT + "[ 3.0] krepro-init: result name=x exit=1\n", meta("x"), ktap)
        self.assertEqual(r["outcome"], "OTHER")
        self.assertIn("taint", r["evidence"])

    def test_no_result_is_broken(self):
        self.assertEqual(decide(BOOT, meta("x"), qemu_status=1)["outcome"], "BROKEN")

    def test_other_repro_result_is_not_ours(self):
        r = decide(BOOT + "[ 3.0] krepro-init: result name=y exit=0\n", meta("x"))
        self.assertEqual(r["outcome"], "BROKEN")

    def test_real_runs(self):
        # Console logs saved from real guests: the boot itself is clean.
        self.assertEqual(decide(golden("real-xfs-nowait-dio-pass.log"), meta("xfs-nowait-dio"))["outcome"], "PASS")
        bad = decide(golden("real-xfs-nowait-dio-unpatched.log"), meta("xfs-nowait-dio", cases=("pwritev2",)),
                     ktap="# pwritev2: FAIL: block 0 byte 0 reads 0x42\n")
        self.assertEqual((bad["outcome"], bad["evidence"]), ("FAIL", "pwritev2: FAIL: block 0 byte 0 reads 0x42"))
        r = decide(golden("real-tcmu-uio-rmdir-unpatched.log"), TCMU)
        self.assertEqual((r["outcome"], r["evidence"]), ("FAIL", "KASAN: use-after-free in uio_unregister_device"))


def trace_frames(log):
    return console.crashes(log)[0]["trace_frames"]


NVME_LIST = (("LIST", "^list_(add|del) (corruption|double add)", "nvme_tcp_.*|nvme_cancel_(request|tagset)"),
             ("LIST", "^list_(add|del) (corruption|double add)", "blk_mq_(dispatch_rq_list|requeue_work)"))
RESULT1 = "[ 3.0] krepro-init: result name=x exit=1\n"


class Evidence(unittest.TestCase):
    """What a run's record keeps: the declared signature that matched, every
    case's own evidence whole, and the BROKEN cases a FAIL outranks."""

    def test_the_matching_signature_is_named(self):
        m = meta("nvme-tcp-timeout", ("BUG", "^kernel BUG at block/blk-mq", "nvme_tcp_timeout"), *NVME_LIST)
        r = decide(golden("real-nvme-tcp-timeout-unpatched-list-del.log"), m)
        self.assertEqual(r["outcome"], "FAIL")
        self.assertTrue(r["matched_signature"].startswith("#3 LIST /^list_(add|del)"), r["matched_signature"])
        self.assertTrue(r["matched_signature"].endswith(" in blk_mq_(dispatch_rq_list|requeue_work)"))
        r = decide(golden("real-nvme-tcp-timeout-unpatched-bug.log"), m)
        self.assertTrue(r["matched_signature"].startswith("#1 BUG "), r["matched_signature"])
        self.assertEqual(decide(BOOT, meta("x", ("HANG", None, None)), timed_out=True)["matched_signature"],
                         "#1 HANG")

    def test_own_evidence_of_every_case_kept_whole(self):
        cases = ("mount-replay", "punch", "write", "reflink")
        ktap = "".join(f"# {c}: FAIL: {c} " + "x" * 400 + "\n" for c in cases)
        r = decide(BOOT + RESULT1.replace("=x", "=xfs"), meta("xfs", cases=cases), ktap)
        self.assertEqual((r["outcome"], r["matched_signature"]), ("FAIL", "own evidence"))
        for c in cases:
            self.assertIn(f"{c}: FAIL: {c} " + "x" * 400, r["evidence"])

    def test_evidence_bounded(self):
        ktap = "".join(f"# a: FAIL: {i} " + "y" * 2000 + "\n" for i in range(40))
        r = decide(BOOT + RESULT1, meta("x"), ktap)
        self.assertLess(len(r["evidence"]), run_evidence.EVIDENCE_CHARS + 100)
        self.assertTrue(r["evidence"].endswith("(+24 more lines)"), r["evidence"][-40:])

    def test_fail_does_not_hide_a_broken_case(self):
        cases = ("mount-replay", "punch", "write")
        ktap = ("# mount-replay: FAIL: mount (log recovery) EUCLEAN (XFS: internal error in xfs_rmap.c)\n"
                "not ok 1 mount-replay # FAIL\n"
                "# punch: BROKEN: xfs.c:9: punching: fallocate EIO: no corruption report\n"
                "not ok 2 punch # BROKEN\nok 3 write\n")
        r = decide(BOOT + RESULT1, meta("x", cases=cases), ktap)
        self.assertEqual(r["outcome"], "FAIL")
        self.assertEqual(r["broken_cases"], ["punch: BROKEN: xfs.c:9: punching: fallocate EIO: no corruption report"])
        self.assertIn(" ; also BROKEN: punch: BROKEN: xfs.c:9", r["evidence"])
        # The harness's own line for a case that died names it too.
        ktap = "# punch: BROKEN: case killed by signal 9 (Killed)\nnot ok 1 punch # BROKEN\n"
        r = decide(BOOT + RESULT1.replace("exit=1", "exit=2"), meta("x", cases=cases), ktap)
        self.assertEqual((r["outcome"], r["broken_cases"]), ("BROKEN", ["punch: BROKEN: case killed by signal 9 (Killed)"]))
        self.assertNotIn("also BROKEN", r["evidence"])

    def test_unrelated_oops_killing_the_fortify_registration_is_other(self):
        # The case found no fortify report of its child (BROKEN); the
        # harness's scan failed the run on the kernel report: not this bug.
        m = meta("arm-kprobe-fortify", ("FORTIFY", "^detected buffer overflow in memcpy$", "fortify_panic"),
                 ("BUG", "^kernel BUG at lib/string_helpers\\.c:[0-9]+$", "(__)?fortify_panic"),
                 cases=("kprobe_events", "perf_kprobe_pmu"))
        boot = BOOT.replace(" x", " arm-kprobe-fortify")
        ktap = ("# kprobe_events: BROKEN: a.c:1: kprobe_events: the registering process (pid 52) was killed "
                "by signal 11 (Segmentation fault), but the kernel log has no fortify report\n"
                "not ok 1 kprobe_events # BROKEN\n# FAIL: the kernel logged 1 report(s) during the test\n")
        oops = "".join(f"[ 2.{i}] {l}\n" for i, l in enumerate(
            ["Unable to handle kernel NULL pointer dereference at virtual address 00000000",
             "Internal error: Oops: 5 [#1] SMP ARM", "PC is at some_driver_fn+0x10/0x20",
             "---[ end trace 0000000000000000 ]---"], 3))
        r = decide(boot + oops + RESULT1.replace("=x", "=arm-kprobe-fortify"), m, ktap)
        self.assertEqual(r["outcome"], "OTHER", r["evidence"])
        self.assertIn("also BROKEN: kprobe_events: BROKEN", r["evidence"])


class TraceFrames(unittest.TestCase):
    """What a signature's frame is matched against: the reliable frames of
    the crashing task's call trace, nothing else the report names."""

    def test_reliable_frames_with_irq_section_and_interrupted_regs(self):
        log = ("WARNING: CPU: 0 PID: 1 at lib/x.c:1 warn_fn+0x1/0x2\n"
               "Modules linked in: mod_fn\n"
               "RIP: 0010:warn_fn+0x1/0x2\n"
               "Call Trace:\n <IRQ>\n irq_fn+0x1/0x2\n ? guess_fn+0x1/0x2\n </IRQ>\n <TASK>\n"
               " asm_sysvec_apic_timer_interrupt+0x1a/0x20\n"
               "RIP: 0010:interrupted_fn+0x1/0x2\n"
               "RSP: 0018:ffffc90000003e38 EFLAGS: 00000246\n"
               " task_fn+0x1/0x2\n </TASK>\n"
               "---[ end trace 0000000000000000 ]---\n"
               "RIP: 0010:after_end_fn+0x1/0x2\n")
        self.assertEqual(trace_frames(log), ["warn_fn", "irq_fn", "asm_sysvec_apic_timer_interrupt",
                                             "interrupted_fn", "task_fn"])

    def test_kasan_alloc_and_free_stacks_are_not_the_trace(self):
        frames = console.crashes(golden("real-tcmu-uio-rmdir-unpatched.log"))[0]["trace_frames"]
        self.assertIn("uio_unregister_device", frames)
        for f in ("__uio_register_device", "tcmu_configure_device", "kobject_put", "device_release",
                  "detach_groups.isra.0", "tcmu_vma_close"):   # allocated, freed, or "? "
            self.assertNotIn(f, frames)

    # The logs below are written for these tests in the kernel's report
    # formats (the functions are made up).
    def test_kfence_access_stack_not_its_alloc_free_stacks(self):
        frames = trace_frames(
            "BUG: KFENCE: use-after-free read in reader_fn+0x1/0x2\n\n"
            "Use-after-free read at 0x00000000c0ffee00 (in kfence-#12):\n"
            " reader_fn+0x1/0x2\n caller_fn+0x1/0x2\n\n"
            "kfence-#12: 0x00000000c0ffee00-0x00000000c0ffee3f, size=64, cache=kmalloc-64\n\n"
            "allocated by task 7 on cpu 0 at 1.000000s:\n alloc_site_fn+0x1/0x2\n\n"
            "freed by task 7 on cpu 0 at 1.100000s:\n free_site_fn+0x1/0x2\n\n"
            "CPU: 0 PID: 7 Comm: t Not tainted 6.1.192 #1\n")
        self.assertEqual(frames, ["reader_fn", "caller_fn"])

    def test_kcsan_both_accesses_are_the_trace(self):
        frames = trace_frames(
            "BUG: KCSAN: data-race in left_fn / right_fn\n\n"
            "write to 0xffff888004000000 of 8 bytes by task 1 on cpu 0:\n"
            " left_fn+0x1/0x2\n left_caller+0x1/0x2\n\n"
            "read to 0xffff888004000000 of 8 bytes by task 2 on cpu 1:\n"
            " right_fn+0x1/0x2\n right_caller+0x1/0x2\n\n"
            "Reported by Kernel Concurrency Sanitizer on:\n")
        self.assertTrue({"left_fn", "left_caller", "right_fn", "right_caller"} <= set(frames))

    def test_lockdep_chains_and_held_locks_are_not_the_trace(self):
        frames = trace_frames(
            "WARNING: possible circular locking dependency detected\n"
            "6.1.192 #1 Not tainted\n------------------------------------------------------\n"
            "t/7 is trying to acquire lock:\n"
            "ffffffff82000000 (a_lock){+.+.}-{3:3}, at: taker_fn+0x1/0x2\n\n"
            "but task is already holding lock:\n"
            "ffffffff82000100 (b_lock){+.+.}-{3:3}, at: holder_fn+0x1/0x2\n\n"
            "which lock already depends on the new lock.\n\n"
            "the existing dependency chain (in reverse order) is:\n\n"
            "-> #1 (b_lock){+.+.}-{3:3}:\n       lock_acquire+0x1/0x2\n       chain_fn+0x1/0x2\n\n"
            "other info that might help us debug this:\n\n"
            "1 lock held by t/7:\n"
            " #0: ffffffff82000100 (b_lock){+.+.}-{3:3}, at: holder_fn+0x1/0x2\n\n"
            "stack backtrace:\nCPU: 0 PID: 7 Comm: t Not tainted 6.1.192 #1\n"
            "Call Trace:\n <TASK>\n dump_stack_lvl+0x1/0x2\n lock_acquire+0x1/0x2\n"
            " taker_fn+0x1/0x2\n syscall_fn+0x1/0x2\n </TASK>\n")
        self.assertIn("taker_fn", frames)
        self.assertIn("syscall_fn", frames)
        self.assertNotIn("chain_fn", frames)     # the existing chain
        self.assertNotIn("holder_fn", frames)    # held
        log = ("INFO: task a:1 blocked for more than 120 seconds.\n"
               "task:a               state:D stack:0     pid:1     ppid:0      flags:0x00004000\n"
               "Call Trace:\n <TASK>\n __schedule+0x1/0x2\n wait_fn+0x1/0x2\n </TASK>\n"
               "Showing all locks held in the system:\n"
               "1 lock held by kworker/0:1/9:\n"
               " #0: ffff888004a2c868 (&q->lock){+.+.}-{3:3}, at: lock_taker_fn+0x1/0x2\n"
               "NMI backtrace for cpu 1\n"
               "CPU: 1 PID: 0 Comm: swapper/1 Not tainted 6.1.192 #1\n"
               "Call Trace:\n <IRQ>\n other_cpu_fn+0x1/0x2\n </IRQ>\n")
        self.assertEqual(trace_frames(log), ["__schedule", "wait_fn"])

    def test_arm_backtraces_without_the_link_register(self):
        verbose = ("8<--- cut here ---\n"
                   "Unable to handle kernel NULL pointer dereference at virtual address 00000010\n"
                   "Internal error: Oops: 5 [#1] SMP ARM\n"
                   "PC is at fault_fn+0x1/0x2\nLR is at lr_fn+0x1/0x2\n"
                   "Backtrace: \n"
                   "[<c0100000>] (fault_fn) from [<c0100100>] (caller_fn+0x1/0x2)\n"
                   "[<c0100100>] (caller_fn) from [<c0100200>] (worker_fn+0x1/0x2)\n"
                   "---[ end trace 0000000000000000 ]---\n")
        self.assertEqual(trace_frames(verbose), ["fault_fn", "caller_fn", "worker_fn"])
        # CONFIG_BACKTRACE_VERBOSE off: "func from caller+off/size" (as the
        # arm-kprobe-fortify README quotes its report).
        bug = "kernel BUG at lib/string_helpers.c:1027!\nInternal error: Oops - BUG: 0 [#1] SMP ARM\n"
        pc = "PC is at fortify_panic+0x14/0x18\nLR is at lr_fn+0x1/0x2\n"
        entry = (" fortify_panic from arch_unoptimize_kprobe+0x0/0x4\n"
                 "Code: e34820b0 e3023400 e34830a7 e5911010 (e7922101)\n")
        log = bug + pc + "Call trace: \n" + entry
        self.assertEqual(trace_frames(log), ["fortify_panic", "arch_unoptimize_kprobe"])
        # 6.1's ARM unwinder (krepro's ARM kernels) prints no heading: the
        # Oops's stack dump, then the entries; a WARNING's dump_stack() has
        # no registers either.
        oops = (bug + "Modules linked in:\n"
                "CPU: 0 PID: 77 Comm: arm-kprobe-fort Not tainted 6.1.192 #1\n"
                "Hardware name: Generic DT based system\n" + pc +
                "pc : [<c0a1b2c4>]    lr : [<c0a1b2c4>]    psr: 600f0013\n"
                "Process arm-kprobe-fort (pid: 77, stack limit = 0x(ptrval))\n"
                "Stack: (0xc1d3de58 to 0xc1d3e000)\n"
                "de40:                                                       00000000 c1d3de70\n"
                + entry + "---[ end trace 0000000000000000 ]---\n")
        self.assertEqual(trace_frames(oops), ["fortify_panic", "arch_unoptimize_kprobe"])
        warn = ("WARNING: CPU: 0 PID: 1 at lib/x.c:1 warn_fn+0x1/0x2\n"
                "Modules linked in:\n"
                "CPU: 0 PID: 1 Comm: init Not tainted 6.1.192 #1\n"
                "Hardware name: Generic DT based system\n"
                " unwind_backtrace from show_stack+0x10/0x14\n"
                " show_stack from dump_stack_lvl+0x40/0x4c\n"
                " dump_stack_lvl from __warn+0x94/0xc0\n"
                " __warn from warn_slowpath_fmt+0x80/0xbc\n"
                " warn_slowpath_fmt from warn_fn+0x10/0x20\n"
                " warn_fn from caller_fn+0x1/0x2\n"
                "---[ end trace 0000000000000000 ]---\n")
        self.assertEqual(trace_frames(warn)[-2:], ["warn_fn", "caller_fn"])

    def test_the_next_report_ends_the_trace(self):
        log = ("BUG: KASAN: use-after-free in a_fn+0x1/0x2\nCall Trace:\n a_fn+0x1/0x2\n"
               "BUG: kernel NULL pointer dereference, address: 0000000000000000\n"
               "RIP: 0010:b_fn+0x1/0x2\nCall Trace:\n c_fn+0x1/0x2\n")
        self.assertEqual(trace_frames(log), ["a_fn"])


# Golden console logs of each reproducer's own bug, for its declared
# signatures. A name given as (log, other) is the log of reproducer `other`
# with the names swapped: the same blk-mq report on the other transport.
BUG_LOGS = {
    "arm-kprobe-fortify": ("fortify-arm.log",),
    "can-j1939-echo": ("real-can-j1939-echo-unpatched.log", "refcount-warning.log"),
    "nvme-rdma-timeout": ("real-nvme-rdma-timeout-unpatched-kasan.log",
                          "real-nvme-rdma-timeout-unpatched-list-del.log",
                          ("real-nvme-tcp-timeout-unpatched-list-add.log", "nvme-tcp-timeout"),
                          "nvme-rdma-start-twice.log"),
    "nvme-tcp-timeout": ("real-nvme-tcp-timeout-unpatched-bug.log",
                         "real-nvme-tcp-timeout-unpatched-list-add.log",
                         "real-nvme-tcp-timeout-unpatched-list-del.log"),
    "tcmu-uio-rmdir": ("real-tcmu-uio-rmdir-unpatched.log", "kasan-uaf.log"),
}
STAMP = re.compile(r"^\[\s*[0-9]+\.[0-9]+\] ?")


def built_signatures(repro):
    """The signatures build/repro/<id>.json declares, or why they cannot be
    read: the build is missing, or older than the reproducer's source."""
    path = os.path.join(paths.build(), "repro", repro + ".json")
    src = os.path.join(HERE, "..", "repro", repro, repro + ".c")
    if not os.path.exists(path):
        return None, f"no {path} (make build)"
    if os.path.getmtime(path) < os.path.getmtime(src):
        return None, f"{path} is older than {src} (make build)"
    return Reproducer.from_json(metamod.read(path)).signatures, None


def bug_log(entry, repro):
    name, other = (entry, repro) if isinstance(entry, str) else entry
    return name, golden(name).replace(other, repro)


def trace_end(lines, opened, patterns):
    """Where the trace that opens at line `opened` ends (TraceReader's rule)."""
    for i in range(opened + 1, len(lines)):
        line = STAMP.sub("", lines[i])
        if not line.strip() or trace.TRACE_CLOSE.match(line) or console.classify_line(line, patterns):
            return i
    return len(lines)


def up_to_crash(text, line):
    """The console up to the end of the crash whose first header is on
    `line`, and the lines of init's results after it: a later report of the
    same bug does not decide the run."""
    lines = text.splitlines()
    end = next((i for i in range(line, len(lines)) if console.REPORT_END.match(STAMP.sub("", lines[i]))),
               len(lines) - 1)
    return lines[:end + 1] + [l for l in lines[end + 1:] if protocol.RESULT_RE.match(STAMP.sub("", l))]


def look_alikes(text, names, line):
    """Copies of a bug's console log, up to the end of its crash on `line`,
    in which no function of `names` (what a signature's frame matched in
    that crash) is a reliable frame of the crashing task's trace: renamed
    wherever a line that is no report header names it, then one named again
    only as an unreliable frame (x86 "? f", ARM's "LR is at f"), only in a
    KASAN "Freed by task" stack, or only in a lockdep held-lock list, both
    where the trace ends."""
    patterns = console.load_patterns()
    named = re.compile(r"(?<![A-Za-z0-9_.])(" + "|".join(map(re.escape, names)) + r")(?=\+0x| from |\))")
    lines = [l if console.classify_line(STAMP.sub("", l), patterns) else named.sub("krepro_other_fn", l)
             for l in up_to_crash(text, line)]
    bare = [STAMP.sub("", l) for l in lines]
    pc = next((i for i, l in enumerate(bare) if l.startswith("PC is at ")), None)
    opened = next((i for i, l in enumerate(bare) if trace.TRACE_OPEN.match(l)), None)
    if pc is not None:
        unreliable = (pc + 1, [f"LR is at {names[0]}+0x10/0x20"])
    else:
        at = opened + 1 + (bare[opened + 1].strip() in ("<TASK>", "<IRQ>"))
        unreliable = (at, [f" ? {names[0]}+0x10/0x20"])
    end = trace_end(lines, opened, patterns) if opened is not None else len(lines)
    freed = (end, ["Freed by task 1:", " kasan_save_stack+0x2f/0x50", f" {names[0]}+0x10/0x20"])
    held = (end, ["1 lock held by kworker/0:1/9:",
                  f" #0: ffff888004a2c868 (&q->lock){{+.+.}}-{{3:3}}, at: {names[0]}+0x10/0x20"])
    out = {}
    for variant, (at, new) in (("unreliable", unreliable), ("freed", freed), ("held", held)):
        stamp = STAMP.match(lines[at - 1])
        out[variant] = "\n".join(lines[:at] + [(stamp.group(0) if stamp else "") + n for n in new]
                                 + lines[at:]) + "\n"
    return out


class DeclaredSignatures(unittest.TestCase):
    """Each reproducer's real signatures (its built metadata) against golden
    logs: FAIL on a log of its bug, OTHER on look-alikes that keep the
    report's kind and title but name the bug's code only where it is not
    the crashing task's trace."""

    def repros(self):
        found = []
        for repro in sorted(os.listdir(os.path.join(HERE, "..", "repro"))):
            if not os.path.exists(os.path.join(HERE, "..", "repro", repro, repro + ".c")):
                continue
            sigs, why = built_signatures(repro)
            if why:
                print(f"skipped {repro}: {why}", file=sys.stderr)
            elif [s for s in sigs if not s.is_hang]:
                found.append((repro, sigs))
        return found

    def test_every_report_signature_names_a_frame_and_has_a_bug_log(self):
        for repro, sigs in self.repros():
            with self.subTest(repro=repro):
                self.assertIn(repro, BUG_LOGS, "a reproducer with report signatures needs a golden log of its bug")
                for s in sigs:
                    if not s.is_hang:
                        self.assertTrue(s.frame, f"{s} names no frame")

    def test_bug_logs_fail_and_look_alikes_are_other(self):
        for repro, sigs in self.repros():
            meta_ = Reproducer(name=repro, signatures=sigs)
            for entry in BUG_LOGS.get(repro, ()):
                name, text = bug_log(entry, repro)
                with self.subTest(repro=repro, log=name):
                    res = decide(text, meta_)
                    self.assertEqual(res["outcome"], "FAIL", res["evidence"])
                    crash = next(r for r in res["reports"] if r.get("bug"))
                    for sig in (s for s in sigs if console.signature_matches(crash, s)):
                        names = [f for f in crash["trace_frames"] if re.fullmatch(sig.frame, f)]
                        for variant, fake in look_alikes(text, names, crash["line"]).items():
                            other = decide(fake, meta_)
                            self.assertEqual(other["outcome"], "OTHER", f"{sig.frame} {variant}")
                            self.assertIn(crash["headers"], [r["headers"] for r in other["reports"]])


class Gate(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()
        self.rows, self.runs = [], []

    def tearDown(self):
        shutil.rmtree(self.dir)

    def row(self, repro, kernel, decision):
        self.rows.append({"repro": repro, "kernel": kernel, "decision": decision, "cell": f"{decision} 1/1"})
        self.runs.append({"repro": repro, "kernel": kernel, "outcome": decision, "run": 1,
                          "evidence": f"{decision} evidence", "log": f"{repro}.{kernel}.1/console.log"})

    def gate(self, finished=True):
        with open(os.path.join(self.dir, "run.json"), "w") as f:
            json.dump({"rows": self.rows, "runs": self.runs, "finished": "now" if finished else None}, f)
        code = gate.gate(self.dir, "base", "base+series")
        with open(os.path.join(self.dir, "gate.md")) as f:
            return code, f.read()

    def test_regressions_fixes_unchanged(self):
        for repro, b, s in (("a", "PASS", "FAIL"), ("b", "FAIL", "PASS"), ("c", "PASS", "PASS"),
                            ("o", "PASS", "OTHER")):
            self.row(repro, "base", b)
            self.row(repro, "base+series", s)
        code, md = self.gate()
        self.assertEqual(code, 1)
        self.assertIn("| a | PASS 1/1 | FAIL 1/1 | regression | FAIL evidence (a.base+series.1/console.log) |", md)
        self.assertIn("| b | FAIL 1/1 | PASS 1/1 | fix |", md)
        self.assertIn("| c | PASS 1/1 | PASS 1/1 | unchanged |", md)
        self.assertIn("| o | PASS 1/1 | OTHER 1/1 | regression |", md)
        self.assertIn("the series broke these): a, o", md)

    def test_undecided_and_missing(self):
        self.row("a", "base", "PASS")
        self.row("a", "base+series", "BROKEN")
        self.row("m", "base", "PASS")
        code, md = self.gate()
        self.assertEqual(code, 125)
        self.assertIn("| m | PASS 1/1 | MISSING | undecided |", md)

    def test_partial_run_is_undecided(self):
        self.row("c", "base", "PASS")
        self.row("c", "base+series", "PASS")
        code, md = self.gate(finished=False)
        self.assertEqual(code, 125)
        self.assertIn("PARTIAL", md)


if __name__ == "__main__":
    unittest.main(verbosity=2)
