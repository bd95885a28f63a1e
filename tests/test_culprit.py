#!/usr/bin/env python3
"""The gate's culprit search on a synthetic series: a git tree whose BASE
commit and 24 series commits add marker files, the series' patches made by
git format-patch, a gate run.json with a regression, a fix and an unchanged
row, and test_bisect's fake builder and row runner (a row FAILs when its
reproducer's bug marker is in the image and its fix marker is not). Builds
no kernel, boots no guest."""
import contextlib
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))
sys.path.insert(0, HERE)
from krepro import gate as gatemod  # noqa: E402
from test_bisect import GIT, FakeMachinery  # noqa: E402

# repro -> (bug marker, fix marker)
BUGS = {"fake-a": ("bugA", "fixA"), "fake-b": ("bugB", "fixB"), "fake-c": ("bugC", "fixC")}


class PerRepro(FakeMachinery):
    """FakeMachinery whose bug and fix markers are the row's reproducer's;
    every build it really makes is counted in built (shared by the rows)."""

    def __init__(self, built, seed):
        super().__init__(1.0, seed)
        self.built = built

    def build(self, tree, image):
        self.built.append(image)
        return super().build(tree, image)

    def row(self, image, repro, results, **kw):
        self.bug, self.fix = BUGS[repro]
        return super().row(image, repro, results, **kw)


class Series:
    """BASE (bugB is in it) and n series commits; extra: index -> markers added."""

    def __init__(self, root, n=24, extra=None):
        self.dir = os.path.join(root, "linux")
        os.makedirs(os.path.join(self.dir, "m"))
        self.git("init", "-q")
        self.touch("base")
        self.touch("bugB")
        self.commit("BASE")
        self.good = self.head()
        for i in range(n):
            self.touch(f"p{i:02d}")
            for m in (extra or {}).get(i, ()):
                self.touch(m)
            self.commit(f"patch {i}")
            if i == 6:
                self.fix6 = self.head()
        self.bad = self.head()
        self.patches = os.path.join(root, "series")
        self.git("format-patch", "-q", "-o", self.patches, f"{self.good}..{self.bad}")
        self.files = sorted(os.path.join(self.patches, f) for f in os.listdir(self.patches))

    def touch(self, m):
        with open(os.path.join(self.dir, "m", m), "w") as f:
            f.write(m + "\n")

    def commit(self, msg):
        self.git("add", "-A")
        self.git("commit", "-q", "-m", msg)

    def git(self, *args):
        subprocess.run(GIT + ["-C", self.dir, *args], check=True, capture_output=True)

    def head(self):
        return subprocess.run(["git", "-C", self.dir, "rev-parse", "HEAD"], check=True,
                              capture_output=True, text=True).stdout.strip()


def gate_run(results, rows, series_files):
    """A gate run directory: run.json with rows (repro, base, series) and series.txt."""
    os.makedirs(results)
    rec = {"rows": [], "runs": [], "finished": "2026-01-01T00:00:00", "interrupted": False,
           "kernels": [{"label": "base"}, {"label": "base+series"}]}
    for repro, b, s in rows:
        for k, d in (("base", b), ("base+series", s)):
            rec["rows"].append({"repro": repro, "kernel": k, "decision": d, "cell": f"{d} 1/1"})
            rec["runs"].append({"repro": repro, "kernel": k, "outcome": d, "evidence": "e",
                                "log": f"{repro}.{k}.1/console.log"})
    with open(os.path.join(results, "run.json"), "w") as f:
        json.dump(rec, f)
    with open(os.path.join(results, "series.txt"), "w") as f:
        f.write("\n".join(series_files) + "\n")


