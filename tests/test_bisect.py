#!/usr/bin/env python3
"""krepro bisect on synthetic histories: a temporary git repository of 20
commits, a fake builder (its image lists the marker files of the checkout;
its "text" hashes the code markers, not the data- ones) and a fake row runner
(each run FAILs with probability p when the bug's marker is in the image and
the fix's is not; seeded). Then the real glue: a row through run-in-qemu.sh
with the fake QEMU, and the .text hash on objects gcc builds. Builds no
kernel, boots no guest."""
import contextlib
import hashlib
import io
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))
sys.path.insert(0, HERE)
from krepro import stats  # noqa: E402
from krepro.bisect import machinery, search  # noqa: E402
from krepro.bisect.confidence import Rate  # noqa: E402

GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"]


class FakeMachinery:
    """bisect_machinery.Machinery's interface. record_clean: a row stops PASS
    after that many clean runs (a probe row whose record applies), else it
    runs to its cap."""

    def __init__(self, p, seed, bug="bug", fix="fix", record_clean=None):
        self.p, self.bug, self.fix, self.record_clean = p, bug, fix, record_clean
        self.rng = random.Random(seed)
        self.builds = self.guests = 0

    def build(self, tree, image):
        self.builds += 1
        markers = sorted(os.listdir(os.path.join(tree, "m")))
        if "BROKEN" in markers:
            return machinery.Build(False, seconds=0.1, why="fake build error")
        os.makedirs(os.path.dirname(image), exist_ok=True)
        with open(image, "w") as f:
            json.dump(markers, f)
        code = [m for m in markers if not m.startswith("data-")]
        return machinery.Build(True, image, 0.1, hashlib.sha256(" ".join(code).encode()).hexdigest())

    def unlink_debug(self, image):
        pass

    def row(self, image, repro, results, max_runs=None, repeat=None, rate=None):
        # With the bisection's rate given (run-in-qemu.sh --rate), a row
        # stops clean exactly where the driver wants: at max_runs.
        with open(image) as f:
            markers = json.load(f)
        buggy = self.bug in markers and self.fix not in markers
        outcomes = []
        while True:
            self.guests += 1
            outcomes.append("FAIL" if buggy and self.rng.random() < self.p else "PASS")
            n = len(outcomes)
            if repeat:
                if n == repeat:
                    decision = "FAIL" if "FAIL" in outcomes else "PASS"
                    break
                continue
            if outcomes[-1] == "FAIL":
                decision = "FAIL"
                break
            if rate is None and self.record_clean and n >= self.record_clean:
                decision = "PASS"
                break
            if n >= max_runs:
                decision = "PASS" if rate is not None else "UNDECIDED"
                break
        counts = {o: outcomes.count(o) for o in set(outcomes)}
        fails = counts.get("FAIL", 0)
        return {"decision": decision, "counts": counts, "runs": len(outcomes), "fails": fails,
                "trials": len(outcomes), "code": {"FAIL": 1, "PASS": 0}.get(decision, 125)}


