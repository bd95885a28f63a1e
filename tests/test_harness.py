#!/usr/bin/env python3
"""Harness unit tests: run the fake reproducer against the test build of the
harness (guest marker, kmsg, config and taint in files) and check exit codes,
KTAP and evidence; check that the real build refuses to run on the host and
that --describe is the declaration as JSON."""
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import meta as metamod  # noqa: E402
from krepro.reports import run_evidence  # noqa: E402

# FAKE_OTHER_ARCH: the fake built with KREPRO_ARCHES="sparc64 s390".
FAKE, FAKE_REAL, WORK, XFS_REPRO, FAKE_OTHER_ARCH = sys.argv[1:6]
del sys.argv[1:6]


def path(name):
    return os.path.join(WORK, name)


class Harness(unittest.TestCase):
    def setUp(self):
        os.makedirs(WORK, exist_ok=True)
        with open(path("cmdline"), "w") as f:
            f.write("console=ttyS0 krepro.guest=1 krepro.run=fake-repro\n")
        open(path("kmsg"), "w").close()
        with open(path("tainted"), "w") as f:
            f.write("0\n")
        with gzip.open(path("config.gz"), "wt") as f:
            f.write("CONFIG_XFS_FS=y\n# CONFIG_KREPRO_FAKE_OPTION is not set\n")

    def run_fake(self, binary=None, **env):
        e = {k: v for k, v in os.environ.items() if not k.startswith("FAKE_")}
        e["FAKE_KMSG"] = path("kmsg")
        e.update(env)
        p = subprocess.run([binary or FAKE], env=e, capture_output=True, text=True, timeout=60)
        return p.returncode, p.stdout, p.stderr

    def expect(self, rc, text, binary=None, **env):
        """Run the fake reproducer: its exit status and a line of its output."""
        got, out, _ = self.run_fake(binary, **env)
        self.assertEqual(got, rc, out)
        self.assertIn(text, out)
        return out

    def test_pass(self):
        rc, out, _ = self.run_fake()
        self.assertEqual(rc, 0, out)
        self.assertTrue(out.startswith("KTAP version 1\n"), out)
        self.assertIn("1..3\n", out)
        self.assertIn("\nok 1 first\n", out)
        self.assertIn("\nok 2 second\n", out)
        self.assertIn("\nok 3 kernel-report-scan\n", out)
        self.assertIn("# Totals: pass:3 fail:0", out)
        with open(path("kmsg")) as f:
            kmsg = f.read()
        self.assertIn("<5>krepro: fake-repro: start\n", kmsg)
        self.assertIn("<5>krepro: fake-repro: end PASS\n", kmsg)

    def test_fail_wins_and_keeps_evidence(self):
        out = self.expect(1, "# first: FAIL: first read back 0x42 at offset 0, wrote 0x41",
                          FAKE_first="fail", FAKE_second="skip")
        self.assertIn("not ok 1 first # FAIL", out)
        self.assertIn("ok 2 second # SKIP", out)
        self.assertIn('hint: this is the bug fixed upstream by 0123456789ab ("fake: fix")', out)

    def test_fail_says_what_broken_it_outranks(self):
        out = self.expect(1, "# also BROKEN: 1 case(s) could not be judged (above); the FAIL does not cover them",
                          FAKE_first="fail", FAKE_second="broken")
        self.assertIn("not ok 2 second # BROKEN", out)
        _, out, _ = self.run_fake(FAKE_first="fail")
        self.assertNotIn("also BROKEN", out)

    def test_broken_case(self):
        rc, out, _ = self.run_fake(FAKE_second="broken")
        self.assertEqual(rc, 2, out)
        self.assertRegex(out, r"# second: BROKEN: .*fake-repro.c:\d+: second cannot set up")

    def test_skip_is_not_pass(self):
        rc, out, _ = self.run_fake(FAKE_second="skip")
        self.assertEqual(rc, 4, out)

    def test_case_without_verdict_is_broken(self):
        self.expect(2, "case ended without a verdict", FAKE_first="none")

    def test_race_ends_at_its_window_hits(self):
        out = self.expect(0, "# first: PASS: not reproduced in 5 rounds / ", FAKE_first="race-covered")
        self.assertIn("5 window hits (fake hits): nothing seen", out)
        self.assertIn("(bound: 5 window hits; caps 100 rounds / 60 s); 5 window hits", out)
        self.assertEqual(run_evidence.window_hits(out), 5)

    def test_race_capped_before_its_hits_is_broken(self):
        self.expect(2, "the race stopped after 4 rounds / ", FAKE_first="race-capped")

    def test_race_evidence_prints_the_hits_it_took(self):
        out = self.expect(1, "# first: FAIL: the fake race's evidence", FAKE_first="race-evidence")
        self.assertIn(", stopped early; 3 window hits (fake hits)", out)
        self.assertEqual(run_evidence.window_hits(out), 3)
        self.assertIsNone(run_evidence.window_hits("# race: no count\n# race: 3 rounds; 2 window hits\n"))

    def test_crash_is_broken(self):
        self.expect(2, "killed by signal 6", FAKE_first="crash")

    def child(self, what):
        """Run a child through krepro_run_child() with a 0.5 s deadline: the
        run's output, and how the case's PASS line says it ended."""
        rc, out, _ = self.run_fake(FAKE_first="child-" + what)
        self.assertEqual(rc, 0, out)
        m = re.search(r"# first: PASS: child (exited|killed|timed out|stuck), exit code (\d+), "
                      r"signal (\d+), after ([\d.]+) s; (reaped|still there)\n", out)
        self.assertIsNotNone(m, out)
        self.assertEqual(out.count("# before the child\n"), 1, out)
        return out, m.group(1), int(m.group(2)), int(m.group(3)), float(m.group(4)), m.group(5)

    def test_child_returns(self):
        out, end, code, sig, seconds, reaped = self.child("return")
        self.assertEqual((end, code, sig, reaped), ("exited", 0, 0, "reaped"), out)
        self.assertLess(seconds, 0.5, out)
        # Its output goes out through the harness, once.
        self.assertEqual(out.count("# the child reports through the harness\n"), 1, out)

    def test_child_verdict_is_its_exit_code(self):
        # The child's BROKEN names the case and ends the child only: the
        # parent learns it as the exit code and decides (here: PASS).
        out, end, code, sig, _, reaped = self.child("broken")
        self.assertEqual((end, code, sig, reaped), ("exited", 2, 0, "reaped"), out)
        self.assertRegex(out, r"# first: BROKEN: .*fake-repro.c:\d+: the child cannot go on")

    def test_child_broken_in_setup_leaves_cleanup_to_the_test(self):
        # A BROKEN setup runs cleanup; a BROKEN child of setup does not.
        rc, out, _ = self.run_fake(FAKE_SETUP_CHILD="broken")
        self.assertEqual(rc, 0, out)
        self.assertRegex(out, r"# setup: BROKEN: .*the child cannot go on")
        self.assertIn("# setup's child: exit code 2\n", out)
        self.assertEqual(out.count("# cleanup ran\n"), 1, out)

    def test_child_crash(self):
        out, end, code, sig, _, reaped = self.child("crash")
        self.assertEqual((end, sig, reaped), ("killed", 6, "reaped"), out)

    def test_child_killed_at_deadline(self):
        out, end, _, sig, seconds, reaped = self.child("hang")
        self.assertEqual((end, sig, reaped), ("timed out", 0, "reaped"), out)
        self.assertGreaterEqual(seconds, 0.5, out)
        self.assertLess(seconds, 2.0, out)

    def poll(self, what):
        rc, out, _ = self.run_fake(FAKE_first="poll-" + what)
        self.assertEqual(rc, 0, out)
        m = re.search(r"# first: PASS: poll (true|timed out) after (\d+) calls, ([\d.]+) s\n", out)
        self.assertIsNotNone(m, out)
        return m.group(1), int(m.group(2)), float(m.group(3))

    def test_poll_true_early(self):
        # True on the third call: two sleeps of 0.1 s, well before the 1 s deadline.
        met, calls, waited = self.poll("early")
        self.assertEqual((met, calls), ("true", 3))
        self.assertGreaterEqual(waited, 0.2)
        self.assertLess(waited, 0.9)

    def test_poll_times_out(self):
        # Never true: a call every 0.1 s and a last one at the 1 s deadline.
        met, calls, waited = self.poll("never")
        self.assertEqual(met, "timed out")
        self.assertGreaterEqual(waited, 1.0)
        self.assertLess(waited, 1.8)
        self.assertGreaterEqual(calls, 5)
        self.assertLessEqual(calls, 12)

    def test_setup_broken_runs_cleanup(self):
        out = self.expect(2, "setup fails on purpose", FAKE_SETUP_BROKEN="1")
        self.assertIn("# cleanup ran", out)

    def test_kernel_report_after_mark_is_fail(self):
        rc, out, _ = self.run_fake(FAKE_first="report")
        self.assertEqual(rc, 1, out)
        self.assertIn("kernel report after the mark: BUG: KASAN: use-after-free in "
                      "uio_unregister_device+0x168/0x190", out)

    def test_kmsg_report_and_its_trace(self):
        # The first report after what came before it, the trace's lines that
        # matter quoted, the first frame line kept, and kmsg left after the
        # trace's end; the harness's own scan then sees the report too.
        out = self.expect(1, '# first: PASS: report "refcount_t: addition on 0; use-after-free."; '
                          'frame "fake_recv+0x1ec/0x250"; trace ended; next "after the trace"',
                          FAKE_first="trace")
        quoted = re.findall(r"^# kmsg: (.*)$", out, re.M)
        self.assertEqual(quoted, ["WARNING: CPU: 1 PID: 0 at lib/refcount.c:25 refcount_warn+0xa0",
                                  "  fake_recv+0x1ec/0x250", "  fake_recv+0x30/0x40"], out)
        self.assertIn("kernel report after the mark: refcount_t: addition on 0", out)

    def test_kmsg_trace_without_its_end(self):
        # No end of trace in kmsg: the wait ends at its deadline, false.
        self.expect(1, '# first: PASS: report "refcount_t: addition on 0; use-after-free."; '
                    'frame "fake_recv+0x1ec/0x250"; trace not ended; next "-"',
                    FAKE_first="trace-cut")

    def test_scan_fail_is_a_test_point(self):
        # Every case passes, and the scan after them FAILs the run: the
        # stream must say so in a test point the plan counts.
        out = self.expect(1, "\nok 1 first\n", FAKE_first="report")
        self.assertIn("\nnot ok 3 kernel-report-scan # FAIL 1 kernel report(s) after the "
                      "mark, taint 0 to 0\n", out)
        self.assertIn("# Totals: pass:2 fail:1", out)
        self.assertKtapAgrees(out, 1)

    def assertKtapAgrees(self, out, rc):
        """The plan counts every test point, and a run that FAILs has a
        test point that says FAIL (what a KTAP parser counts)."""
        plan = re.search(r"^1\.\.(\d+)$", out, re.M)
        points = re.findall(r"^(ok|not ok) (\d+) \S+(?: # (\w+))?", out, re.M)
        self.assertIsNotNone(plan, out)
        self.assertEqual([int(p[1]) for p in points], list(range(1, int(plan.group(1)) + 1)))
        failed = [p for p in points if p[0] == "not ok" and p[2] == "FAIL"]
        self.assertEqual(bool(failed), rc == 1, out)

    def test_ktap_agrees_with_the_exit(self):
        for env in ({}, {"FAKE_first": "fail"}, {"FAKE_second": "skip"},
                    {"FAKE_first": "broken"}, {"FAKE_NEEDS_KCONFIG": "1"}):
            with self.subTest(env=env):
                open(path("kmsg"), "w").close()
                rc, out, _ = self.run_fake(**env)
                self.assertKtapAgrees(out, rc)

    def test_report_before_mark_is_ignored(self):
        with open(path("kmsg"), "w") as f:
            f.write("3,1,100,-;BUG: KASAN: wild-memory-access in _raw_spin_lock+0x6d/0xd0\n")
        rc, out, _ = self.run_fake()
        self.assertEqual(rc, 0, out)

    def test_taint_already_set_is_broken(self):
        with open(path("tainted"), "w") as f:
            f.write("512\n")
        self.expect(2, "already tainted (512)")

    def test_missing_kconfig_is_skip(self):
        self.expect(4, "kernel lacks CONFIG_KREPRO_FAKE_OPTION", FAKE_NEEDS_KCONFIG="1")

    def test_other_arch_is_skip(self):
        out = self.expect(4, "runs on sparc64 s390, this machine is", FAKE_OTHER_ARCH)
        self.assertIn("ok 1 first # SKIP", out)

    def test_no_marker_refuses(self):
        with open(path("cmdline"), "w") as f:
            f.write("console=ttyS0 krepro.guest=10\n")
        rc, out, err = self.run_fake(FAKE_first="report")
        self.assertEqual(rc, 2)
        self.assertEqual(out, "")
        self.assertIn("refusing to run", err)
        with open(path("kmsg")) as f:
            self.assertEqual(f.read(), "", "nothing may be done without the marker")

    def test_real_build_refuses_on_host(self):
        # The shipped harness reads the real /proc/cmdline; this host has no marker.
        with open("/proc/cmdline") as f:
            self.assertNotIn("krepro.guest=1", f.read().split())
        for binary in (FAKE_REAL, XFS_REPRO):
            rc, out, err = self.run_fake(binary)
            self.assertEqual(rc, 2, binary)
            self.assertIn("refusing to run", err)
            self.assertEqual(out, "")

    def describe(self, binary):
        p = subprocess.run([binary, "--describe"], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        return json.loads(p.stdout)

    def test_describe(self):
        meta = self.describe(FAKE_REAL)
        self.assertEqual(set(meta), {"name", "summary", "fix_commit", "bug_commit", "seed", "arches",
                                     "not_in_matrix", "min_cpus", "alone", "timeout", "cmdline",
                                     "disk_mib", "prepare", "needs_kconfigs", "cases", "own_evidence",
                                     "own_detectors", "signatures"})
        self.assertEqual(meta["name"], "fake-repro")
        self.assertIs(meta["alone"], False)
        self.assertEqual(meta["fix_commit"], '0123456789ab ("fake: fix")')
        self.assertEqual(meta["bug_commit"], 'ba9876543210 ("fake: break")')
        self.assertEqual(meta["timeout"], 10)
        self.assertEqual(meta["min_cpus"], 1)
        self.assertEqual(meta["disk_mib"], 0)
        self.assertIs(meta["prepare"], False)
        self.assertEqual(meta["cmdline"], "fake.option=1")
        self.assertEqual(meta["arches"], ["x86_64"])
        self.assertEqual(meta["needs_kconfigs"], [])
        self.assertEqual(meta["cases"], ["first", "second"])
        # Escaping: a tab and a newline, backslashes and quotes in a regex,
        # null for a missing title or frame.
        self.assertEqual(meta["not_in_matrix"], "a test double,\tnot a bug\n(kept out)")
        # Detectors as lists, whatever spaces separate them.
        self.assertEqual(meta["signatures"], [
            {"kind": "KASAN", "title": "^KASAN: use-after-free in uio_unregister_device$",
             "frame": "uio_.*", "detectors": ["CONFIG_KASAN"]},
            {"kind": "BUG", "title": '^kernel BUG at lib/fake\\.c:[0-9]+ "quoted"$', "frame": None,
             "detectors": ["CONFIG_DEBUG_LIST", "CONFIG_BUG_ON_DATA_CORRUPTION=y"]},
            {"kind": "HANG", "title": None, "frame": None, "detectors": []},
        ])
        self.assertIs(meta["own_evidence"], True)
        self.assertEqual(meta["own_detectors"], ["CONFIG_KREPRO_FAKE_DETECTOR"])

    def test_describe_keys_are_the_declaration_names(self):
        # One name per fact: each key --describe prints is the struct
        # krepro_test field it comes from (arches: krepro_main()'s argument)
        # and the host's Reproducer field that reads it.
        with open(os.path.join(TOP, "repro", "lib", "krepro.h")) as f:
            text = re.sub(r"/\*.*?\*/", "", f.read(), flags=re.S)
        body = re.search(r"^struct krepro_test \{(.*?)^\};", text, re.S | re.M).group(1)
        fields = set(re.findall(r"(\w+)\s*(?:\)\s*\([^)]*\))?\s*;", body))
        meta = self.describe(FAKE_REAL)
        self.assertLessEqual(set(meta) - {"arches"}, fields)  # setup, cleanup: code, not printed
        self.assertEqual(metamod.json_problems(meta), [])
        r = metamod.Reproducer.from_json(meta)
        self.assertEqual((r.fix_commit, r.bug_commit), (meta["fix_commit"], meta["bug_commit"]))

    def test_metadata_of_an_older_build_is_refused(self):
        # A renamed key ("fix" before fix_commit) would read as an unset field.
        meta = dict(self.describe(FAKE_REAL))
        meta["fix"] = meta.pop("fix_commit")
        with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
            json.dump(meta, f)
            f.flush()
            with self.assertRaisesRegex(metamod.MetaError, r"unknown key 'fix'.*rebuild with make build"):
                metamod.read(f.name)

    def test_describe_defaults(self):
        # The needs_kconfigs variant declares no signatures and is in the matrix.
        e = dict(os.environ, FAKE_NEEDS_KCONFIG="1")
        p = subprocess.run([FAKE_REAL, "--describe"], env=e, capture_output=True, text=True)
        meta = json.loads(p.stdout)
        self.assertEqual(meta["bug_commit"], "")
        self.assertEqual(meta["not_in_matrix"], "")
        self.assertEqual(meta["cmdline"], "")
        self.assertEqual(meta["signatures"], [])
        self.assertEqual(meta["own_detectors"], [])
        self.assertEqual(meta["needs_kconfigs"], ["CONFIG_KREPRO_FAKE_OPTION"])

    def test_describe_arches_from_the_build(self):
        # KREPRO_ARCHES, as krepro_reproducer() passes it, is the list.
        self.assertEqual(self.describe(FAKE_OTHER_ARCH)["arches"], ["sparc64", "s390"])

    def test_describe_does_nothing_else(self):
        # In a guest (the test build sees the marker), --describe still only
        # describes: no start mark in kmsg, no case run.
        meta = self.describe(FAKE)
        self.assertEqual(meta["name"], "fake-repro")
        with open(path("kmsg")) as f:
            self.assertEqual(f.read(), "")
        # A real reproducer answers it on the host.
        self.assertEqual(self.describe(XFS_REPRO)["name"], "xfs-nowait-dio")

if __name__ == "__main__":
    unittest.main(verbosity=2)
