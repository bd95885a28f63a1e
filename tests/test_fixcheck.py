#!/usr/bin/env python3
"""krepro fixcheck on small trees: a user's git tree, a tree that is no git
repository, and a fake flavour tree in a temporary cache, with the real
kernels.sh check-series (git only) and a fake for the builds and rows (a
row FAILs when the tree or kernel it runs on holds the buggy line). Builds
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
import unittest.mock

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))
sys.path.insert(0, HERE)
from krepro.fixcheck import check as fixcheck, command as fixcheck_cli  # noqa: E402
from test_bisect import GIT  # noqa: E402

REPRO = "xfs-nowait-dio"
FIX = """From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001
From: T <t@t>
Subject: [PATCH] fix the line

---
 src.c | 2 +-
 1 file changed, 1 insertion(+), 1 deletion(-)

diff --git a/src.c b/src.c
--- a/src.c
+++ b/src.c
@@ -1,3 +1,3 @@
 int a;
-int buggy;
+int {word};
 int b;
--
2.0
"""


class FakeTools(fixcheck.Tools):
    """Real check-series; fake tree, series and build-series; a row that
    FAILs (10/10, or 1 a row) when its tree or image holds 'int buggy;'."""

    def __init__(self, interrupt=False):
        super().__init__("x86_64", "6.1")
        self.calls, self.interrupt = [], interrupt

    def kernels(self, *args, env=None):
        self.calls.append(("kernels",) + args)
        if args[0] == "check-series":
            return super().kernels(*args, env=env)
        if args[0] == "series":
            return subprocess.CompletedProcess(args, 0, "", "")
        if args[0] == "build-series":
            name, tree, base, *patches = args[1:]
            img = os.path.join(env["KREPRO_KERNELS"], f"bzImage-6.1-x86_64-{name}")
            os.makedirs(os.path.dirname(img), exist_ok=True)
            subprocess.run(["git", "-C", tree, "checkout", "-q", "-f", "--detach", base], check=True)
            for p in patches:
                subprocess.run(["git", "-C", tree, "apply", p], check=True)
            shutil.copyfile(os.path.join(tree, "src.c"), img)
            return subprocess.CompletedProcess(args, 0, "", "")
        return subprocess.CompletedProcess(args, 0, "", "")

    def run(self, args, results):
        self.calls.append(("run",) + tuple(args))
        if self.interrupt and "--rate" in args:
            return 130, None
        if "--tree" in args:
            src = os.path.join(args[args.index("--tree") + 1], "src.c")
        elif args[args.index("--kernel") + 1] == "unpatched":
            src = os.path.join(fixcheck.cache(), "linux-6.1", "src.c")
        else:
            src = args[args.index("--kernel") + 1]
        with open(src) as f:
            buggy = "int buggy;" in f.read()
        n = int(args[args.index("--repeat") + 1]) if "--repeat" in args else 5
        row = {"decision": "FAIL" if buggy else "PASS", "fails": n if buggy else 0, "trials": n, "runs": n,
               "cell": f"FAIL {n}/{n}" if buggy else f"PASS {n}/{n} (miss ≤ 1% at 95%)"}
        os.makedirs(results, exist_ok=True)
        with open(os.path.join(results, "run.json"), "w") as f:
            json.dump({"rows": [row]}, f)
        return (1 if buggy else 0), row


class Fixcheck(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        self.saved = os.environ.get("KREPRO_CACHE")
        os.environ["KREPRO_CACHE"] = os.path.join(self.tmp, "cache")

    def tearDown(self):
        if self.saved is None:
            os.environ.pop("KREPRO_CACHE", None)
        else:
            os.environ["KREPRO_CACHE"] = self.saved
        shutil.rmtree(self.tmp)

    def tree(self, name, line="int buggy;", git=True):
        d = os.path.join(self.tmp, name)
        os.makedirs(d)
        with open(os.path.join(d, "src.c"), "w") as f:
            f.write(f"int a;\n{line}\nint b;\n")
        if git:
            for args in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
                subprocess.run(GIT + ["-C", d, *args], check=True, capture_output=True)
        return d

    def patch(self, word="fixed"):
        p = os.path.join(self.tmp, f"fix-{len(word)}.patch")
        with open(p, "w") as f:
            f.write(FIX.replace("{word}", word))
        return p

    def check(self, *args, tools=None):
        self.n = getattr(self, "n", 0) + 1
        results = os.path.join(self.tmp, f"results{self.n}")
        tools = tools or FakeTools()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            try:
                code = fixcheck_cli.main([*args, "--results", results, REPRO], tools=tools)
            except SystemExit as e:      # the option parser's own usage error
                code = e.code
        rec = None
        if os.path.exists(os.path.join(results, "fixcheck.json")):
            with open(os.path.join(results, "fixcheck.json")) as f:
                rec = json.load(f)
            with open(os.path.join(results, "fixcheck.md")) as f:
                rec["md"] = f.read()
        return code, rec, tools

    def test_the_fix_holds_on_a_git_tree_left_untouched(self):
        t = self.tree("linux")
        head = subprocess.run(["git", "-C", t, "rev-parse", "HEAD"], capture_output=True, text=True).stdout
        code, rec, tools = self.check("--tree", t, "--fix", self.patch())
        self.assertEqual(code, 0, rec)
        self.assertEqual((rec["as_is"]["decision"], rec["applies"]["ok"], rec["with_fix"]["decision"]),
                         ("FAIL", True, "PASS"))
        self.assertIn("The fix holds", rec["md"])
        self.assertIn("| does the tree have the bug? | yes: FAIL 10/10", rec["md"])
        # The row with the fix is weighed with the rate the tree as it is measured.
        fixed = [c for c in tools.calls if c[0] == "run" and "--rate" in c][0]
        self.assertEqual(fixed[fixed.index("--rate") + 1], "10/10")
        # Both rows are --tree rows of the one clone; the user's tree is as it was.
        trees = {c[c.index("--tree") + 1] for c in tools.calls if c[0] == "run"}
        self.assertEqual(len(trees), 1)
        self.assertTrue(trees.pop().startswith(os.environ["KREPRO_CACHE"]))
        self.assertIn("int buggy;", open(os.path.join(t, "src.c")).read())
        self.assertEqual(subprocess.run(["git", "-C", t, "rev-parse", "HEAD"], capture_output=True,
                                        text=True).stdout, head)

    def test_a_fix_that_does_not_cure_exits_1(self):
        code, rec, _ = self.check("--tree", self.tree("linux"), "--fix", self.patch("buggy; /* still */"))
        self.assertEqual(code, 1)
        self.assertIn("does not hold", rec["md"])

    def objects(self, tree):
        return sorted(os.path.relpath(os.path.join(d, f), tree)
                      for d, _, fs in os.walk(os.path.join(tree, ".git", "objects")) for f in fs)

    def test_a_fix_in_the_tree_already(self):
        t = self.tree("linux", "int fixed;")
        before = self.objects(t)
        code, rec, tools = self.check("--tree", t, "--fix", self.patch())
        self.assertEqual(code, 125)
        self.assertFalse(rec["applies"]["ok"])
        self.assertIn("in the tree already", rec["applies"]["why"])
        self.assertIn("nothing was built or run", rec["md"])
        # Asked of the tree's own objects, first: no clone, no build, no row.
        self.assertEqual((rec["as_is"], rec["with_fix"]), (None, None))
        self.assertEqual([c for c in tools.calls if c[:2] != ("kernels", "check-series")], [])
        self.assertFalse(os.path.exists(os.path.join(os.environ["KREPRO_CACHE"], "fixcheck")))
        self.assertEqual(self.objects(t), before)

    def test_a_fix_that_does_not_apply_is_found_before_the_flavour_is_built(self):
        cache_tree = self.tree(os.path.join("cache", "linux-6.1"), "int other;")
        subprocess.run(["git", "-C", cache_tree, "tag", "pristine"], check=True)
        code, rec, tools = self.check("--branch", "6.1", "--fix", self.patch())
        self.assertEqual(code, 125)
        self.assertIn("patch failed: src.c:1", rec["applies"]["why"])
        self.assertEqual([c for c in tools.calls if c[0] == "run" or c[:2] == ("kernels", "build-series")], [])

    def dry(self, *args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
            code = fixcheck_cli.main([*args, "--dry-run", REPRO], tools=FakeTools())
        return code, out.getvalue()

    def test_a_dry_run_asks_whether_the_fix_applies_and_writes_nothing(self):
        cache = os.environ["KREPRO_CACHE"]
        t = self.tree("linux")
        before = self.objects(t)
        self.assertEqual(self.dry("--tree", t, "--fix", self.patch()), (0, unittest.mock.ANY))
        self.assertIn("applies: yes", self.dry("--tree", t, "--fix", self.patch())[1])
        done = self.tree("done", "int fixed;")
        self.assertIn("applies: no: it is in the tree already", self.dry("--tree", done, "--fix", self.patch())[1])
        # A plain tree would be snapshotted first, the flavours' tree unpacked: not by a dry run.
        self.assertIn("applies: not checked yet: the tree is no git tree",
                      self.dry("--tree", self.tree("plain", git=False), "--fix", self.patch())[1])
        self.assertIn("applies: not checked yet: no 6.1 tree in the cache",
                      self.dry("--branch", "6.1", "--fix", self.patch())[1])
        # kernels.sh makes the cache directory itself, nothing in it.
        self.assertEqual(os.listdir(cache) if os.path.exists(cache) else [], [])
        self.assertEqual(self.objects(t), before)

    def test_a_tree_that_is_no_git_repository_is_snapshotted(self):
        t = self.tree("plain", git=False)
        code, rec, _ = self.check("--tree", t, "--fix", self.patch())
        self.assertEqual(code, 0, rec)
        self.assertFalse(os.path.exists(os.path.join(t, ".git")))
        self.assertEqual(os.listdir(t), ["src.c"])
        self.assertTrue(any("no git tree" in n for n in rec["notes"]))

    def test_the_flavour_and_the_seeds_fix(self):
        cache_tree = self.tree(os.path.join("cache", "linux-6.1"))
        subprocess.run(["git", "-C", cache_tree, "tag", "pristine"], check=True)
        code, rec, tools = self.check("--branch", "6.1", "--fix", self.patch())
        self.assertEqual(code, 0, rec)
        build = [c for c in tools.calls if c[:2] == ("kernels", "build-series")][0]
        self.assertEqual(build[2:5], ("fixcheck-" + REPRO, cache_tree, "pristine"))
        self.assertEqual(rec["tree"], "6.1 unpatched flavour")
        # Without --fix, the seed's own fix for the branch is taken.
        _, fixes = fixcheck_cli.checked(fixcheck_cli.parse(["--branch", "6.12", REPRO]))
        self.assertEqual([os.path.relpath(f, TOP) for f in fixes],
                         [os.path.join("kernel-patches", REPRO, "6.12", f) for f in
                          sorted(os.listdir(os.path.join(TOP, "kernel-patches", REPRO, "6.12"))) if f.startswith("fix")])

    def test_interrupted_and_usage_errors(self):
        code, rec, _ = self.check("--tree", self.tree("linux"), "--fix", self.patch(),
                                  tools=FakeTools(interrupt=True))
        self.assertEqual(code, 130)
        self.assertEqual(rec["exit"], 130)
        for args in (["--tree", os.path.join(self.tmp, "none")], ["--fix", os.path.join(self.tmp, "none.patch")],
                     ["--calibrate", "0"], ["--branch", "5.4"], ["--frob"]):
            with self.subTest(args=args):
                code, rec, tools = self.check(*args)
                self.assertEqual((code, rec, tools.calls), (128, None, []))
        env = dict(os.environ, PYTHONPATH=os.path.join(TOP, "scripts"))
        p = subprocess.run([sys.executable, "-m", "krepro", "fixcheck", "no-such-repro"], env=env,
                           capture_output=True, text=True)
        self.assertEqual(p.returncode, 128)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)


if __name__ == "__main__":
    unittest.main()
