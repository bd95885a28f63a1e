#!/usr/bin/env python3
"""Nothing handed over is ever code: a make variable, a kernel package's
names, a tree given to --tree or --base.

- make: a variable on the command line or in the environment holding
  `; touch F` or `$(shell touch F)`, under make -n and without, creates no
  F, and its text never shows in a recipe make -n prints; every variable
  the Makefile names is tried. In a copy of the source tree with an empty
  cache (tests/test_contract.py's setup), KREPRO_NO_BUILD=1 and a QEMU,
  apt-get and cmake that leave a mark if started.
- A linux-image .deb whose boot/vmlinuz-<release> holds a newline, $(...),
  backquotes or quotes, and a kernel image so named, are refused before
  anything is unpacked; and a bundle's run.sh takes such a label as data
  (sh -n, --help and a run with a fake QEMU create nothing). With
  tests/test_bundle.py's fake build. A LAVA job names such a kernel's file
  by a URL that holds its name as characters, a lab's copy by a plain name.
- A git tree of someone else's, with a core.fsmonitor hook and hooks that
  leave a mark, its index's stat data stale (a status would rewrite it):
  every command given it as --tree or --base (dry runs, refusals, and the
  steps before a build: fixcheck's clone, bisect's scratch clone) runs no
  hook and leaves its index's bytes as they were.

Builds nothing, boots nothing.
"""
import hashlib
import io
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import types
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import test_contract as contract  # noqa: E402
from test_bundle import COREUTILS, fake_build  # noqa: E402
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro.bundle import make as bundle_make  # noqa: E402
from krepro.lava import job as lava_job, lab as lava_lab  # noqa: E402
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


# A release as code: each of these would run, pasted into a shell's text.
RELEASE = "6.1.0-1$(touch F)`touch G`'\"x"


def tar_gz(members):
    """A .tar.gz of (name, data) members, data None for a directory."""
    b = io.BytesIO()
    with tarfile.open(fileobj=b, mode="w:gz") as t:
        for name, data in members:
            i = tarfile.TarInfo(name)
            if data is None:
                i.type, i.mode = tarfile.DIRTYPE, 0o755
                t.addfile(i)
            else:
                i.size, i.mode = len(data), 0o644
                t.addfile(i, io.BytesIO(data))
    return b.getvalue()


def ar_deb(path, release, image):
    """A .deb made by hand (an ar archive of debian-binary and two tarballs):
    dpkg-deb builds none with a newline in a member's name, and a package
    is someone else's, made by anything."""
    data = tar_gz([("./", None), ("./boot/", None), (f"./boot/vmlinuz-{release}", image),
                   ("./lib/", None), ("./lib/modules/", None), (f"./lib/modules/{release}/", None)])
    control = tar_gz([("./control", b"Package: x\nVersion: 1\nArchitecture: amd64\n"
                                    b"Maintainer: x <x@x>\nDescription: x\n")])
    out = b"!<arch>\n"
    for name, blob in (("debian-binary", b"2.0\n"), ("control.tar.gz", control), ("data.tar.gz", data)):
        out += f"{name:<16}{0:<12}{0:<6}{0:<6}{100644:<8}{len(blob):<10}`\n".encode() + blob
        out += b"\n" if len(blob) % 2 else b""
    with open(path, "wb") as f:
        f.write(out)


