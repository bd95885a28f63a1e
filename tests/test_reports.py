#!/usr/bin/env python3
"""Verdict rules (DESIGN.md) and the run reports: Markdown, KTAP, JUnit XML."""
import json
import os
import shutil
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
import krepro  # noqa: E402


def golden(name):
    with open(os.path.join(HERE, "console", name)) as f:
        return f.read()


BOOT = "[    2.0] krepro-init: started, uptime 2.0 s\n[    2.1] krepro-init: running x\n" \
       "[    2.2] krepro: x: start\n"


class Verdicts(unittest.TestCase):
    def test_report_after_mark_is_fail_even_if_repro_passed(self):
        r = krepro.decide(golden("kasan-uaf.log").replace("exit=1", "exit=0"), "tcmu-uio-rmdir")
        self.assertEqual(r["verdict"], "FAIL")
        self.assertEqual(r["evidence"], "KASAN: use-after-free in uio_unregister_device")

    def test_report_before_mark_is_broken(self):
        r = krepro.decide(golden("boot-kasan-before-mark.log"), "xfs-nowait-dio")
        self.assertEqual(r["verdict"], "BROKEN")
        self.assertIn("before the test started", r["evidence"])

    def test_fault_injection_noise_is_not_a_report(self):
        r = krepro.decide(golden("fault-injection-noise.log"), "nvme-tcp-timeout")
        self.assertEqual(r["verdict"], "PASS")

    def test_no_init_is_broken(self):
        r = krepro.decide("[    0.1] Linux version 6.1\n", "x", timed_out=True)
        self.assertEqual(r["verdict"], "BROKEN")
        self.assertIn("did not reach init", r["evidence"])

    def test_hang_is_fail(self):
        r = krepro.decide(BOOT, "x", timed_out=True)
        self.assertEqual((r["verdict"], r["evidence"]), ("FAIL", "hang: no result within the time limit"))

    def test_hang_with_report_names_report(self):
        r = krepro.decide(golden("hung-task.log"), "nvme-tcp-timeout", timed_out=True)
        self.assertEqual(r["verdict"], "FAIL")
        self.assertTrue(r["evidence"].startswith("INFO: task hung (kworker/u4:2)"))

    def test_exit_codes(self):
        ktap = "# pwritev2: FAIL: block 0 was written\n"
        for code, verdict in ((0, "PASS"), (1, "FAIL"), (2, "BROKEN"), (4, "SKIP"), (3, "BROKEN")):
            r = krepro.decide(BOOT + f"[ 3.0] krepro-init: result name=x exit={code}\n", "x", ktap=ktap)
            self.assertEqual(r["verdict"], verdict, code)
        r = krepro.decide(BOOT + "[ 3.0] krepro-init: result name=x exit=1\n", "x", ktap=ktap)
        self.assertEqual(r["evidence"], "pwritev2: FAIL: block 0 was written")

    def test_no_result_is_broken(self):
        r = krepro.decide(BOOT, "x", qemu_status=1)
        self.assertEqual(r["verdict"], "BROKEN")

    def test_other_repro_result_is_not_ours(self):
        r = krepro.decide(BOOT + "[ 3.0] krepro-init: result name=y exit=0\n", "x")
        self.assertEqual(r["verdict"], "BROKEN")

    def test_real_runs(self):
        # Console logs saved from make repro-all: the boot itself is clean.
        ok = krepro.decide(golden("real-xfs-nowait-dio-pass.log"), "xfs-nowait-dio")
        self.assertEqual(ok["verdict"], "PASS")
        bad = krepro.decide(golden("real-xfs-nowait-dio-unpatched.log"), "xfs-nowait-dio",
                            ktap="# pwritev2: FAIL: block 0 byte 0 reads 0x42\n")
        self.assertEqual((bad["verdict"], bad["evidence"]),
                         ("FAIL", "pwritev2: FAIL: block 0 byte 0 reads 0x42"))

    def test_real_kasan_run(self):
        r = krepro.decide(golden("real-tcmu-uio-rmdir-unpatched.log"), "tcmu-uio-rmdir")
        self.assertEqual((r["verdict"], r["evidence"]),
                         ("FAIL", "KASAN: use-after-free in uio_unregister_device"))

    def test_bisect_status(self):
        self.assertEqual(krepro.bisect_status(["PASS", "PASS"]), 0)
        self.assertEqual(krepro.bisect_status(["PASS", "FAIL", "BROKEN"]), 1)
        self.assertEqual(krepro.bisect_status(["PASS", "SKIP"]), 125)


