#!/usr/bin/env python3
"""The stable branch table and which branch a kernel of the user's is of:
its release string, its tree's Makefile, its bzImage's version string; and
the entry points' --branch, checked before any work."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import branches  # noqa: E402


sys.path.insert(0, HERE)
from test_runner import kernel_image  # noqa: E402  (a fake bzImage with a version string)


def bzimage(path, version):
    kernel_image(path, "stamp", version)


class Branches(unittest.TestCase):
    def test_table(self):
        self.assertEqual(list(branches.BRANCHES)[:2], ["6.1", "6.12"])
        self.assertEqual(branches.DEFAULT, "6.1")
        self.assertEqual(branches.BRANCHES["6.12"]["package"], "linux-source-6.12")

    def test_of_release(self):
        for rel, want in (("6.12.118+deb12-cloud-amd64", "6.12"), ("6.1.0-50-amd64", "6.1"),
                          ("6.12.118-rt-amd64", "6.12"), ("6.6", "6.6"), ("6.10.3", "6.10"),
                          ("616", None), ("", None), (None, None), ("v6.1", None)):
            self.assertEqual(branches.of_release(rel), want, rel)

    def test_of_bzimage_and_tree(self):
        with tempfile.TemporaryDirectory() as d:
            p = os.path.join(d, "bzImage")
            bzimage(p, b"6.12.118 (krepro@krepro) #1 SMP PREEMPT_DYNAMIC")
            self.assertEqual(branches.of_bzimage(p), "6.12")
            bzimage(p, b"")
            self.assertIsNone(branches.of_bzimage(p))
            with open(p, "wb") as f:
                f.write(b"\0" * 100)        # too short to have a header
            self.assertIsNone(branches.of_bzimage(p))
            self.assertIsNone(branches.of_bzimage(os.path.join(d, "none")))
            with open(os.path.join(d, "Makefile"), "w") as f:
                f.write("# SPDX\nVERSION = 6\nPATCHLEVEL = 12\nSUBLEVEL = 118\n")
            self.assertEqual(branches.of_tree(d), "6.12")
            with open(os.path.join(d, "Makefile"), "w") as f:
                f.write("all:\n\ttrue\n")
            self.assertIsNone(branches.of_tree(d))
            self.assertIsNone(branches.of_tree(os.path.join(d, "nowhere")))

    def run_entry(self, *argv, env=None):
        e = dict(os.environ, KREPRO_CACHE=tempfile.mkdtemp(), **(env or {}))
        p = subprocess.run(list(argv), cwd=TOP, env=e, capture_output=True, text=True, timeout=120)
        return p.returncode, p.stderr

    def test_a_bad_branch_is_refused_before_any_work(self):
        for argv, env in (
                (["./run-in-qemu.sh", "--branch", "6.13", "--dry-run", "xfs-nowait-dio"], None),
                (["./run-in-qemu.sh", "--dry-run", "xfs-nowait-dio"], {"KREPRO_BRANCH": "x" * 1000}),
                (["scripts/kernels.sh", "series", "patched"], {"KREPRO_BRANCH": "6.2"}),
                (["scripts/gate.sh", "--branch", "6.2", "some.patch"], None),
                (["scripts/krepro-py", "bundle", "--branch", "5.4", "--kernel", "patched",
                  "xfs-nowait-dio"], None),
                (["scripts/krepro-py", "bisect", "--rate", "recorded", "--branch", "6.2", "--good",
                  "a", "--bad", "b", "xfs-nowait-dio"], None)):
            code, err = self.run_entry(*argv, env=env)
            self.assertEqual(code, 128, (argv, err))
            self.assertLessEqual(len(err.strip().splitlines()), 2, (argv, err))
            self.assertLess(len(err), 400, (argv, err))

    def test_kernels_sh_keeps_the_contract(self):
        # --help on stdout with 0; bad input one line and the usage, 128,
        # before any lock or unpacking; a near command suggested.
        sh = os.path.join(TOP, "scripts", "kernels.sh")
        p = subprocess.run([sh, "--help"], capture_output=True, text=True)
        self.assertEqual((p.returncode, p.stderr), (0, ""))
        self.assertIn("usage: kernels.sh", p.stdout)
        for argv, says in ((["buidl"], "did you mean build?"), (["build", "bogus"], "unknown flavour"),
                           (["stale"], "takes one FLAVOUR"), ([], "a command is needed"),
                           (["build-tree"], "takes one DIR"), (["x" * 5000], "unknown command")):
            code, err = self.run_entry(sh, *argv)
            self.assertEqual(code, 128, (argv, err))
            self.assertIn(says, err)
            self.assertNotIn("unbound", err)
            self.assertLess(len(err), 1000)

    def test_series_of_a_branch(self):
        code, out = 0, subprocess.run(["scripts/kernels.sh", "series", "patched"], cwd=TOP,
                                      env=dict(os.environ, KREPRO_BRANCH="6.12"),
                                      capture_output=True, text=True).stdout
        self.assertTrue(out.strip())
        for p in out.split():
            self.assertIn("/6.12/", p)
        self.assertEqual(code, 0)

    def test_a_damaged_image_is_stale(self):
        """A cached image whose content is not what was installed (truncated,
        half-written) is rebuilt, not booted: kernels.sh stale says so."""
        cache = os.environ.get("KREPRO_CACHE") or os.path.expanduser("~/.cache/krepro")
        if not os.path.isdir(os.path.join(cache, "linux-6.1", ".git")):
            self.skipTest("no 6.1 tree in the cache (make check-patches unpacks it)")
        env = dict(os.environ, KREPRO_CACHE=cache, KREPRO_BRANCH="6.1")
        sh = os.path.join(TOP, "scripts", "kernels.sh")
        stamp = subprocess.run([sh, "stamp", "unpatched"], env=env, capture_output=True,
                               text=True).stdout.strip()
        self.assertTrue(stamp)
        with tempfile.TemporaryDirectory() as d:
            env["KREPRO_KERNELS"] = d
            img = os.path.join(d, "bzImage-6.1-x86_64-unpatched")
            with open(img, "wb") as f:
                f.write(b"an image" * 1000)
            with open(img + ".stamp", "w") as f:
                f.write(stamp + "\n")
            import hashlib
            with open(img + ".sha256", "w") as f:
                f.write(hashlib.sha256(b"an image" * 1000).hexdigest() + "\n")
            stale = lambda: subprocess.run([sh, "stale", "unpatched"], env=env, capture_output=True, text=True)
            self.assertEqual(stale().stdout.strip(), "")
            with open(img, "r+b") as f:
                f.truncate(100)
            p = stale()
            self.assertEqual(p.stdout.strip(), "stale")
            self.assertIn("is damaged", p.stderr)
            os.remove(img + ".sha256")
            self.assertEqual(stale().stdout.strip(), "stale")

    def test_rate_is_checked(self):
        for bad in ("1_0/10", "٣/10", "11/10", "0/10", "1/0", "x", "3"):
            code, err = self.run_entry("./run-in-qemu.sh", "--dry-run", "--rate", bad,
                                       "--kernel", "patched", "xfs-nowait-dio")
            self.assertEqual(code, 128, (bad, err))


if __name__ == "__main__":
    unittest.main(verbosity=2)