class KernelNames(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory(prefix="krepro-handed-names.")
        t = cls.scratch.name
        cls.env, image, _ = fake_build(t)
        with open(image, "rb") as f:
            cls.image_bytes = f.read()
        # Where a $(touch F) would leave its F: every command runs here.
        cls.cwd = os.path.join(t, "cwd")
        os.makedirs(cls.cwd)
        cls.debs = os.path.join(t, "debs")
        # dpkg-deb's package: quotes, $(...) and backquotes in the release.
        p = os.path.join(cls.debs, "quoted")
        for d in ("DEBIAN", "boot", f"lib/modules/{RELEASE}"):
            os.makedirs(os.path.join(p, d))
        with open(os.path.join(p, "boot", f"vmlinuz-{RELEASE}"), "wb") as f:
            f.write(cls.image_bytes)
        with open(os.path.join(p, "DEBIAN", "control"), "w") as f:
            f.write("Package: quoted\nVersion: 1\nArchitecture: amd64\nMaintainer: x <x@x>\nDescription: x\n")
        subprocess.run(["dpkg-deb", "-Zxz", "--build", p, p + ".deb"], check=True, capture_output=True)
        # And a newline: made by hand.
        ar_deb(os.path.join(cls.debs, "newline.deb"), "6.1.0-1\n" + RELEASE, cls.image_bytes)

    @classmethod
    def tearDownClass(cls):
        cls.scratch.cleanup()

    def run_krepro(self, *args):
        return subprocess.run([sys.executable, "-m", "krepro", *args], env=self.env, cwd=self.cwd,
                              stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=120)

    def nothing_ran(self):
        self.assertEqual(sorted(os.listdir(self.cwd)), [], "a name ran as code")

    def refused(self, p, want):
        self.assertEqual(p.returncode, 128, p.stdout + p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
        self.assertIn(want, p.stderr)
        self.assertNotIn("Traceback", p.stderr)

    def test_deb_refused_before_unpacking(self):
        for name in ("quoted.deb", "newline.deb"):
            deb = os.path.join(self.debs, name)
            with self.subTest(deb=name):
                # A dry run reads the package; a run would unpack it only after.
                self.refused(self.run_krepro("run", "--dry-run", "--kernel", deb, "fake-bug"),
                             "names no kernel release")
                self.refused(self.run_krepro("bundle", "--kernel", deb, "--out", "bundles", "fake-bug"),
                             "names no kernel release")
                self.assertFalse(os.path.exists(os.path.join(self.env["KREPRO_CACHE"], "distro")),
                                 "the package was unpacked")
                self.nothing_ran()

    def test_unpacked_package_refused(self):
        # The same package unpacked by hand, given as its directory or its image.
        root = os.path.join(self.debs, "quoted")
        for spec in (root, os.path.join(root, "boot", f"vmlinuz-{RELEASE}")):
            with self.subTest(spec=spec):
                self.refused(self.run_krepro("run", "--dry-run", "--kernel", spec, "fake-bug"),
                             "is no kernel release")
                self.nothing_ran()

    def test_image_named_as_code(self):
        # A plain image's file name is its label.
        d = os.path.join(self.scratch.name, "named")
        os.makedirs(d, exist_ok=True)
        image = os.path.join(d, "bzImage-" + RELEASE)
        with open(image, "wb") as f:
            f.write(self.image_bytes)
        for args in (("run", "--dry-run", "--kernel", image, "fake-bug"),
                     ("bundle", "--kernel", image, "--out", "bundles", "fake-bug")):
            with self.subTest(args=args[:2]):
                self.refused(self.run_krepro(*args), "its name is the kernel's label")
                self.nothing_ran()

    def test_run_sh_takes_values_as_data(self):
        # Were such a label let through another way, run.sh would still take
        # it as a word: made here with the label no check would pass.
        label = "6.1.0-1\n" + RELEASE
        meta = types.SimpleNamespace(name="fake-bug", hang_is_bug=False, cmdline="fake.opt=1", cpus=2)
        bundle = os.path.join(self.scratch.name, "bundle")
        os.makedirs(bundle, exist_ok=True)
        with open(os.path.join(bundle, "run.sh"), "w") as f:
            f.write(bundle_make.run_sh(meta, types.SimpleNamespace(label=label), "x86_64", 5,
                                       "initramfs.cpio", False))
        os.chmod(os.path.join(bundle, "run.sh"), 0o755)
        for name, data in (("bzImage", self.image_bytes), ("initramfs.cpio", b"070701")):
            with open(os.path.join(bundle, name), "wb") as f:
                f.write(data)
        with open(os.path.join(bundle, "SHA256SUMS"), "w") as f:
            for name in ("bzImage", "initramfs.cpio"):
                with open(os.path.join(bundle, name), "rb") as g:
                    f.write(f"{hashlib.sha256(g.read()).hexdigest()}  {name}\n")
        bindir = os.path.join(self.scratch.name, "bin")
        os.makedirs(bindir, exist_ok=True)
        for tool in COREUTILS:
            if not os.path.lexists(os.path.join(bindir, tool)):
                os.symlink(shutil.which(tool), os.path.join(bindir, tool))
        # A QEMU that prints no result: the run is BROKEN, after every line
        # that names the kernel.
        with open(os.path.join(bindir, "qemu-system-x86_64"), "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        os.chmod(os.path.join(bindir, "qemu-system-x86_64"), 0o755)
        run = os.path.join(bundle, "run.sh")
        p = subprocess.run(["sh", "-n", run], capture_output=True, text=True)
        self.assertEqual(p.returncode, 0, p.stderr)
        env = ["env", "-i", f"PATH={bindir}"]
        p = subprocess.run(env + [run, "--help"], cwd=self.cwd, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(f"reported for fake-bug (on {label}).", p.stdout)
        p = subprocess.run(env + [run], cwd=self.cwd, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 125, p.stdout + p.stderr)
        self.assertIn(f"BROKEN: fake-bug on {label} (no result line", p.stdout)
        shutil.rmtree(os.path.join(bundle, "out"))
        self.nothing_ran()


class LavaNames(unittest.TestCase):
    def test_urls_hold_names_as_characters(self):
        with tempfile.TemporaryDirectory() as t:
            image = os.path.join(t, "bz Image#" + RELEASE)
            with open(image, "wb") as f:
                f.write(b"kernel")
            url = lava_job.file_url(image)
            self.assertRegex(url, r"^file:///[A-Za-z0-9%/._~-]+$")
            self.assertTrue(url.endswith("/bz%20Image%23" + "6.1.0-1%24%28touch%20F%29%60touch%20G%60%27%22x"), url)
            served = os.path.join(t, "served")
            os.makedirs(served)
            url, digest = lava_lab.publish(image, (served, "http://lab.invalid/files"))
            self.assertRegex(url, r"^http://lab\.invalid/files/[0-9a-f]{16}-[A-Za-z0-9._-]+$")
            self.assertEqual(os.listdir(served), [url.rsplit("/", 1)[1]])


HOOKS = ("pre-commit", "post-checkout", "post-commit", "post-index-change", "reference-transaction",
         "pre-auto-gc", "post-merge", "applypatch-msg")
FIX = """From 0 Mon Sep 17 00:00:00 2001
From: t <t@example.invalid>
Subject: [PATCH] a line more

---
diff --git a/file.c b/file.c
--- a/file.c
+++ b/file.c
@@ -1,2 +1,3 @@
 a
 b
+c
"""


class GitTrees(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory(prefix="krepro-handed-git.")
        t = cls.scratch.name
        cls.marks = os.path.join(t, "marks")
        os.makedirs(cls.marks)
        # A kernel tree as far as the checks before a build look (kernels.sh build-tree's).
        cls.tree = os.path.join(t, "linux")
        for d in ("arch/x86", "scripts/kconfig"):
            os.makedirs(os.path.join(cls.tree, d))
        files = {"Makefile": "VERSION = 6\nPATCHLEVEL = 1\nSUBLEVEL = 0\n", "file.c": "a\n",
                 "scripts/kconfig/merge_config.sh": "#!/bin/sh\n"}
        for name, text in files.items():
            with open(os.path.join(cls.tree, name), "w") as f:
                f.write(text)
        os.chmod(os.path.join(cls.tree, "scripts/kconfig/merge_config.sh"), 0o755)
        g = ["git", "-C", cls.tree, "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
        subprocess.run(g + ["init", "-q"], check=True)
        subprocess.run(g + ["add", "-A"], check=True)
        subprocess.run(g + ["commit", "-q", "-m", "one"], check=True)
        with open(os.path.join(cls.tree, "file.c"), "a") as f:
            f.write("b\n")
        subprocess.run(g + ["commit", "-q", "-a", "-m", "two"], check=True)
        # Set last: the tree's own hooks and fsmonitor, each leaving a mark.
        for name in HOOKS + ("fsmonitor",):
            path = os.path.join(t, "fsmonitor") if name == "fsmonitor" else \
                os.path.join(cls.tree, ".git", "hooks", name)
            with open(path, "w") as f:
                f.write(f"#!/bin/sh\necho \"$*\" >>{os.path.join(cls.marks, name)}\nexit 1\n")
            os.chmod(path, 0o755)
        subprocess.run(["git", "-C", cls.tree, "config", "core.fsmonitor", os.path.join(t, "fsmonitor")],
                       check=True)
        cls.fix = os.path.join(t, "fix.patch")
        with open(cls.fix, "w") as f:
            f.write(FIX)
        cls.env = dict(os.environ, KREPRO_CACHE=os.path.join(t, "cache"), KREPRO_NO_BUILD="1",
                       PYTHONPATH=os.path.join(TOP, "scripts"), PYTHONDONTWRITEBYTECODE="1")

    @classmethod
    def tearDownClass(cls):
        cls.scratch.cleanup()

    def index(self):
        with open(os.path.join(self.tree, ".git", "index"), "rb") as f:
            return f.read()

    def clear_marks(self):
        for m in os.listdir(self.marks):
            os.remove(os.path.join(self.marks, m))

    def untouched(self, argv, codes=(0,)):
        # A file's times changed, not its bytes: git status would refresh the
        # index's stat data and write it.
        self.clear_marks()
        os.utime(os.path.join(self.tree, "file.c"))
        before = self.index()
        p = subprocess.run(argv, env=self.env, cwd=self.scratch.name, stdin=subprocess.DEVNULL,
                           capture_output=True, text=True, timeout=300)
        self.assertIn(p.returncode, codes, p.stdout[-1000:] + p.stderr[-2000:])
        self.assertEqual(sorted(os.listdir(self.marks)), [], "the tree's hooks or fsmonitor ran")
        self.assertEqual(self.index(), before, "the tree's index was rewritten")
        return p

    def test_hooks_are_live(self):
        # The tree as set up: a plain git status runs its fsmonitor and hook.
        self.clear_marks()
        os.utime(os.path.join(self.tree, "file.c"))
        before = self.index()
        subprocess.run(["git", "-C", self.tree, "status", "--porcelain"], capture_output=True)
        self.assertIn("fsmonitor", os.listdir(self.marks))
        self.assertNotEqual(self.index(), before)

    def test_commands(self):
        self.test_hooks_are_live()
        py = [sys.executable, "-m", "krepro"]
        run, gate, kernels = (os.path.join(TOP, "run-in-qemu.sh"), os.path.join(TOP, "scripts", "gate.sh"),
                              os.path.join(TOP, "scripts", "kernels.sh"))
        for argv, codes in (
                ([gate, "--dry-run", "--base", self.tree, "--repros", "xfs-nowait-dio", self.fix], (0,)),
                ([gate, "--dry-run", "--base", self.tree, "--repros", "nosuch", self.fix], (128,)),
                ([kernels, "check-series", self.tree, "HEAD", self.fix], (0,)),
                (py + ["bisect", "--dry-run", "--tree", self.tree, "--good", "HEAD~1", "--bad", "HEAD",
                       "xfs-nowait-dio"], (0,)),
                (py + ["bisect", "--tree", self.tree, "--good", "nosuch", "--bad", "HEAD", "xfs-nowait-dio"],
                 (128,)),
                (py + ["fixcheck", "--dry-run", "--tree", self.tree, "--fix", self.fix, "xfs-nowait-dio"], (0,)),
                ([run, "--dry-run", "--tree", self.tree, "xfs-nowait-dio"], (0,))):
            with self.subTest(argv=argv[:3]):
                self.untouched(argv, codes)

    def test_steps_before_a_build(self):
        # What fixcheck and bisect do to the tree before their first build:
        # its clone, the scratch clone's checkout, the patch-ids of a series.
        self.test_hooks_are_live()
        code = ("import sys; from krepro.fixcheck.check import clone_of, source_of; "
                "from krepro.bisect import machinery as m; from krepro.bisect.culprit import series_line; "
                "t = sys.argv[1]; src, ref, note = source_of(t); print(note, clone_of(t, src, ref)); "
                "s = m.scratch_dir(t); m.prepare_scratch(s, t); m.checkout(s, 'HEAD'); "
                "print(m.first_parent_line(t, 'HEAD~1', 'HEAD')); print(m.subject(t, 'HEAD'));"
                "print(series_line(t, 'HEAD~1', 'HEAD', [sys.argv[2]]))")
        with open(self.fix + ".two", "w") as f:
            f.write(FIX.replace("+c", "+b").replace(" b\n", "").replace("-1,2 +1,3", "-1 +1,2"))
        p = self.untouched([sys.executable, "-c", code, self.tree, self.fix + ".two"])
        self.assertIn("fix.patch.two", p.stdout, "the series is the commits")


if __name__ == "__main__":
    unittest.main(verbosity=1)