class History:
    """A git repository of `n` commits, each adding marker m/c<i>; `extra`
    maps an index to what that commit does besides (a list of (action,
    marker)). Returns the commits, oldest first; commit 0 is GOOD."""

    def __init__(self, root, n=20, extra=None):
        self.dir = os.path.join(root, "linux")
        os.makedirs(os.path.join(self.dir, "m"))
        self.git("init", "-q")
        self.commits = []
        for i in range(n):
            self.touch(f"c{i:02d}")
            for action, marker in (extra or {}).get(i, ()):
                if action == "add":
                    self.touch(marker)
                elif action == "append":
                    with open(os.path.join(self.dir, "m", marker), "a") as f:
                        f.write("more\n")
                elif action == "rm":
                    os.remove(os.path.join(self.dir, "m", marker))
            self.git("add", "-A")
            self.git("commit", "-q", "-m", f"commit {i}")
            self.commits.append(self.head())

    def touch(self, marker):
        with open(os.path.join(self.dir, "m", marker), "w") as f:
            f.write(marker + "\n")

    def git(self, *args):
        subprocess.run(GIT + ["-C", self.dir, *args], check=True, capture_output=True)

    def head(self):
        return subprocess.run(["git", "-C", self.dir, "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()


class Bisecting(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.n = 0

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def bisect(self, hist, machinery, **kw):
        self.n += 1
        results = os.path.join(self.tmp, f"results{self.n}")
        b = search.Bisect(hist.dir, hist.commits[0], kw.pop("bad", hist.commits[-1]), "fake-bug",
                          machinery, results, scratch=os.path.join(self.tmp, f"scratch{self.n}"), **kw)
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            code = b.run()
        with open(os.path.join(results, "bisect.json")) as f:
            rec = json.load(f)
        self.assertTrue(os.path.isfile(os.path.join(results, "summary.md")))
        self.assertEqual(rec["exit"], code)
        return code, rec

    def culprit(self, rec):
        return (rec["culprit"] or {}).get("commit")

    def test_deterministic_bug(self):
        h = History(self.tmp, extra={7: [("add", "bug")]})
        m = FakeMachinery(1.0, seed=1)
        code, rec = self.bisect(h, m)
        self.assertEqual(code, 0, rec)
        self.assertEqual(self.culprit(rec), h.commits[7])
        self.assertEqual(rec["rate"]["fails"], 10)                    # 10/10 on BAD
        self.assertEqual(rec["rate"]["good_step_runs"], 4)            # rate >= 74%: 4 clean runs
        self.assertGreaterEqual(rec["confidence"], 0.95)
        self.assertEqual(rec["culprit"]["revert"]["verdict"], "PASS")
        self.assertEqual((rec["culprit"]["refail"]["verdict"], rec["culprit"]["refail"]["fails"]), ("FAIL", 3))
        self.assertFalse(rec["culprit"]["same_text"])
        self.assertFalse(rec["culprit"]["merge"])
        roles = [s["role"] for s in rec["steps"]]
        self.assertEqual(roles[:2], ["bad", "good"])
        self.assertEqual(roles[-2:], ["culprit", "revert"])
        # 19 candidates: a binary search takes at most 5 steps.
        self.assertLessEqual(roles.count("bisect"), 5)
        goods = [s for s in rec["steps"] if s["verdict"] == "good" and s["role"] in ("good", "bisect")]
        want = 1.0
        for s in goods:
            self.assertEqual(s["clean"], 4)
            want *= 1 - (1 - stats.rate_lower(10, 10)) ** 4
        self.assertAlmostEqual(rec["confidence"], want)
        # Running confidence never rises.
        running = [s["confidence"] for s in rec["steps"] if s["confidence"] is not None]
        self.assertEqual(running, sorted(running, reverse=True))
        for s in rec["steps"]:
            self.assertLessEqual({"commit", "build_seconds", "rows", "runs", "verdict", "confidence"}, set(s))

    def test_race_with_measured_and_recorded_rate(self):
        for seed in range(5):
            h = History(os.path.join(self.tmp, f"race{seed}"), extra={12: [("add", "bug")]})
            code, rec = self.bisect(h, FakeMachinery(0.5, seed=seed), calibrate=20)
            with self.subTest(seed=seed, mode="measure"):
                self.assertIn(code, (0, 125), rec["stopped"])
                if code == 0:
                    self.assertEqual(self.culprit(rec), h.commits[12])
                    self.assertGreaterEqual(rec["confidence"], 0.66)
            code, rec = self.bisect(h, FakeMachinery(0.5, seed=100 + seed), rate_mode="recorded",
                                    recorded=Rate(15, 30, "15/30 recorded"))
            with self.subTest(seed=seed, mode="recorded"):
                self.assertEqual(code, 0, rec["stopped"])
                self.assertEqual(self.culprit(rec), h.commits[12])
                self.assertEqual(rec["rate"]["good_step_runs"], 12)   # rate >= 33%
                self.assertFalse(any("contradicted" in n for n in rec["notes"]))

    def test_a_commit_that_does_not_build_is_skipped(self):
        # The first midpoint (9 of 0..19) does not build; 10 mends it.
        h = History(self.tmp, extra={9: [("add", "BROKEN")], 10: [("rm", "BROKEN")], 14: [("add", "bug")]})
        code, rec = self.bisect(h, FakeMachinery(1.0, seed=2))
        self.assertEqual(code, 0, rec["stopped"])
        self.assertEqual(self.culprit(rec), h.commits[14])
        self.assertEqual([s["commit"] for s in rec["skipped"]], [h.commits[9]])
        self.assertIn("does not build", rec["skipped"][0]["why"])
        skipped = [s for s in rec["steps"] if s["commit"] == h.commits[9]][0]
        self.assertEqual((skipped["build"], skipped["runs"], skipped["miss"]), ("failed", 0, None))

    def test_skips_that_leave_two_candidates_name_none(self):
        # The bug commit itself does not build: the first bad commit is it or the next.
        h = History(self.tmp, extra={5: [("add", "bug"), ("add", "BROKEN")], 6: [("rm", "BROKEN")]})
        code, rec = self.bisect(h, FakeMachinery(1.0, seed=3))
        self.assertEqual(code, 125)
        self.assertIsNone(rec["culprit"])
        self.assertEqual(rec["candidates"], [h.commits[5], h.commits[6]])

    def test_revert_that_does_not_apply_is_unverified(self):
        h = History(self.tmp, extra={7: [("add", "bug")], 15: [("append", "bug")]})
        code, rec = self.bisect(h, FakeMachinery(1.0, seed=4))
        self.assertEqual(code, 1)
        self.assertEqual(self.culprit(rec), h.commits[7])
        self.assertEqual(rec["culprit"]["revert"]["verdict"], "not applied")
        self.assertFalse(rec["culprit"]["verified"])
        self.assertTrue(any(f.startswith("unverified") for f in rec["culprit"]["flags"]))

    def test_culprit_with_its_parents_text_is_flagged(self):
        # The bug comes with a data-only change (c11's code marker left out):
        # the culprit's kernel text is its parent's.
        h = History(os.path.join(self.tmp, "data"), extra={11: [("add", "data-bug"), ("rm", "c11")]})
        code, rec = self.bisect(h, FakeMachinery(1.0, seed=5, bug="data-bug"))
        self.assertEqual(code, 1, rec["stopped"])
        self.assertEqual(self.culprit(rec), h.commits[11])
        self.assertTrue(rec["culprit"]["same_text"])
        self.assertTrue(rec["culprit"]["verified"])
        self.assertTrue(any("identical to its parent" in f for f in rec["culprit"]["flags"]))

    def test_merge_culprit_is_flagged_and_reverted(self):
        h = History(self.tmp, n=10)
        h.git("checkout", "-q", "-b", "side", h.commits[4])
        h.touch("bug")
        h.git("add", "-A")
        h.git("commit", "-q", "-m", "side: the bug")
        h.git("checkout", "-q", "main")
        h.git("merge", "-q", "--no-ff", "-m", "merge side", "side")
        merge = h.head()
        for i in range(10, 16):
            h.touch(f"c{i}")
            h.git("add", "-A")
            h.git("commit", "-q", "-m", f"commit {i}")
        h.commits.append(h.head())
        code, rec = self.bisect(h, FakeMachinery(1.0, seed=6))
        self.assertEqual(code, 0, rec["stopped"])
        self.assertEqual(self.culprit(rec), merge)
        self.assertTrue(rec["culprit"]["merge"])
        self.assertEqual(rec["culprit"]["revert"]["verdict"], "PASS")
        self.assertTrue(any("merge" in f for f in rec["culprit"]["flags"]))

    def test_wrong_record_never_names_a_wrong_culprit_confidently(self):
        # The record says 27/30 (0.9); the reproducer FAILs 1 time in 5.
        named = unnamed = 0
        for seed in range(12):
            h = History(os.path.join(self.tmp, f"flaky{seed}"), extra={6: [("add", "bug")]})
            for mode in ("recorded", "measure"):
                kw = {"rate_mode": mode, "recorded": Rate(27, 30, "27/30 recorded")} \
                    if mode == "recorded" else {}
                code, rec = self.bisect(h, FakeMachinery(0.2, seed=seed), **kw)
                with self.subTest(seed=seed, mode=mode):
                    if rec["culprit"] is None:
                        unnamed += 1
                        self.assertEqual(code, 125)
                        self.assertTrue(rec["stopped"])
                    else:
                        named += 1
                        self.assertEqual(self.culprit(rec), h.commits[6], rec)
                        self.assertGreaterEqual(rec["culprit"]["confidence"], 0.66)
        # Most end below the floor: the honest answer for a rate this low.
        self.assertGreater(unnamed, named)

    def test_below_floor_says_where_it_stopped(self):
        h = History(self.tmp, extra={6: [("add", "bug")]})
        code, rec = self.bisect(h, FakeMachinery(0.2, seed=7), rate_mode="recorded",
                                recorded=Rate(27, 30, "27/30 recorded"))
        self.assertEqual(code, 125)
        self.assertIsNone(rec["culprit"])
        self.assertIn("below the floor", rec["stopped"])
        self.assertTrue(any("contradicted" in n for n in rec["notes"]), rec["notes"])
        self.assertLess(rec["confidence"], 0.66)

    def test_a_good_step_is_one_row_weighed_with_the_bisections_rate(self):
        # A record of run-in-qemu.sh's own would stop a row after 2 clean runs
        # (or 1); the driver passes its rate (--rate), so the row runs the 4
        # clean runs the driver wants, in one row.
        h = History(self.tmp, extra={7: [("add", "bug")]})
        for record_clean in (2, 1):
            code, rec = self.bisect(h, FakeMachinery(1.0, seed=8, record_clean=record_clean))
            self.assertEqual(code, 0, rec["stopped"])
            goods = [s for s in rec["steps"] if s["verdict"] == "good"]
            self.assertTrue(goods)
            for s in goods:
                self.assertEqual((s["clean"], len(s["rows"])), (4, 1))

    def test_rows_stopping_early_are_topped_up(self):
        # A row that stops clean before the driver's count (no rate passed,
        # a record of its own) is topped up by another row.
        h = History(self.tmp, extra={7: [("add", "bug")]})
        m = FakeMachinery(1.0, seed=8, record_clean=2)
        real_row = m.row
        m.row = lambda *a, rate=None, **kw: real_row(*a, **kw)
        code, rec = self.bisect(h, m)
        self.assertEqual(code, 0, rec["stopped"])
        goods = [s for s in rec["steps"] if s["verdict"] == "good"]
        self.assertTrue(goods)
        for s in goods:
            self.assertEqual((s["clean"], len(s["rows"])), (4, 2))

    def test_bad_that_does_not_fail_and_good_that_fails(self):
        h = History(self.tmp, extra={7: [("add", "bug")]})
        code, rec = self.bisect(h, FakeMachinery(1.0, seed=9), bad=h.commits[5])
        self.assertEqual(code, 125)
        self.assertIn("did not FAIL", rec["stopped"])
        h = History(os.path.join(self.tmp, "old"), extra={0: [("add", "bug")]})
        code, rec = self.bisect(h, FakeMachinery(1.0, seed=9))
        self.assertEqual(code, 125)
        self.assertIn("older than GOOD", rec["stopped"])


    def test_interrupted_row_stops_the_bisection(self):
        h = History(self.tmp, extra={7: [("add", "bug")]})
        m = FakeMachinery(1.0, seed=10)
        real_row = m.row

        def row(image, repro, results, max_runs=None, repeat=None, rate=None):
            if m.guests >= 12:
                return {"decision": None, "counts": {}, "runs": 0, "fails": 0, "trials": 0, "code": 130}
            return real_row(image, repro, results, max_runs, repeat)
        m.row = row
        code, rec = self.bisect(h, m)
        self.assertEqual(code, 130)
        self.assertTrue(rec["interrupted"])
        self.assertIsNone(rec["culprit"])
        self.assertGreaterEqual(len(rec["steps"]), 2)


class Glue(unittest.TestCase):
    def test_usage_errors_build_nothing(self):
        tmp = tempfile.mkdtemp()
        try:
            h = History(tmp, n=3)
            env = dict(os.environ, PYTHONPATH=os.path.join(TOP, "scripts"), KREPRO_CACHE=tmp)
            for args in (["--good", h.commits[0], "xfs-nowait-dio"],
                         ["--good", h.commits[2], "--bad", h.commits[0], "xfs-nowait-dio"],
                         ["--good", "nope", "--bad", h.commits[2], "xfs-nowait-dio"],
                         ["--good", h.commits[0], "--bad", h.commits[2], "xfs-nowait-di"],
                         ["--good", h.commits[0], "--bad", h.commits[2], "--floor", "1", "xfs-nowait-dio"],
                         ["--good", h.commits[0], "--bad", h.commits[2], "--bisect-frob", "xfs-nowait-dio"],
                         ["--tree", os.path.join(tmp, "none"), "--good", "a", "--bad", "b",
                          "xfs-nowait-dio"]):
                with self.subTest(args=args):
                    p = subprocess.run([sys.executable, "-m", "krepro", "bisect", "--tree", h.dir, *args],
                                       env=env, capture_output=True, text=True, cwd=tmp)
                    self.assertEqual(p.returncode, 128, p.stderr)
                    self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                    self.assertTrue(p.stderr.startswith("krepro: bisect: "), p.stderr)
            self.assertFalse(os.path.exists(os.path.join(tmp, "bisect")))
            p = subprocess.run([sys.executable, "-m", "krepro", "bisect", "--tree", h.dir, "--dry-run",
                                "--results", os.path.join(tmp, "res"),
                                "--good", h.commits[0], "--bad", h.commits[2], "xfs-nowait-dio"],
                               env=env, capture_output=True, text=True, cwd=tmp)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("2 commits on the first-parent line", p.stdout)
            self.assertIn("nothing is built or booted", p.stdout)
            self.assertFalse(os.path.exists(os.path.join(tmp, "bisect")))
            self.assertFalse(os.path.exists(os.path.join(tmp, "res")))
            p = subprocess.run([sys.executable, "-m", "krepro", "help", "bisect"], env=env,
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0)
            self.assertIn("Exit status: 0 a culprit named", p.stdout)
        finally:
            shutil.rmtree(tmp)

    def test_text_hash_reads_the_text_section(self):
        if not shutil.which("gcc") or not shutil.which("objcopy"):
            self.skipTest("no gcc or objcopy")
        tmp = tempfile.mkdtemp()
        try:
            def obj(name, src):
                with open(os.path.join(tmp, name + ".c"), "w") as f:
                    f.write(src)
                subprocess.run(["gcc", "-O2", "-c", "-o", os.path.join(tmp, name + ".o"),
                                os.path.join(tmp, name + ".c")], check=True)
                return machinery.text_sha256(os.path.join(tmp, name + ".o"))
            a = obj("a", 'int f(int x) { return x * 3; }\nconst char s[] = "one";\n')
            b = obj("b", 'int f(int x) { return x * 3; }\nconst char s[] = "two, longer";\n')
            c = obj("c", 'int f(int x) { return x * 5; }\nconst char s[] = "one";\n')
            self.assertIsNotNone(a)
            self.assertEqual(a, b)       # data differs, code does not
            self.assertNotEqual(a, c)
            self.assertIsNone(machinery.text_sha256(os.path.join(tmp, "missing")))
        finally:
            shutil.rmtree(tmp)

    def test_real_build_installs_image_config_and_text(self):
        """Machinery.build() with a stand-in for kernels.sh build-tree: the
        image and .config copied beside the results, the vmlinux linked then
        unlinked, the .text hashed; a failed build is a Build that says so."""
        if not shutil.which("gcc") or not shutil.which("objcopy"):
            self.skipTest("no gcc or objcopy")
        tmp = tempfile.mkdtemp()
        saved = machinery.SCRIPTS
        try:
            obj = os.path.join(tmp, "obj")
            os.makedirs(os.path.join(obj, "arch", "x86", "boot"))
            with open(os.path.join(obj, "arch", "x86", "boot", "bzImage"), "w") as f:
                f.write("image")
            with open(os.path.join(obj, ".config"), "w") as f:
                f.write("CONFIG_KASAN=y\n")
            with open(os.path.join(tmp, "v.c"), "w") as f:
                f.write("int f(int x) { return x + 1; }\n")
            subprocess.run(["gcc", "-c", "-o", os.path.join(obj, "vmlinux"), os.path.join(tmp, "v.c")],
                           check=True)
            scripts = os.path.join(tmp, "scripts")
            os.makedirs(scripts)
            fake = os.path.join(scripts, "kernels.sh")
            with open(fake, "w") as f:
                f.write(f"#!/bin/sh\n[ \"$1 $2\" = \"build-tree {tmp}/tree\" ] || exit 125\n"
                        f"echo 'krepro: built' >&2\necho {obj}/arch/x86/boot/bzImage\n")
            os.chmod(fake, 0o755)
            machinery.SCRIPTS = scripts
            m = machinery.Machinery("x86_64")
            image = os.path.join(tmp, "results", "kernels", "bzImage-x86_64-abc")
            b = m.build(os.path.join(tmp, "tree"), image)
            self.assertTrue(b.ok)
            self.assertEqual(b.image, image)
            with open(image) as f:
                self.assertEqual(f.read(), "image")
            with open(image + ".config") as f:
                self.assertEqual(f.read(), "CONFIG_KASAN=y\n")
            self.assertEqual(os.readlink(image + ".vmlinux"), os.path.join(obj, "vmlinux"))
            self.assertEqual(b.text, machinery.text_sha256(os.path.join(obj, "vmlinux")))
            m.unlink_debug(image)
            self.assertFalse(os.path.lexists(image + ".vmlinux"))
            b = m.build(os.path.join(tmp, "other"), image + "2")
            self.assertFalse(b.ok)
            self.assertIn("exited 125", b.why)
        finally:
            machinery.SCRIPTS = saved
            shutil.rmtree(tmp)

    def test_real_row_through_run_in_qemu(self):
        """Machinery.row() reads what run-in-qemu.sh writes (fake QEMU)."""
        import test_runner
        r = test_runner.Runner("test_usage_errors_never_boot")
        r.setUp()
        saved = dict(os.environ)
        try:
            os.environ.update(r.env)
            m = machinery.Machinery("x86_64")
            image = os.path.join(r.tmp, "kernels", "bzImage-6.1-x86_64-patched")
            r.set_plan("pass")
            with contextlib.redirect_stdout(io.StringIO()):
                got = m.row(image, "fake-clean", os.path.join(r.tmp, "row1"), max_runs=3)
            # No rate for it: 3 clean runs, the miss not bounded.
            self.assertEqual((got["decision"], got["counts"], got["code"]), ("PASS", {"PASS": 3}, 0))
            self.assertIn("miss not bounded", got["cell"])
            r.set_plan("pass")
            with contextlib.redirect_stdout(io.StringIO()):
                got = m.row(image, "fake-clean", os.path.join(r.tmp, "row0"), max_runs=20,
                            rate=Rate(10, 10, "BAD"))
            self.assertEqual((got["decision"], got["runs"], got["cell"]), ("PASS", 4, "PASS 4/4 (miss ≤ 1% at 95%)"))
            r.set_plan("pass", "fail-own")
            with contextlib.redirect_stdout(io.StringIO()):
                got = m.row(image, "fake-clean", os.path.join(r.tmp, "row2"), max_runs=3)
            self.assertEqual((got["decision"], got["fails"], got["runs"], got["code"]), ("FAIL", 1, 2, 1))
            r.set_plan("pass")
            with contextlib.redirect_stdout(io.StringIO()):
                got = m.row(image, "fake-clean", os.path.join(r.tmp, "row3"), repeat=2)
            self.assertEqual((got["decision"], got["runs"]), ("PASS", 2))
        finally:
            os.environ.clear()
            os.environ.update(saved)
            r.tearDown()


if __name__ == "__main__":
    unittest.main(verbosity=2)
