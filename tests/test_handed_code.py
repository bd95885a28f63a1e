#!/usr/bin/env python3
"""Nothing handed over is ever code: a make variable, a kernel package's
names, a tree given to --tree or --base.

- make: a variable on the command line or in the environment holding
  `; touch F` or `$(shell touch F)`, under make -n and without, creates no
  F, and its text never shows in a recipe make -n prints; every variable
  the Makefile names is tried.

Runs in a copy of the source tree with an empty cache (tests/test_contract.py's
setup), KREPRO_NO_BUILD=1 and a QEMU, apt-get and cmake that leave a mark if
started. Builds nothing, boots nothing.
"""
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import test_contract as contract  # noqa: E402
sys.dont_write_bytecode = True  # the tree copy must not change, not even by Python

# Every target that takes a value, for make -n to print (not test: its
# recipe runs make again, even under -n).
GOALS = ["check-args", "repro-all", "calibrate", "sweeps", "kernels", "check-patches", "distro-check",
         "lava-check", "lava-compare", "lava-lab-check", "gate", "report", "bisect", "fixcheck", "bundle",
         "build", "build-arm", "guest", "guest-arm", "unit", "clean"]
NO_SERIES = "SERIES=/nonexistent/series"
NO_TREE = ["TREE=/nonexistent/linux", "GOOD=a", "BAD=b", "REPRO=nosuch"]
# The variables the Makefile documents or its recipes use: the target run
# without -n (one that refuses before any work, or reads files only) and
# what else it needs.
NAMED = {
    "BUILD": ("clean", []), "MISS": ("check-args", []), "MAX_RUNS": ("check-args", []),
    "REPEAT": ("check-args", []), "CALIBRATE_RUNS": ("check-args", []), "REPROS": ("check-args", []),
    "SWEEPS": ("check-args", []), "DISTRO_CHECK": ("check-args", []), "DISTRO_KERNEL": ("check-args", []),
    "LAVA_CHECK": ("check-args", []), "LAVA_CHECK_ARM": ("check-args", []),
    "LAB_CHECK": ("check-args", []), "LAB_CHECK_ARM": ("check-args", []),
    "BRANCH": ("check-args", []), "ARM_BRANCHES": ("check-args", []),
    "KREPRO_ARCH": ("gate", [NO_SERIES]), "NO_BISECT": ("gate", [NO_SERIES]),
    "SERIES": ("gate", []), "BASE": ("gate", [NO_SERIES]), "DIR": ("report", []),
    "RATE": ("bisect", NO_TREE), "TREE": ("bisect", NO_TREE[1:]), "GOOD": ("bisect", NO_TREE),
    "BAD": ("bisect", NO_TREE), "REPRO": ("bisect", NO_TREE[:3]),
    "FIX": ("fixcheck", ["REPRO=nosuch"]), "KERNEL": ("bundle", ["REPRO=nosuch"]),
    "BUNDLES": ("bundle", ["REPRO=nosuch", "KERNEL=patched"]),
}


def setup(scratch):
    top, cache, marks, env, subst = contract.setup(scratch)
    contract.marker_tool(os.path.join(scratch, "bin", "cmake"), os.path.join(marks, "cmake"))
    env = dict(env, KREPRO_NO_BUILD="1")
    return top, marks, env


