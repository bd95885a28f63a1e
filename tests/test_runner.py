#!/usr/bin/env python3
"""The host runner's loop, driven through run-in-qemu.sh with a fake QEMU
(tests/fake-qemu): outcomes, sequential stopping, run.json, exit codes, locks.
Boots no guest."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
RUN = os.path.join(TOP, "run-in-qemu.sh")
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import stats  # noqa: E402

META = {
    "fake-bug": {"signatures": [{"kind": "REFCOUNT", "title": "refcount_t: addition on 0",
                                 "frame": "j1939_.*"}]},
    "fake-hang": {"signatures": [{"kind": "HANG", "title": None, "frame": None}]},
    "fake-clean": {"signatures": []},
    "fake-clean2": {"signatures": []},
    "fake-race": {"signatures": [], "alone": True},
}
# Reproducers whose evidence needs detectors (--describe's "detectors" and
# "own_detectors"): KASAN alone; KASAN or list debugging; KASAN or their own.
KASAN_UAF = {"kind": "KASAN", "title": "^KASAN: use-after-free in foo_release$", "frame": None,
             "detectors": ["CONFIG_KASAN"]}
LIST = {"kind": "LIST", "title": "^list_add corruption", "frame": None,
        "detectors": ["CONFIG_DEBUG_LIST"]}
META.update({
    "fake-kasan": {"signatures": [KASAN_UAF], "own_evidence": False},
    "fake-two": {"signatures": [KASAN_UAF, LIST], "own_evidence": False},
    "fake-kasan-own": {"signatures": [KASAN_UAF], "own_evidence": True},
})


def kernel_image(path, stamp, version=b"6.1.192 (krepro@krepro) #1"):
    """A fake bzImage: the boot header's magic, and its kernel_version
    pointer (0x20e, from 0x200) at a version string, as a real one has."""
    img = bytearray(0x300)
    img[0x202:0x206] = b"HdrS"
    img[0x20E:0x210] = (0x80).to_bytes(2, "little")
    img[0x280:0x280 + len(version)] = version
    with open(path, "wb") as f:
        f.write(bytes(img))
    with open(path + ".stamp", "w") as f:
        f.write(stamp + "\n")


class Runner(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        os.makedirs(os.path.join(self.tmp, "build", "repro"))
        for name, extra in META.items():
            m = {"name": name, "summary": "a fake", "fix_commit": "abc123 (\"fix\")", "bug_commit": "",
                 "seed": "", "arches": ["x86_64"], "not_in_matrix": "", "min_cpus": 1,
                 "timeout": 5, "cmdline": "", "disk_mib": 0, "prepare": False, "needs_kconfigs": [],
                 "cases": ["race"]}
            m.update(extra)
            with open(os.path.join(self.tmp, "build", "repro", name + ".json"), "w") as f:
                json.dump(m, f)
            # Its source as run-in-qemu.sh reads names and arches before a build.
            src = os.path.join(self.tmp, "repro", name)
            os.makedirs(src)
            with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
                f.write("krepro_reproducer()\n")
            open(os.path.join(src, name + ".c"), "w").close()
        os.makedirs(os.path.join(self.tmp, "kernels"))
        kernel_image(os.path.join(self.tmp, "kernels", "bzImage-6.1-x86_64-unpatched"), "stampU")
        kernel_image(os.path.join(self.tmp, "kernels", "bzImage-6.1-x86_64-patched"), "stampP")
        with open(os.path.join(self.tmp, "initrd"), "w") as f:
            f.write("fake")
        self.plan = os.path.join(self.tmp, "plan")
        self.qlog = os.path.join(self.tmp, "qemu.log")
        open(self.qlog, "w").close()
        self.env = dict(os.environ, KREPRO_QEMU=os.path.join(HERE, "fake-qemu"), KREPRO_NO_BUILD="1",
                        KREPRO_BUILD=os.path.join(self.tmp, "build"),
                        KREPRO_REPRO_DIR=os.path.join(self.tmp, "repro"),
                        KREPRO_INITRD=os.path.join(self.tmp, "initrd"),
                        KREPRO_CACHE=os.path.join(self.tmp, "cache"),
                        KREPRO_KERNELS=os.path.join(self.tmp, "kernels"),
                        FAKE_QEMU_PLAN=self.plan, FAKE_QEMU_LOG=self.qlog)
        self.results = os.path.join(self.tmp, "results")

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def set_plan(self, *steps):
        with open(self.plan, "w") as f:
            f.write("\n".join(steps) + "\n")
        if os.path.exists(self.plan + ".count"):
            os.remove(self.plan + ".count")

    def record_rate(self, repro, fails, runs, build="stampU", **extra):
        d = os.path.join(self.tmp, "cache", "fail-rates")
        os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, f"{repro}.6.1.x86_64.json"), "w") as f:
            json.dump({"base": None, "build": build, "fails": fails, "runs": runs,
                       "date": "2026-01-01", **extra}, f)

    def run_krepro(self, *args, results=True):
        # One results directory a test, run into again: --replace says so.
        argv = [RUN] + (["--results", self.results, "--replace"] if results else []) + list(args)
        p = subprocess.run(argv, env=self.env, capture_output=True, text=True, timeout=300)
        self.out = p.stdout + p.stderr
        return p.returncode

    def boots(self):
        with open(self.qlog) as f:
            return sum(1 for l in f if l.startswith("start"))

    def record(self):
        with open(os.path.join(self.results, "run.json")) as f:
            return json.load(f)

    def outcomes(self):
        return [r["outcome"] for r in self.record()["runs"]]

    # --- usage errors: exit >= 128 (git bisect run aborts), nothing booted ---
    def test_usage_errors_never_boot(self):
        self.set_plan("pass")
        for args in (["--frobnicate", "fake-bug"], ["no-such-bug"], ["--kernel", "/nonexistent", "fake-bug"],
                     ["--tree", os.path.join(self.tmp, "nope"), "fake-bug"], ["--repeat", "0", "fake-bug"],
                     ["--miss", "2", "fake-bug"], ["--kernel", "/etc/hostname", "fake-bug"], [],
                     ["-j", "0", "fake-bug"], ["--via", "ssh", "fake-bug"], ["--via", "lava:", "fake-bug"],
                     ["--artifacts", f"{self.tmp}=http://x", "fake-bug"],
                     ["--via", "lava:lab", "--artifacts", "/nonexistent=http://x", "fake-bug"],
                     ["--via", "lava-run", "--keep", "fake-bug"],
                     ["--vmlinux", "/etc/hostname", "fake-bug"],
                     ["--kernel", "patched", "--vmlinux", "/etc/hostname", "fake-bug"],
                     ["--kernel", os.path.join(self.tmp, "kernels", "bzImage-6.1-x86_64-patched"),
                      "--vmlinux", "/nonexistent", "fake-bug"]):
            with self.subTest(args=args):
                self.assertEqual(self.run_krepro(*args), 128, self.out)
        self.assertEqual(self.boots(), 0)
        self.assertFalse(os.path.exists(os.path.join(self.results, "run.json")))

    def test_git_bisect_aborts_on_a_typo(self):
        repo = os.path.join(self.tmp, "repo")
        os.makedirs(repo)
        git = ["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@t"]
        subprocess.run(["git", "init", "-q", repo], check=True)
        for i in range(4):
            with open(os.path.join(repo, "f"), "w") as f:
                f.write(str(i))
            subprocess.run(git + ["commit", "-qam" if i else "-qm", str(i)] + ([] if i else ["--allow-empty"]),
                           check=True, capture_output=True) if i else \
                subprocess.run(git[:3] + ["add", "f"], check=True) or \
                subprocess.run(git + ["commit", "-qm", "0"], check=True)
        subprocess.run(git + ["bisect", "start", "HEAD", "HEAD~3"], check=True, capture_output=True)
        p = subprocess.run(git + ["bisect", "run", RUN, "no-such-bug"], env=self.env,
                           capture_output=True, text=True)
        self.assertNotEqual(p.returncode, 0)
        self.assertNotIn("is the first bad commit", p.stdout)
        self.assertEqual(self.boots(), 0)

    # --- one run's outcome ---
    def test_hang_is_hang(self):
        self.set_plan("hang")
        self.assertEqual(self.run_krepro("--kernel", "patched", "--repeat", "1", "--timeout", "2",
                                         "fake-clean"), 125, self.out)
        self.assertEqual(self.outcomes(), ["HANG"])

    def test_declared_hang_is_the_bug(self):
        self.set_plan("hang")
        self.assertEqual(self.run_krepro("--repeat", "1", "--timeout", "2", "fake-hang"), 1, self.out)
        self.assertEqual(self.outcomes(), ["FAIL"])

    def stuck_guest(self, plan, after_report):
        """One fake-bug guest that hangs after its report: its run record,
        once it was stopped early (well before its 60 s limit)."""
        self.set_plan(plan)
        self.env["KREPRO_AFTER_REPORT"] = after_report
        t0 = time.monotonic()
        self.assertEqual(self.run_krepro("--repeat", "1", "--timeout", "60", "fake-bug"), 1, self.out)
        self.assertLess(time.monotonic() - t0, 30)
        run = self.record()["runs"][0]
        self.assertEqual((run["outcome"], run["stopped_early"], run["timed_out"]), ("FAIL", True, False))
        # The guest's limit (--timeout), not the reproducer's own timeout;
        # the fix under the name the reproducer declares it by.
        self.assertEqual((run["time_limit"], run["fix_commit"]), (60, 'abc123 ("fix")'))
        return run

    def test_guest_stuck_after_the_bugs_report_is_stopped_early(self):
        run = self.stuck_guest("bug-report-hang", "1")
        self.assertIn("guest stopped 1 s after the report ended", run["evidence"])
        self.assertIsNotNone(run["report_seen"])
        self.assertIsNone(run["answer_complete"])

    def test_guest_stuck_after_its_verdict_is_stopped_when_the_answer_is_complete(self):
        # The report has ended and the KTAP plan's every point is on the
        # stream: nothing more to wait for, however long AFTER_REPORT is.
        run = self.stuck_guest("bug-verdict-hang", "50")
        self.assertIn("guest stopped when its answer was complete", run["evidence"])
        self.assertLessEqual(run["report_seen"], run["answer_complete"])

    def test_report_before_mark_is_broken_after_its_retries(self):
        # A boot that fails before the test is the infrastructure's: retried,
        # never counted; a row that only ever gets such boots is BROKEN.
        self.set_plan("before-mark")
        self.assertEqual(self.run_krepro("--repeat", "1", "fake-bug"), 125)
        rec = self.record()
        self.assertEqual(self.outcomes(), ["BROKEN"] * 3)
        self.assertTrue(all(r["infra"] for r in rec["runs"]))
        self.assertEqual(rec["infra_boots"], 3)
        self.assertIn("before the test started", rec["runs"][0]["evidence"])
        self.assertEqual(rec["rows"][0]["decision"], "BROKEN")
        self.assertIn("(infrastructure: the row gives up)", self.out)

    def test_a_failed_boot_is_retried_and_never_decides_a_row(self):
        self.set_plan("no-init", "before-mark", "pass")
        self.assertEqual(self.run_krepro("--kernel", "patched", "--repeat", "1", "fake-clean"), 0, self.out)
        rec = self.record()
        self.assertEqual([(r["outcome"], r["infra"]) for r in rec["runs"]],
                         [("BROKEN", True), ("BROKEN", True), ("PASS", False)])
        self.assertEqual(rec["infra_boots"], 2)
        self.assertEqual(rec["rows"][0]["cell"], "PASS 1/1 (no recorded FAIL rate on branch 6.1; miss not "
                                                 "bounded; 1 clean run misses ≤ 1% only a bug whose FAIL "
                                                 "rate is ≥ 99%)")
        # A sequential bug row too: the failed boot is not one of its runs.
        self.set_plan("no-init", "fail-own")
        self.assertEqual(self.run_krepro("fake-bug"), 1, self.out)
        self.assertEqual(self.record()["rows"][0]["runs"], 1)

    def test_unexpected_report_is_other(self):
        self.set_plan("other-report")
        self.assertEqual(self.run_krepro("--repeat", "1", "fake-bug"), 125, self.out)
        run = self.record()["runs"][0]
        self.assertEqual(run["outcome"], "OTHER")
        self.assertEqual(run["evidence"], "WARNING in __queue_work")
        # Asked for, any report is bad for git bisect.
        self.set_plan("other-report")
        self.assertEqual(self.run_krepro("--repeat", "1", "--any-report", "fake-bug"), 1)

    def test_signature_report_is_fail_and_named(self):
        self.set_plan("both")
        self.assertEqual(self.run_krepro("--repeat", "1", "fake-bug"), 1)
        run = self.record()["runs"][0]
        self.assertEqual(run["outcome"], "FAIL")
        self.assertEqual(run["signature"], "report: refcount_t: addition on 0; use-after-free")
        self.assertIn("+1 later report(s) not in its signature: WARNING in __queue_work", run["evidence"])

    def test_a_fail_without_a_vmlinux_says_why_its_report_is_not_decoded(self):
        self.set_plan("bug-report")
        self.run_krepro("--repeat", "1", "fake-bug")
        run = self.record()["runs"][0]
        self.assertEqual(run["outcome"], "FAIL")
        self.assertNotIn("report", run)
        self.assertIn("no vmlinux for this kernel", run["decode_error"])
        self.assertIn("report not decoded: no vmlinux", self.out)
        with open(os.path.join(self.results, "summary.md")) as f:
            self.assertIn("- not decoded: no vmlinux for this kernel", f.read())

    def test_harness_fail_on_a_report_that_is_not_the_bug_is_other(self):
        # The reproducer exits 1 only because of a kernel report: not its evidence.
        self.set_plan("other-report")
        self.run_krepro("--repeat", "1", "fake-clean")
        self.assertEqual(self.outcomes(), ["OTHER"])

    def test_skip_and_broken(self):
        self.set_plan("skip")
        self.assertEqual(self.run_krepro("fake-bug"), 125)
        self.assertEqual(self.outcomes(), ["SKIP"])
        self.assertEqual(self.record()["rows"][0]["decision"], "SKIP")
        self.set_plan("broken")
        self.assertEqual(self.run_krepro("fake-bug"), 125)
        self.assertEqual(self.outcomes(), ["BROKEN"] * 3)
        self.assertEqual(self.record()["rows"][0]["decision"], "BROKEN")

    def test_replace_never_writes_through_a_past_runs_links(self):
        # A run directory someone handed over, run into with --replace: the
        # links it holds where krepro writes lead nowhere.
        self.set_plan("pass")
        self.run_krepro("--repeat", "1", "fake-bug")
        outside = os.path.join(self.tmp, "outside.txt")
        with open(outside, "w") as f:
            f.write("kept\n")
        rundir = os.path.join(self.results, self.record()["runs"][0]["dir"])
        for name in ("console.log", "ktap.txt", "report.txt"):
            if os.path.lexists(os.path.join(rundir, name)):
                os.unlink(os.path.join(rundir, name))
            os.symlink(outside, os.path.join(rundir, name))
        os.symlink(outside, os.path.join(self.results, "run.json.tmp"))
        self.run_krepro("--repeat", "1", "fake-bug")
        self.assertEqual(self.outcomes(), ["PASS"], self.out)
        with open(outside) as f:
            self.assertEqual(f.read(), "kept\n")
        self.assertFalse(os.path.islink(os.path.join(rundir, "console.log")))

    # --- sequential stopping ---
    def test_matrix_measures_the_rate_in_the_same_run(self):
        # 5 FAILs bound the rate at >= 54%; then 6 clean runs for miss <= 1%.
        self.set_plan(*["fail-own"] * 5 + ["pass"] * 6 + ["fail-own"])
        self.assertEqual(self.run_krepro("--kernel", "unpatched", "--kernel", "patched", "--expect",
                                         "fake-bug"), 0, self.out)
        self.assertEqual(self.boots(), 11)
        rows = self.record()["rows"]
        self.assertEqual([r["cell"] for r in rows], ["FAIL 5/5 (rate ≥ 54% at 95%)", "PASS 6/6 (miss ≤ 1% at 95%)"])
        self.assertEqual(rows[0]["rate"]["source"], "no recorded rate on branch 6.1: measured in this run")
        with open(os.path.join(self.results, "summary.md")) as f:
            md = f.read()
        self.assertIn("| fake-bug | patched | PASS 6/6 (miss ≤ 1% at 95%) | PASS ok |", md)

    def test_a_rate_carried_to_a_build_with_the_same_code_names_where_it_was_measured(self):
        self.record_rate("fake-bug", 20, 20, measured_on={"build": "stampOld" * 8, "why": "same .text"})
        self.set_plan("bug-report")
        self.run_krepro("--kernel", "unpatched", "fake-bug")
        self.assertEqual(self.boots(), 1)
        self.assertIn("20/20 recorded 2026-01-01, build stampU (measured on build stampOldstam: same .text)",
                      self.record()["rows"][0]["rate"]["source"])

    def test_recorded_rate_stops_at_first_fail(self):
        self.record_rate("fake-bug", 20, 20)
        self.set_plan("bug-report", "pass")
        self.assertEqual(self.run_krepro("--kernel", "unpatched", "--kernel", "patched", "--expect",
                                         "fake-bug"), 0, self.out)
        self.assertEqual(self.boots(), 4)
        rows = self.record()["rows"]
        self.assertEqual(rows[0]["cell"], "FAIL 1/1 (rate ≥ 86% at 95%)")
        self.assertIn("20/20 recorded 2026-01-01, build stampU", rows[0]["rate"]["source"])
        self.assertEqual(rows[1]["cell"], "PASS 3/3 (miss ≤ 1% at 95%)")
        # The row's own FAIL was added to the cache's copy.
        with open(os.path.join(self.tmp, "cache", "fail-rates", "fake-bug.6.1.x86_64.json")) as f:
            self.assertEqual(json.load(f)["runs"], 21)

    def test_recorded_rate_of_another_build_is_not_used(self):
        self.record_rate("fake-bug", 20, 20, build="other")
        self.set_plan(*["fail-own"] * 5 + ["pass"])
        self.run_krepro("--kernel", "unpatched", "--kernel", "patched", "--expect", "fake-bug")
        self.assertEqual(self.boots(), 11)

    def test_fail_on_the_fixed_kernel_stops_and_is_unexpected(self):
        self.record_rate("fake-bug", 20, 20)
        self.set_plan("fail-own", "pass", "bug-report")
        self.assertEqual(self.run_krepro("--kernel", "unpatched", "--kernel", "patched", "--expect",
                                         "fake-bug"), 1)
        self.assertEqual(self.outcomes(), ["FAIL", "PASS", "FAIL"])
        self.assertIn("| FAIL 1/2 | PASS **UNEXPECTED** |", open(os.path.join(self.results, "summary.md")).read())

    def test_other_on_the_fixed_kernel_is_flagged(self):
        self.record_rate("fake-bug", 20, 20)
        self.set_plan("fail-own", "other-report")
        self.assertEqual(self.run_krepro("--kernel", "unpatched", "--kernel", "patched", "--expect",
                                         "fake-bug"), 1)
        self.assertEqual(self.record()["rows"][1]["decision"], "OTHER")

    def test_cap_makes_a_row_undecided(self):
        self.set_plan("pass")
        self.assertEqual(self.run_krepro("--max-runs", "2", "--kernel", "patched", "fake-bug"), 125)
        row = self.record()["rows"][0]
        self.assertEqual((row["decision"], row["runs"]), ("UNDECIDED", 2))
        self.assertEqual(row["cell"], "undecided: PASS 2 in 2 runs")

    def test_a_full_disk_stops_the_run_with_one_line(self):
        # The results directory fills up after the first row is decided:
        # one line, exit 125, and run.json still holds that row.
        self.record_rate("fake-bug", 20, 20)
        self.set_plan("bug-report", "pass", "pass", "pass")
        code = ("import errno, sys\n"
                "from krepro import cli, runner\n"
                "real = runner.RunRecord.save\n"
                "def save(self):\n"
                "    if len(self.data['rows']) >= 1 and len(self.data['runs']) >= 2:\n"
                "        raise OSError(errno.ENOSPC, 'No space left on device', self.path)\n"
                "    real(self)\n"
                "runner.RunRecord.save = save\n"
                f"sys.exit(cli.main({['--results', self.results, '--replace', '--kernel', 'unpatched', '--kernel', 'patched', '--expect', 'fake-bug']!r}))\n")
        p = subprocess.run([sys.executable, "-c", code], env=dict(self.env, PYTHONPATH=os.path.join(TOP, "scripts")),
                           capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 125, p.stderr)
        err = [l for l in p.stderr.splitlines() if "error:" in l]
        self.assertEqual(len(err), 1, p.stderr)
        self.assertIn("No space left on device", err[0])
        self.assertNotIn("Traceback", p.stderr)
        self.assertEqual([r["cell"] for r in self.record()["rows"]], ["FAIL 1/1 (rate ≥ 86% at 95%)"])

    def test_a_probe_without_a_rate_stops_after_a_few_clean_runs(self):
        # No record of the kernel's branch: 3 clean runs, and the cell says
        # what they bound instead of running to the cap.
        self.set_plan("pass")
        self.assertEqual(self.run_krepro("--kernel", "patched", "fake-bug"), 0, self.out)
        row = self.record()["rows"][0]
        self.assertEqual((row["decision"], row["runs"]), ("PASS", 3))
        self.assertEqual(row["cell"], "PASS 3/3 (no recorded FAIL rate on branch 6.1; miss not bounded; "
                                      "3 clean runs miss ≤ 1% only a bug whose FAIL rate is ≥ 79%)")

    def test_a_record_of_one_branch_never_bounds_another(self):
        self.record_rate("fake-bug", 20, 20)
        self.set_plan("pass")
        other = os.path.join(self.tmp, "probes", "six-twelve")
        os.makedirs(os.path.dirname(other), exist_ok=True)
        kernel_image(other, "stamp-612", b"6.12.118+deb12-cloud-amd64 (debian-kernel@lists.debian.org)")
        self.assertEqual(self.run_krepro("--kernel", other, "fake-bug"), 0, self.out)
        row = self.record()["rows"][0]
        self.assertEqual(row["runs"], 3)
        self.assertIn("no recorded FAIL rate on branch 6.12; miss not bounded", row["cell"])
        self.assertEqual(self.record()["kernels"][0]["branch"], "6.12")

    def test_rate_given_weighs_a_probe_row(self):
        # --rate F/N (a bisection's BAD): one row, weighed with that rate.
        self.record_rate("fake-bug", 20, 20)
        self.set_plan("pass")
        self.assertEqual(self.run_krepro("--rate", "10/10", "--kernel", "patched", "fake-bug"), 0, self.out)
        row = self.record()["rows"][0]
        want = stats.clean_runs_needed(stats.rate_lower(10, 10), 0.01)
        self.assertEqual((row["runs"], row["cell"]), (want, f"PASS {want}/{want} (miss ≤ 1% at 95%)"))
        self.assertIn("10/10 given with --rate", row["rate"]["source"])

    def test_confidence_sets_the_target(self):
        self.record_rate("fake-bug", 20, 20)
        self.set_plan("pass")
        self.assertEqual(self.run_krepro("--confidence", "0.999", "--kernel", "patched", "fake-bug"), 0)
        want = stats.clean_runs_needed(stats.rate_lower(20, 20), 0.001)
        self.assertEqual(self.boots(), want)

    def test_fixed_mode(self):
        self.set_plan("fail-own", "fail-own", "pass")
        self.assertEqual(self.run_krepro("--repeat", "3", "fake-bug"), 1)
        self.assertEqual(self.boots(), 3)
        self.assertEqual(self.record()["rows"][0]["cell"], "FAIL 2/3")

    # --- detectors: what a kernel can show, and where a record applies ---
    def probe_kernel(self, name, *config):
        """A kernel of the user's with its config beside it, as kernels.sh
        keeps one (<image>.config); none given: no config to be found."""
        path = os.path.join(self.tmp, "probes", name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        kernel_image(path, "stamp-" + name)
        if config:
            with open(path + ".config", "w") as f:
                f.write("\n".join(config) + "\n")
        return path

    def test_a_kernel_blind_to_every_evidence_path_is_not_booted(self):
        self.record_rate("fake-kasan", 20, 20)
        self.set_plan("pass")
        k = self.probe_kernel("nokasan", "CONFIG_DEBUG_LIST=y", "# CONFIG_KASAN is not set")
        self.assertEqual(self.run_krepro("--kernel", k, "fake-kasan"), 125, self.out)
        self.assertEqual(self.boots(), 0)
        rec = self.record()
        row = rec["rows"][0]
        self.assertEqual(row["decision"], "UNDECIDED")
        self.assertEqual(row["cell"], "undecided: not booted (no CONFIG_KASAN: the use-after-free "
                                      "path cannot show; nothing else could show the bug)")
        self.assertEqual(row["evidence"]["blind"], [{"path": "use-after-free", "missing": ["CONFIG_KASAN"]}])
        self.assertEqual(row["kernel_config"], k + ".config")
        self.assertEqual(rec["runs"], [])
        self.assertIn("fake-kasan on nokasan: not booted, undecided: no CONFIG_KASAN", self.out)
        self.assertIn("warning: nokasan: fake-kasan: no CONFIG_KASAN", self.out)

    def test_a_kernel_lacking_one_of_two_detectors_names_the_blind_path(self):
        self.record_rate("fake-two", 20, 20)
        self.set_plan("pass")
        k = self.probe_kernel("nokasan", "CONFIG_DEBUG_LIST=y")
        self.assertEqual(self.run_krepro("--kernel", k, "--repeat", "3", "fake-two"), 0, self.out)
        self.assertEqual(self.boots(), 3)
        row = self.record()["rows"][0]
        self.assertEqual(row["cell"], "PASS 3/3 (no CONFIG_KASAN: the use-after-free path cannot show; "
                                      "miss not bounded; 3 clean runs miss ≤ 1% only a bug whose FAIL rate is ≥ 79%)")
        self.assertEqual((row["rate"], row["miss"]), (None, None))
        self.assertEqual(row["unbounded"], "no CONFIG_KASAN: the use-after-free path cannot show")
        # Sequentially nothing bounds a clean verdict there, 20/20 recorded or
        # not: the row stops after 3 clean runs and says what they bound.
        self.set_plan("pass")
        self.assertEqual(self.run_krepro("--kernel", k, "--max-runs", "4", "fake-two"), 0, self.out)
        self.assertEqual(self.record()["rows"][0]["cell"],
                         "PASS 3/3 (no CONFIG_KASAN: the use-after-free path cannot show; miss not "
                         "bounded; 3 clean runs miss ≤ 1% only a bug whose FAIL rate is ≥ 79%)")
        self.assertIn("no CONFIG_KASAN: the use-after-free path cannot show: a clean verdict "
                      "cannot be bounded", self.out)
        # With both detectors (and a record without an accelerator: TCG's),
        # the record applies: 3 clean runs bound the miss.
        self.set_plan("pass")
        full = self.probe_kernel("full", "CONFIG_DEBUG_LIST=y", "CONFIG_KASAN=y")
        self.assertEqual(self.run_krepro("--kernel", full, "fake-two"), 0, self.out)
        self.assertEqual(self.record()["rows"][0]["cell"], "PASS 3/3 (miss ≤ 1% at 95%)")

    def test_a_kernel_whose_config_is_unknown_cannot_bound_a_miss_that_needs_detectors(self):
        self.record_rate("fake-two", 20, 20)
        self.record_rate("fake-bug", 20, 20)
        self.set_plan("pass")
        k = self.probe_kernel("bare")
        self.assertEqual(self.run_krepro("--kernel", k, "--repeat", "1", "fake-two"), 0, self.out)
        self.assertEqual(self.record()["rows"][0]["cell"],
                         "PASS 1/1 (kernel config unknown: detectors not checked; miss not bounded"
                         "; 1 clean run misses ≤ 1% only a bug whose FAIL rate is ≥ 99%)")
        self.assertIsNone(self.record()["kernels"][0]["config"])
        # A reproducer that needs no detector has nothing to check.
        self.assertEqual(self.run_krepro("--kernel", k, "fake-bug"), 0, self.out)
        self.assertEqual(self.record()["rows"][0]["cell"], "PASS 3/3 (miss ≤ 1% at 95%)")

    def test_flavour_rows_take_their_builds_record_as_before(self):
        # The flavours' configs (none here, then one with the detector)
        # change nothing: their record is their build's.
        for config in (None, "CONFIG_KASAN=y"):
            with self.subTest(config=config):
                for f in ("unpatched", "patched"):
                    if config:
                        with open(os.path.join(self.tmp, "kernels", f"bzImage-6.1-x86_64-{f}.config"), "w") as fh:
                            fh.write(config + "\n")
                self.record_rate("fake-kasan-own", 20, 20)
                self.set_plan("fail-own", "pass")
                self.assertEqual(self.run_krepro("--expect", "--kernel", "unpatched", "--kernel", "patched",
                                                 "fake-kasan-own"), 0, self.out)
                rows = self.record()["rows"]
                self.assertEqual([r["cell"] for r in rows],
                                 ["FAIL 1/1 (rate ≥ 86% at 95%)", "PASS 3/3 (miss ≤ 1% at 95%)"])
                self.assertEqual([r["runs"] for r in rows], [1, 3])

    def test_a_record_measured_under_kvm_is_not_applied_under_tcg(self):
        self.record_rate("fake-two", 20, 20, accel="kvm")
        self.set_plan("pass")
        full = self.probe_kernel("full", "CONFIG_DEBUG_LIST=y", "CONFIG_KASAN=y")
        self.assertEqual(self.run_krepro("--kernel", full, "--repeat", "3", "fake-two"), 0, self.out)
        row = self.record()["rows"][0]
        self.assertEqual(self.record()["accel"], "tcg")
        self.assertEqual(row["cell"], "PASS 3/3 (the recorded rate was measured under kvm, this run "
                                      "is under tcg; miss not bounded; 3 clean runs miss ≤ 1% only a bug whose FAIL rate is ≥ 79%)")
        self.assertIsNone(row["rate"])

    def test_a_calibration_records_its_accelerator(self):
        from krepro import rates
        saved = rates.repo_path, rates.cache_path
        rates.repo_path = lambda repro: os.path.join(self.tmp, f"{repro}.fail-rate.json")
        rates.cache_path = lambda repro, arch, branch: os.path.join(self.tmp, f"{repro}.{branch}.{arch}.cache.json")
        try:
            rates.record("fake", "x86_64", "6.1", "b", 3, 4, [2.0, 1.0], "c0ffee", "kvm")
            with open(rates.repo_path("fake")) as f:
                self.assertEqual(json.load(f)["6.1"]["x86_64"]["accel"], "kvm")
            self.assertIsNone(rates.lookup("fake", "x86_64", "6.1", None, accel="tcg")[0])
            self.assertEqual(rates.lookup("fake", "x86_64", "6.1", None, accel="kvm")[0]["runs"], 4)
            # A record of one branch never bounds a miss on another.
            self.assertIsNone(rates.lookup("fake", "x86_64", "6.12", None, accel="kvm")[0])
            self.assertIsNone(rates.lookup("fake", "x86_64", None, None)[0])
            # A bug row under TCG folds into a copy that is then "mixed": a
            # probe under KVM still has the record itself.
            rates.add_runs("fake", "x86_64", "6.1", "b", 1, 1, "tcg")
            with open(rates.cache_path("fake", "x86_64", "6.1")) as f:
                self.assertEqual(json.load(f)["accel"], "mixed")
            self.assertEqual(rates.lookup("fake", "x86_64", "6.1", None, accel="kvm")[0]["runs"], 4)
            self.assertEqual(rates.lookup("fake", "x86_64", "6.1", "b")[0]["runs"], 5)
        finally:
            rates.repo_path, rates.cache_path = saved

    # --- the record, interruption, re-rendering ---
    def test_report_rerenders_from_run_json_alone(self):
        self.set_plan("bug-report")
        self.run_krepro("--repeat", "2", "fake-bug")
        with open(os.path.join(self.results, "summary.md")) as f:
            first = f.read()
        for n in ("summary.md", "results.ktap", "junit.xml"):
            os.remove(os.path.join(self.results, n))
        self.assertEqual(self.run_krepro("--report", self.results, results=False), 1)
        with open(os.path.join(self.results, "summary.md")) as f:
            self.assertEqual(f.read(), first)
        self.assertIn("j1939_can_recv", first)
        # The culprit title beside the report's title, from run.json's reports.
        self.assertIn("- report: refcount_t: addition on 0; use-after-free | culprit (syzbot-style title): "
                      "WARNING: refcount bug in j1939_can_recv", first)
        self.assertEqual(self.record()["runs"][0]["reports"][0]["culprit"],
                         "WARNING: refcount bug in j1939_can_recv")
        with open(os.path.join(self.results, "junit.xml")) as f:
            self.assertIn('name="verdict" value="FAIL 2/2"', f.read())

    def calibrate_cut_short(self):
        self.set_plan("bug-report", "bug-report", "hang")
        p = subprocess.Popen([RUN, "--results", self.results, "--replace", "--kernel", "unpatched",
                              "--repeat", "5", "--record-rates", "fake-bug"],
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 60
        while self.boots() < 3 and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(0.3)
        p.send_signal(signal.SIGINT)
        out = p.communicate(timeout=60)[0]
        self.assertEqual(p.returncode, 130, out)
        with open(os.path.join(self.tmp, "repro", "fake-bug", "fail-rate.json")) as f:
            return json.load(f)["6.1"]["x86_64"]

    def test_calibration_cut_short_keeps_what_it_measured(self):
        rec = self.calibrate_cut_short()
        self.assertEqual((rec["fails"], rec["runs"], rec["planned"]), (2, 2, 5))
        # ... but not over a longer record of the same build.
        path = os.path.join(self.tmp, "repro", "fake-bug", "fail-rate.json")
        with open(path, "w") as f:
            json.dump({"6.1": {"x86_64": dict(rec, fails=20, runs=20, planned=None)}}, f)
        self.assertEqual(self.calibrate_cut_short()["runs"], 20)

    def test_interrupted_run_keeps_what_finished(self):
        self.interrupt(signal.SIGINT)

    def test_killed_run_keeps_what_finished(self):
        # A kill, and a background job's Ctrl-C, end the run the same way.
        self.interrupt(signal.SIGTERM)

    def interrupt(self, sig):
        self.set_plan("pass 0.2", "pass 0.2", "hang")
        p = subprocess.Popen([RUN, "--results", self.results, "--repeat", "5", "fake-clean"],
                             env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 60
        while self.boots() < 3 and time.time() < deadline:
            time.sleep(0.1)
        time.sleep(0.3)
        p.send_signal(sig)
        out = p.communicate(timeout=60)[0]
        # The hanging guest went with the run.
        left = []
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().decode(errors="replace")
            except OSError:
                continue
            if "fake-qemu" in cmd and self.tmp in cmd:
                left.append(pid)
        self.assertEqual(left, [])
        self.assertEqual(p.returncode, 130, out)
        rec = self.record()
        self.assertEqual([r["outcome"] for r in rec["runs"]], ["PASS", "PASS"])
        self.assertTrue(rec["interrupted"])
        self.assertIsNone(rec["finished"])
        # The guest the stop cut off is named, with where its log is.
        self.assertEqual([(c["repro"], c["run"]) for c in rec["cut_off"]], [("fake-clean", 3)])
        self.assertTrue(rec["cut_off"][0]["log"].endswith(".3/console.log"), rec["cut_off"])
        self.assertEqual(self.run_krepro("--report", self.results, results=False), 130)
        self.assertIn("PARTIAL", self.out)
        with open(os.path.join(self.results, "summary.md")) as f:
            summary = f.read()
        self.assertIn("cut off: fake-clean on", summary)
        self.assertIn("(cut off: run 3 was running when the run stopped)", summary)
        # No guest left behind, and the locks are free: a new run boots at once.
        self.set_plan("pass")
        self.results += "2"
        self.assertEqual(self.run_krepro("--repeat", "1", "fake-clean"), 0)
        self.assertNotIn("waiting", self.out)

    def test_boot_lock_serialises_two_invocations(self):
        self.set_plan("pass 1")
        procs = [subprocess.Popen([RUN, "--results", self.results + str(i), "--repeat", "2", "fake-clean"],
                                  env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
                 for i in range(2)]
        outs = [p.communicate(timeout=120)[0] for p in procs]
        self.assertEqual([p.returncode for p in procs], [0, 0], outs)
        spans, start = [], None
        with open(self.qlog) as f:
            for line in f:
                w = line.split()
                if w[0] == "start":
                    self.assertIsNone(start, "two guests ran at once")
                    start = float(w[1])
                else:
                    spans.append((start, float(w[1])))
                    start = None
        self.assertEqual(len(spans), 4)
        self.assertTrue(any("waiting for another guest to finish" in o for o in outs))


    # --- at the keyboard: --append, --qemu-opts, --gdb ---
    def qemu_cmdline(self, rundir):
        with open(os.path.join(self.results, rundir, "qemu-cmdline")) as f:
            return f.read()

    def test_a_reproducer_boots_its_own_image_where_there_is_one(self):
        self.set_plan("pass", "pass")
        own = os.path.join(self.tmp, "repro", "fake-clean.cpio")
        with open(own, "w") as f:
            f.write("its own")
        self.assertEqual(self.run_krepro("--repeat", "1", "fake-clean", "fake-bug"), 0, self.out)
        self.assertIn(f"-initrd {own} ", self.qemu_cmdline("fake-clean.unpatched.1"))
        # The whole image for one that has none of its own.
        self.assertIn(f"-initrd {os.path.join(self.tmp, 'initrd')} ", self.qemu_cmdline("fake-bug.unpatched.1"))

    def test_append_and_qemu_opts_reach_the_guest(self):
        self.set_plan("pass")
        self.assertEqual(self.run_krepro("--repeat", "1", "--append", "ftrace=function trace_buf_size=1M",
                                         "--qemu-opts", "-m 2G -object 'rng-random,id=rng0'",
                                         "fake-clean"), 0, self.out)
        line = self.qemu_cmdline("fake-clean.unpatched.1")
        self.assertIn("krepro.run=fake-clean ftrace=function trace_buf_size=1M", line)
        self.assertIn("-m 2G -object rng-random,id=rng0", line)
        self.assertEqual(self.run_krepro("--qemu-opts", "-m '2G", "fake-clean"), 128)

    def test_gdb_stops_the_guest_for_gdb_and_says_how_to_attach(self):
        self.set_plan("pass")
        vmlinux = os.path.join(self.tmp, "kernels", "bzImage-6.1-x86_64-unpatched.vmlinux")
        open(vmlinux, "w").close()
        p = subprocess.run([RUN, "--results", self.results, "--gdb", "4444", "fake-clean"], env=self.env,
                           stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        line = self.qemu_cmdline("fake-clean.unpatched.1")
        self.assertIn("-gdb tcp::4444 -S", line)
        self.assertIn(" nokaslr krepro.keep=1", line)
        self.assertIn(f"gdb {vmlinux} -ex 'target remote :4444'", p.stderr)
        self.assertEqual(self.boots(), 1)

    # --- parallel guests (-j): slots, sequential rows, guests that run alone ---
    def spans(self):
        """(start, end, repro) of every guest, from the fake QEMU's log."""
        open_, out = {}, []
        with open(self.qlog) as f:
            for line in f:
                kind, t, repro = line.split()
                if kind == "start":
                    open_.setdefault(repro, []).append(float(t))
                else:
                    out.append((open_[repro].pop(0), float(t), repro))
        return out

    @staticmethod
    def most_at_once(spans):
        edges = sorted([(s, 1) for s, _, _ in spans] + [(e, -1) for _, e, _ in spans])
        most = now = 0
        for _, d in edges:
            now += d
            most = max(most, now)
        return most

    def test_jobs_fill_the_slots_and_no_more(self):
        self.set_plan("pass 1.5")
        self.assertEqual(self.run_krepro("-j", "2", "--repeat", "3", "fake-clean", "fake-clean2"), 0, self.out)
        spans = self.spans()
        self.assertEqual(len(spans), 6)
        # Two at once, never three: the spans, not the wall clock, show it
        # (a loaded machine stretches the wall clock, not the overlap).
        self.assertEqual(self.most_at_once(spans), 2)
        rec = self.record()
        self.assertEqual(rec["jobs"], 2)
        self.assertEqual([(r["repro"], r["cell"]) for r in rec["rows"]],
                         [("fake-clean", "PASS 3/3 (no recorded FAIL rate on branch 6.1; miss not bounded; 3 clean runs miss ≤ 1% only a bug whose FAIL rate is ≥ 79%)"),
                          ("fake-clean2", "PASS 3/3 (no recorded FAIL rate on branch 6.1; miss not bounded; 3 clean runs miss ≤ 1% only a bug whose FAIL rate is ≥ 79%)")])

    def test_krepro_jobs_sets_the_default_and_is_checked(self):
        self.set_plan("pass 1")
        self.env["KREPRO_JOBS"] = "3"
        self.assertEqual(self.run_krepro("--repeat", "3", "fake-clean"), 0, self.out)
        self.assertEqual(self.most_at_once(self.spans()), 3)
        self.env["KREPRO_JOBS"] = "0"
        self.assertEqual(self.run_krepro("fake-clean"), 128)
        self.assertIn("KREPRO_JOBS", self.out)

    def test_a_guest_that_needs_the_host_runs_alone(self):
        self.set_plan("pass 1")
        self.assertEqual(self.run_krepro("-j", "3", "--repeat", "2", "fake-clean", "fake-race",
                                         "fake-clean2"), 0, self.out)
        spans = self.spans()
        self.assertEqual(len(spans), 6)
        for s, e, r in spans:
            if r == "fake-race":
                others = [x for x in spans if x[2] != "fake-race" and x[0] < e and x[1] > s]
                self.assertEqual(others, [], "a guest ran beside fake-race")
        self.assertEqual(self.most_at_once([x for x in spans if x[2] != "fake-race"]), 2)

    def test_a_row_gets_only_the_guests_its_expected_outcome_needs(self):
        # Recorded 20/20: rate >= 86%, so 3 clean runs bound the miss at 1%.
        self.record_rate("fake-bug", 20, 20)
        self.set_plan("pass 1")
        self.assertEqual(self.run_krepro("-j", "8", "--kernel", "patched", "fake-bug"), 0, self.out)
        spans = self.spans()
        self.assertEqual(len(spans), stats.clean_runs_needed(stats.rate_lower(20, 20), 0.01))
        self.assertEqual(len(spans), 3)
        self.assertEqual(self.most_at_once(spans), 3)

    def test_bug_row_runs_first_and_one_at_a_time_then_the_fixed_row(self):
        self.record_rate("fake-bug", 20, 20)
        self.set_plan("bug-report 1", "pass 1")
        self.assertEqual(self.run_krepro("-j", "8", "--expect", "--kernel", "unpatched",
                                         "--kernel", "patched", "fake-bug"), 0, self.out)
        rec = self.record()
        self.assertEqual([(r["kernel"], r["outcome"]) for r in rec["runs"]],
                         [("unpatched", "FAIL")] + [("patched", "PASS")] * 3)
        spans = sorted(self.spans())
        # The fixed row waited for its bug row's FAIL, then ran 3 at once.
        self.assertLessEqual(spans[0][1], min(s for s, _, _ in spans[1:]))
        self.assertEqual(self.most_at_once(spans[1:]), 3)

    def test_fail_on_a_fixed_row_decides_it_and_guests_still_running_are_kept(self):
        self.record_rate("fake-bug", 20, 20)
        self.set_plan("bug-report 0.2", "pass 2", "pass 2")
        self.assertEqual(self.run_krepro("-j", "3", "--kernel", "patched", "fake-bug"), 1, self.out)
        rec = self.record()
        self.assertEqual(rec["rows"][0]["decision"], "FAIL")
        self.assertEqual(rec["rows"][0]["runs"], 1)
        late = [r for r in rec["runs"] if r.get("after_decision")]
        self.assertEqual([r["outcome"] for r in late], ["PASS", "PASS"])
        self.assertIn("recorded, not counted", self.out)

    def test_two_invocations_share_the_machines_slots(self):
        self.set_plan("pass 1")
        procs = [subprocess.Popen([RUN, "-j", "2", "--results", self.results + str(i), "--repeat", "3",
                                   "fake-clean"], env=self.env, stdout=subprocess.PIPE,
                                  stderr=subprocess.STDOUT, text=True) for i in range(2)]
        outs = [p.communicate(timeout=120)[0] for p in procs]
        self.assertEqual([p.returncode for p in procs], [0, 0], outs)
        self.assertEqual(len(self.spans()), 6)
        self.assertEqual(self.most_at_once(self.spans()), 2)


if __name__ == "__main__":
    unittest.main(verbosity=2)