class Culprits(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def gate(self, s, rows, patches=None, seed=1):
        results = os.path.join(self.tmp, "results")
        gate_run(results, rows, patches or s.files)
        built = []
        culprits = {"tree": s.dir, "good": s.good, "bad": s.bad, "patches": patches or s.files,
                    "arch": "x86_64", "machinery": lambda other: PerRepro(built, seed)}
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = gatemod.gate(results, "base", "base+series", culprits=culprits)
        with open(os.path.join(results, "gate.md")) as f:
            md = f.read()
        return code, md, built, results

    def test_two_rows_two_culprits_and_shared_builds(self):
        s = Series(self.tmp, extra={13: ["bugA"], 6: ["fixB"]})
        code, md, built, results = self.gate(s, [("fake-a", "PASS", "FAIL"), ("fake-b", "FAIL", "PASS"),
                                                 ("fake-c", "PASS", "PASS")])
        self.assertEqual(code, 1)            # a regression: 1, whatever its culprit
        self.assertIn("## Culprits", md)
        a = [l for l in md.splitlines() if l.startswith("| fake-a | regression")][0]
        b = [l for l in md.splitlines() if l.startswith("| fake-b | fix")][0]
        self.assertIn("0014-patch-13.patch", a)       # the 14th patch brought bugA
        self.assertIn("0007-patch-6.patch", b)        # the 7th cured bugB
        self.assertNotIn("fake-c |", md.split("## Culprits")[1])
        for name in ("fake-a", "fake-b"):
            with open(os.path.join(results, "culprit", name, "bisect.json")) as f:
                rec = json.load(f)
            self.assertEqual(rec["exit"], 0, rec["stopped"])
            self.assertGreaterEqual(rec["culprit"]["confidence"], 0.95)
            self.assertEqual(rec["culprit"]["revert"]["verdict"], "PASS")
        self.assertEqual(rec["direction"], "fix")
        self.assertEqual(rec["culprit"]["fix"]["subject"], "patch 6")
        self.assertEqual(rec["culprit"]["revert"]["row"], "FAIL")
        with open(os.path.join(results, "culprit", "fake-b", "summary.md")) as f:
            self.assertIn(f"The fix: {s.fix6[:12]}", f.read())
        self.assertIn(s.fix6[:12], b)
        # The fix's rate is measured on BASE, where it FAILs.
        self.assertEqual(rec["steps"][0]["commit"], s.good)
        self.assertEqual(rec["steps"][0]["role"], "bad")
        # Both bisections build BAD, GOOD and the reverts at least once:
        # the second reuses every commit the first built.
        steps = 0
        for name in ("fake-a", "fake-b"):
            with open(os.path.join(results, "culprit", name, "bisect.json")) as f:
                steps += sum(1 for st in json.load(f)["steps"] if st["build"] == "ok")
        self.assertLess(len(built), steps)
        self.assertEqual(len(built), len(set(built)))

    def test_culprit_is_the_first_patch_and_the_last(self):
        for i in (0, 23):
            with self.subTest(patch=i):
                s = Series(os.path.join(self.tmp, f"s{i}"), extra={i: ["bugA"]})
                shutil.rmtree(os.path.join(self.tmp, "results"), ignore_errors=True)
                code, md, _, _ = self.gate(s, [("fake-a", "PASS", "FAIL")])
                self.assertEqual(code, 1)
                self.assertIn(f"{i + 1:04d}-patch-{i}.patch", md)

    def test_a_fix_alone_exits_0_and_names_its_patch(self):
        s = Series(self.tmp, extra={0: ["fixB"]})
        code, md, _, _ = self.gate(s, [("fake-b", "FAIL", "PASS")])
        self.assertEqual(code, 0)
        self.assertIn("0001-patch-0.patch", md)

    def test_a_branch_that_is_not_the_series_names_nothing(self):
        s = Series(self.tmp, extra={3: ["bugA"]})
        wrong = list(s.files)
        wrong[2], wrong[3] = wrong[3], wrong[2]
        code, md, built, _ = self.gate(s, [("fake-a", "PASS", "FAIL")], patches=wrong)
        self.assertEqual(code, 1)
        self.assertIn("No patch named for fake-a", md)
        self.assertIn("patch-ids differ", md)
        self.assertEqual(built, [])

    def test_no_search_without_a_flipped_row_or_a_finished_run(self):
        s = Series(self.tmp, extra={3: ["bugA"]})
        code, md, built, _ = self.gate(s, [("fake-c", "PASS", "PASS")])
        self.assertEqual((code, built), (0, []))
        self.assertNotIn("Culprits", md)

    def test_gate_cli_usage_errors(self):
        results = os.path.join(self.tmp, "r")
        gate_run(results, [("fake-a", "PASS", "PASS")], [])
        env = dict(os.environ, PYTHONPATH=os.path.join(TOP, "scripts"))
        for args in (["--tree", self.tmp], ["--tree", os.path.join(self.tmp, "no"), "--good", "a", "--bad", "b"],
                     ["--tree", self.tmp, "--good", "a", "--bad", "b", "--calibrate", "0"]):
            with self.subTest(args=args):
                p = subprocess.run([sys.executable, "-m", "krepro", "gate", results, "base", "base+series", *args],
                                   env=env, capture_output=True, text=True)
                self.assertEqual(p.returncode, 128, p.stderr)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


if __name__ == "__main__":
    unittest.main()