class Reports(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def add_run(self, repro, kernel, n, console, exit_line=True):
        d = os.path.join(self.dir, f"{repro}.{kernel}.{n}")
        os.makedirs(d)
        with open(os.path.join(d, "console.log"), "w") as f:
            f.write(console)
        with open(os.path.join(d, "ktap.txt"), "w") as f:
            f.write("KTAP version 1\n1..1\nok 1 a\n")
        krepro.cmd_verdict(d, [f"repro={repro}", f"kernel={kernel}", f"run={n}",
                               "timed_out=false", "qemu_status=0", "seconds=4.2"])

    def test_matrix_as_expected(self):
        boot = BOOT.replace(" x", " r")
        self.add_run("r", "unpatched", 1, boot + "[ 3.0] krepro-init: result name=r exit=1\n")
        self.add_run("r", "patched", 1, boot + "[ 3.0] krepro-init: result name=r exit=0\n")
        self.assertEqual(krepro.cmd_report(self.dir, expect=True), 0)
        with open(os.path.join(self.dir, "summary.md")) as f:
            md = f.read()
        self.assertIn("| r | unpatched | 1 | FAIL 1, PASS 0, BROKEN 0 | 4.2/4.2/4.2 | FAIL ok |", md)
        self.assertIn("r.unpatched.1/console.log", md)
        root = ET.parse(os.path.join(self.dir, "junit.xml")).getroot()
        self.assertEqual(root.get("tests"), "2")
        self.assertEqual(root.get("failures"), "1")
        with open(os.path.join(self.dir, "results.ktap")) as f:
            ktap = f.read()
        self.assertIn("ok 1 r.patched.1", ktap)
        self.assertIn("ok 2 r.unpatched.1", ktap)

    def test_unexpected_pass_on_unpatched(self):
        boot = BOOT.replace(" x", " r")
        self.add_run("r", "unpatched", 1, boot + "[ 3.0] krepro-init: result name=r exit=0\n")
        self.assertEqual(krepro.cmd_report(self.dir, expect=True), 1)
        self.assertEqual(krepro.cmd_report(self.dir, expect=False), 0)
        with open(os.path.join(self.dir, "r.unpatched.1", "verdict.json")) as f:
            self.assertEqual(json.load(f)["verdict"], "PASS")


class Rendering(unittest.TestCase):
    """Failure details, rates, incomplete directories, the gate's comparison."""

    def setUp(self):
        self.dir = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.dir)

    def add(self, repro, kernel, n, console, ktap="", secs="5.0", fix="abc123 (\"x: fix it\")"):
        d = os.path.join(self.dir, f"{repro}.{kernel}.{n}")
        os.makedirs(d)
        with open(os.path.join(d, "console.log"), "w") as f:
            f.write(console)
        with open(os.path.join(d, "ktap.txt"), "w") as f:
            f.write(ktap)
        krepro.cmd_verdict(d, [f"repro={repro}", f"kernel={kernel}", f"run={n}", "timed_out=false",
                               "qemu_status=0", f"seconds={secs}", f"fix={fix}"])
        return d

    def summary(self):
        with open(os.path.join(self.dir, "summary.md")) as f:
            return f.read()

    def test_kernel_report_failure_details(self):
        self.add("tcmu-uio-rmdir", "unpatched", 1, golden("real-tcmu-uio-rmdir-unpatched.log"))
        krepro.cmd_report(self.dir, expect=False)
        md = self.summary()
        self.assertIn("### tcmu-uio-rmdir on unpatched: FAIL in 1 of 1 runs", md)
        self.assertIn("- report: KASAN: use-after-free in uio_unregister_device", md)
        self.assertIn('- expected fix: abc123 ("x: fix it")', md)
        # The excerpt starts at the report's own line in the console.
        excerpt = md.split("```")[1].strip().splitlines()
        self.assertIn("BUG: KASAN: use-after-free in uio_unregister_device", excerpt[0])
        self.assertGreater(len(excerpt), 5)

    def test_reproducer_failure_details(self):
        boot = BOOT.replace(" x", " r")
        ktap = "KTAP version 1\n1..1\n# pwritev2: FAIL: block 0 byte 0 reads 0x42\nnot ok 1 pwritev2\n"
        self.add("r", "unpatched", 1, boot + "[ 3.0] krepro-init: result name=r exit=1\n", ktap)
        krepro.cmd_report(self.dir, expect=False)
        md = self.summary()
        self.assertIn("- report: pwritev2: FAIL: block 0 byte 0 reads 0x42", md)
        self.assertIn("```\n# pwritev2: FAIL: block 0 byte 0 reads 0x42\n```", md)

    def test_rates_and_times_over_repeats(self):
        boot = BOOT.replace(" x", " r")
        for n, (code, secs) in enumerate(((1, "7.0"), (0, "5.0"), (1, "9.5"), (2, "6.0")), 1):
            self.add("r", "unpatched", n, boot + f"[ 3.0] krepro-init: result name=r exit={code}\n",
                     secs=secs)
        self.assertEqual(krepro.cmd_report(self.dir, expect=True), 1)
        self.assertIn("| r | unpatched | 4 | FAIL 2, PASS 1, BROKEN 1 | 5.0/6.5/9.5 | FAIL **UNEXPECTED** |",
                      self.summary())
        self.assertIn("FAIL in 2 of 4 runs", self.summary())

    def test_incomplete_directory(self):
        boot = BOOT.replace(" x", " r")
        d = self.add("r", "patched", 1, boot + "[ 3.0] krepro-init: result name=r exit=0\n")
        os.remove(os.path.join(d, "ktap.txt"))
        os.makedirs(os.path.join(self.dir, "r.patched.2"))          # interrupted run
        with open(os.path.join(self.dir, "r.patched.3.bad"), "w"):   # not a run dir
            pass
        os.makedirs(os.path.join(self.dir, "r.unpatched.1"))
        with open(os.path.join(self.dir, "r.unpatched.1", "verdict.json"), "w") as f:
            f.write("{not json")
        self.assertEqual(krepro.cmd_report(self.dir, expect=False), 0)
        md = self.summary()
        self.assertIn("| r | patched | 1 | FAIL 0, PASS 1, BROKEN 0 |", md)
        self.assertIn("## Missing from this directory", md)
        self.assertIn("- r.patched.1: no ktap.txt", md)
        self.assertIn("- r.patched.2: no verdict.json", md)
        self.assertIn("- r.unpatched.1: verdict.json unreadable", md)
        self.assertTrue(os.path.isfile(os.path.join(self.dir, "junit.xml")))

    def test_rerender_is_stable(self):
        boot = BOOT.replace(" x", " r")
        self.add("r", "unpatched", 1, boot + "[ 3.0] krepro-init: result name=r exit=1\n")
        krepro.cmd_report(self.dir, expect=False)
        first = self.summary()
        os.remove(os.path.join(self.dir, "summary.md"))
        krepro.cmd_report(self.dir, expect=False)
        self.assertEqual(first, self.summary())

    def gate_run(self, repro, base_codes, series_codes):
        boot = BOOT.replace(" x", f" {repro}")
        for kernel, codes in (("base", base_codes), ("base+series", series_codes)):
            for n, code in enumerate(codes, 1):
                self.add(repro, kernel, n, boot + f"[ 3.0] krepro-init: result name={repro} exit={code}\n")

    def gate_md(self):
        with open(os.path.join(self.dir, "gate.md")) as f:
            return f.read()

    def test_gate_regression(self):
        self.gate_run("a", [0, 0], [0, 1])      # one FAIL in two runs is a FAIL
        self.gate_run("b", [1], [0])
        self.gate_run("c", [0], [0])
        self.assertEqual(krepro.cmd_gate(self.dir, "base", "base+series"), 1)
        md = self.gate_md()
        self.assertIn("| a | PASS | FAIL | regression |", md)
        self.assertIn("| b | FAIL | PASS | fix |", md)
        self.assertIn("| c | PASS | PASS | unchanged |", md)
        self.assertIn("- REGRESSIONS (PASS->FAIL: the series broke these): a", md)
        self.assertIn("- FIXES (FAIL->PASS: the series cures these): b", md)

    def test_gate_fixes_only(self):
        self.gate_run("b", [1], [0])
        self.gate_run("s", [4], [4])            # SKIP both sides: unchanged
        self.assertEqual(krepro.cmd_gate(self.dir, "base", "base+series"), 0)
        self.assertIn("| s | SKIP | SKIP | unchanged |", self.gate_md())

    def test_gate_undecided(self):
        self.gate_run("a", [0], [2])
        self.gate_run("m", [0], [])             # never ran on the series kernel
        self.assertEqual(krepro.cmd_gate(self.dir, "base", "base+series"), 125)
        md = self.gate_md()
        self.assertIn("| a | PASS | BROKEN | undecided |", md)
        self.assertIn("| m | PASS | MISSING | undecided |", md)

    def test_row_verdict(self):
        v = lambda *vs: krepro.row_verdict([{"verdict": x} for x in vs])
        self.assertEqual(v("PASS", "FAIL", "BROKEN"), "FAIL")
        self.assertEqual(v("PASS", "PASS"), "PASS")
        self.assertEqual(v("PASS", "BROKEN"), "BROKEN")
        self.assertEqual(v("SKIP"), "SKIP")


if __name__ == "__main__":
    unittest.main(verbosity=2)