class Make(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory(prefix="krepro-handed.")
        cls.top, cls.marks, cls.env = setup(cls.scratch.name)
        cls.pwned = os.path.join(cls.scratch.name, "pwned")
        os.makedirs(cls.pwned)
        cls.n = 0

    @classmethod
    def tearDownClass(cls):
        cls.scratch.cleanup()

    def marker(self):
        Make.n += 1
        return os.path.join(self.pwned, str(self.n))

    def make(self, args, env=None, dry=False):
        argv = ["make", "-s", "-C", self.top] + (["-n"] if dry else []) + args
        return subprocess.run(argv, env=dict(self.env, **(env or {})), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=120)

    def judge(self, what, p, mark):
        self.assertFalse(os.path.exists(mark), f"{what}: the value ran as code")
        self.assertIn(p.returncode, (0, 2), f"{what}: exit {p.returncode}\n{p.stderr[-2000:]}")
        self.assertNotIn(mark, p.stdout, f"{what}: the value is in a recipe's text:\n{p.stdout[-600:]}")
        self.assertNotIn("Traceback", p.stderr, what)
        if p.returncode == 2 and "nothing was run" in p.stderr:
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, f"{what}: {p.stderr}")

    def hostile(self, mark):
        return [f"x; touch {mark}", f"$(shell touch {mark})"]

    def test_named_variables(self):
        for var, (goal, extra) in NAMED.items():
            for dry in (True, False):
                for i in range(2):
                    mark = self.marker()
                    value = self.hostile(mark)[i]
                    with self.subTest(var=var, value=value, dry=dry):
                        goals = GOALS if dry else [goal]
                        p = self.make(goals + extra + [f"{var}={value}"], dry=dry)
                        self.judge(f"make {'-n ' if dry else ''}{goal} {var}={value!r}", p, mark)

    def test_from_the_environment(self):
        # make expands a variable of the environment where it is used.
        for var in NAMED:
            mark = self.marker()
            with self.subTest(var=var):
                p = self.make(GOALS + [NO_SERIES], env={var: f"$(shell touch {mark})"}, dry=True)
                self.judge(f"{var}=... make -n", p, mark)

    def test_every_variable_of_the_makefile(self):
        # The Makefile's own variables too: a value given for one changes nothing.
        with open(os.path.join(TOP, "Makefile")) as f:
            names = set(re.findall(r"^(?:override\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*[:?]?=", f.read(), re.M))
        names |= {"MAKECMDGOALS", "NOT_A_VARIABLE"}
        for var in sorted(names - set(NAMED)):
            mark = self.marker()
            with self.subTest(var=var):
                p = self.make(GOALS + [NO_SERIES, f"{var}=$(shell touch {mark}); touch {mark}"], dry=True)
                self.judge(f"make -n {var}=...", p, mark)
                # Exported to a recipe: make expands a command-line variable to export it.
                p = self.make(["report", f"{var}=$(shell touch {mark}); touch {mark}"])
                self.judge(f"make report {var}=...", p, mark)

    def test_refusal_is_one_line_before_anything(self):
        p = self.make(["gate", "SERIES=/x", "MISS=0.5 /x; touch F; false"])
        self.assertEqual(p.returncode, 2)
        self.assertRegex(p.stderr.strip(), r"^Makefile:\d+: \*\*\* MISS wants a probability[^\n]*Stop\.$")
        self.assertFalse(os.path.exists(os.path.join(self.top, "F")))
        for args, want in ((["kernels", "BRANCH=6.1;true"], "BRANCH wants branches"),
                           (["repro-all", "REPROS=--help"], "REPROS wants reproducers' names"),
                           (["bundle", "BRANCH=6.1 6.12", "REPRO=x", "KERNEL=patched"],
                            "BRANCH wants one branch at most"),
                           (["clean", "BUILD=/tmp/build-2"], None), (["clean", "BUILD=a b"], "BUILD wants"),
                           (["distro-check", "DISTRO_KERNEL=linux-image-amd64 x"], "DISTRO_KERNEL wants")):
            with self.subTest(args=args):
                p = self.make(args, dry=True)
                if want is None:
                    self.assertEqual(p.returncode, 0, p.stderr)
                    continue
                self.assertEqual(p.returncode, 2, p.stdout + p.stderr)
                self.assertIn(want, p.stderr)
                self.assertEqual(p.stdout, "")

    def test_values_still_reach_the_recipes(self):
        # A value given is exported as its text, and a good one is taken.
        p = self.make(["report", "DIR=/nonexistent/run $(x) 'q'"])
        self.assertEqual(p.returncode, 2)
        self.assertIn("/nonexistent/run $(x) 'q'", p.stderr)
        p = self.make(["check-args", "MISS=0.05", "REPEAT=3", "BRANCH=6.12", "REPROS=xfs-nowait-dio\tbpf-percpu-reuse"])
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.make(["repro-all", "REPROS=xfs-nowait-dio\narm-kprobe-fortify", "BRANCH=6.1"], dry=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("--expect xfs-nowait-dio", p.stdout)
        self.assertIn("--expect arm-kprobe-fortify", p.stdout)

    def test_zz_nothing_was_started(self):
        # Last (the tests run in name order): after every case above.
        self.assertEqual(os.listdir(self.marks), [], "QEMU, apt-get or cmake was started")
        self.assertFalse(os.path.exists(os.path.join(self.top, "build")), "a build directory was made")


if __name__ == "__main__":
    unittest.main(verbosity=1)
