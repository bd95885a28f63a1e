#!/usr/bin/env python3
"""krepro bundle: a bundle made from a fake build and a fake kernel image,
unpacked into an empty directory outside the repository, and its run.sh run
there with nothing but coreutils and a fake QEMU on PATH (env -i): the
outcome it prints and exits with for each kind of guest console, its QEMU
command line against the runner's, its checksums, and the bundle's files.
Boots no guest."""
import gzip
import hashlib
import json
import os
import shlex
import shutil
import signal
import stat
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import guest  # noqa: E402

# What run.sh may use besides sh and QEMU.
COREUTILS = ("cat", "date", "dirname", "mkdir", "rm", "sha256sum", "tail", "timeout", "tr")
FIX = 'abc123def456 ("fake: fix the fake")'


# The fake QEMU (tests/fake-qemu), its serial console's lines ended with CR
# LF afterwards, as a real serial console's are.
CRLF_QEMU = """\
import os, signal, subprocess, sys
p = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(__file__), "fake-qemu.py")] + sys.argv[1:])
signal.signal(signal.SIGTERM, lambda *a: (p.kill(), sys.exit(143)))
rc = p.wait()
for i, a in enumerate(sys.argv):
    if a == "-chardev" and sys.argv[i + 1].startswith("file,id=con,path="):
        con = sys.argv[i + 1].split("path=", 1)[1]
        with open(con, "rb") as f:
            text = f.read()
        with open(con, "wb") as f:
            f.write(text.replace(b"\\n", b"\\r\\n"))
sys.exit(rc)
"""


def fake_guests(tmp):
    """The fake QEMUs of this test still running (their pids)."""
    out = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if os.path.join(tmp, "fake-qemu.py").encode() in f.read():
                    out.append(int(pid))
        except OSError:
            pass
    return out


def read(path, mode="r"):
    with open(path, mode) as f:
        return f.read()


def describe(name, **extra):
    m = {"name": name, "summary": "a fake bug for the bundle's test", "fix_commit": FIX,
         "bug_commit": "", "seed": "", "arches": ["x86_64"], "not_in_matrix": "", "min_cpus": 2,
         "alone": False, "timeout": 30, "cmdline": "fake.opt=1", "disk_mib": 0, "prepare": False,
         "needs_kconfigs": [], "cases": ["race"], "own_evidence": True, "own_detectors": [],
         "signatures": [{"kind": "REFCOUNT", "title": "refcount_t: addition on 0", "frame": "j1939_.*",
                         "detectors": []}]}
    m.update(extra)
    return m


def fake_build(t):
    """A fake build under t (the reproducers' metadata, sources and guest
    images) and a fake kernel image beside its config: (the environment
    krepro bundle runs in, the image, fake-bug's own guest image)."""
    build = os.path.join(t, "build")
    os.makedirs(os.path.join(build, "repro"))
    os.makedirs(os.path.join(build, "guest", "repro"))
    for name, extra in (("fake-bug", {}), ("fake-arm", {"arches": ["arm"]}),
                        ("fake-disk", {"disk_mib": 64, "prepare": True}),
                        ("fake-hang", {"signatures": [{"kind": "HANG", "title": None, "frame": None,
                                                       "detectors": []}]})):
        with open(os.path.join(build, "repro", name + ".json"), "w") as f:
            json.dump(describe(name, **extra), f)
        src = os.path.join(t, "repro", name)
        os.makedirs(src)
        with open(os.path.join(src, "CMakeLists.txt"), "w") as f:
            f.write("krepro_reproducer(%s)\n" % ("ARCHES arm" if name == "fake-arm" else ""))
        with open(os.path.join(src, name + ".c"), "w") as f:
            f.write(f"/* {name} */\n")
        with open(os.path.join(src, "README.md"), "w") as f:
            f.write(f"# {name}\n\n## The bug\n\nA fake.\n\n## Evidence\n\n- FAIL: `# race: FAIL: lost`\n")
        # The reproducer's binary (the prepared disk's stamp hashes it).
        with open(os.path.join(build, "repro", name), "w") as f:
            f.write("binary")
    # The whole guest image and each reproducer's own.
    with open(os.path.join(build, "guest", "initramfs.cpio"), "wb") as f:
        f.write(b"the whole image" * 100)
    own = b"070701 fake-bug's own image " * 1000
    with open(os.path.join(build, "guest", "repro", "fake-bug.cpio"), "wb") as f:
        f.write(own)
    image = os.path.join(t, "kernel", "bzImage-mine")
    os.makedirs(os.path.dirname(image))
    with open(image, "wb") as f:
        f.write(b"\0" * 514 + b"HdrS" + b"fake kernel" * 100)
    with open(image + ".config", "w") as f:
        f.write("CONFIG_BLK_DEV_INITRD=y\nCONFIG_RD_GZIP=y\n")
    env = dict(os.environ, KREPRO_NO_BUILD="1", KREPRO_BUILD=build,
               KREPRO_REPRO_DIR=os.path.join(t, "repro"),
               KREPRO_INITRD=os.path.join(build, "guest", "initramfs.cpio"),
               KREPRO_CACHE=os.path.join(t, "cache"), KREPRO_KERNELS=os.path.join(t, "kernels"),
               PYTHONPATH=os.path.join(TOP, "scripts"))
    return env, image, own


class Bundle(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="krepro-bundle-test.")
        t = cls.tmp
        cls.env, cls.image, cls.own = fake_build(t)
        cls.out = os.path.join(t, "bundles")
        p = cls.krepro("fake-bug", "--kernel", cls.image, "--out", cls.out)
        cls.made = (p.returncode, p.stdout, p.stderr)
        # PATH for run.sh: coreutils and the fake QEMU (a copy: nothing of
        # the repository is run).
        cls.bin = os.path.join(t, "bin")
        os.makedirs(cls.bin)
        for tool in COREUTILS:
            os.symlink(shutil.which(tool), os.path.join(cls.bin, tool))
        shutil.copy(os.path.join(HERE, "fake-qemu"), os.path.join(t, "fake-qemu.py"))
        with open(os.path.join(t, "crlf-qemu.py"), "w") as f:
            f.write(CRLF_QEMU)
        qemu = os.path.join(cls.bin, "qemu-system-x86_64")
        with open(qemu, "w") as f:
            f.write(f"#!/bin/sh\nexec {sys.executable} {shlex.quote(os.path.join(t, 'crlf-qemu.py'))} \"$@\"\n")
        os.chmod(qemu, 0o755)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp)

    @classmethod
    def krepro(cls, *args):
        return subprocess.run([sys.executable, "-m", "krepro", "bundle", *args], env=cls.env,
                              capture_output=True, text=True, timeout=120)

    def bundle_name(self):
        h = hashlib.sha256(read(self.image, "rb")).hexdigest()[:12]
        return f"fake-bug-bzImage-mine-{h}"

    def unpack(self):
        """The tarball unpacked into a new empty directory: the bundle's path."""
        d = tempfile.mkdtemp(dir=self.tmp, prefix="unpacked.")
        with tarfile.open(os.path.join(self.out, self.bundle_name() + ".tar.gz")) as t:
            t.extractall(d)
        self.assertEqual(os.listdir(d), [self.bundle_name()])
        return os.path.join(d, self.bundle_name())

    def run_sh(self, bundle, plan, *args):
        """run.sh under env -i, PATH the fake QEMU and coreutils only, from
        another directory: (exit status, stdout, stderr)."""
        with open(os.path.join(self.tmp, "plan"), "w") as f:
            f.write(plan + "\n")
        for leftover in ("plan.count",):
            if os.path.exists(os.path.join(self.tmp, leftover)):
                os.remove(os.path.join(self.tmp, leftover))
        env = ["env", "-i", f"PATH={self.bin}", f"FAKE_QEMU_PLAN={os.path.join(self.tmp, 'plan')}",
               f"FAKE_QEMU_LOG={os.path.join(self.tmp, 'qemu.log')}"]
        p = subprocess.run(env + [os.path.join(bundle, "run.sh"), *args], cwd=self.tmp,
                           capture_output=True, text=True, timeout=120)
        return p.returncode, p.stdout, p.stderr

    # --- making it ---
    def test_made_and_sizes_said(self):
        code, out, err = self.made
        self.assertEqual(code, 0, out + err)
        self.assertIn(f"tarball: {os.path.join(self.out, self.bundle_name())}.tar.gz (", out)
        for name in ("bzImage", "initramfs.cpio.gz", "kernel.config", "run.sh", "README.md", "SHA256SUMS"):
            self.assertRegex(out, rf"\n  {name} +[0-9.]+ (bytes|KiB|MiB)", name)

    def test_contents(self):
        d = self.unpack()
        self.assertEqual(sorted(os.listdir(d)), sorted(
            ["README.md", "SHA256SUMS", "bzImage", "fake-bug.c", "initramfs.cpio.gz", "kernel.config", "run.sh"]))
        with open(os.path.join(d, "bzImage"), "rb") as a, open(self.image, "rb") as b:
            self.assertEqual(a.read(), b.read(), "the kernel image as built")
        with open(os.path.join(d, "kernel.config")) as a, open(self.image + ".config") as b:
            self.assertEqual(a.read(), b.read())
        with gzip.open(os.path.join(d, "initramfs.cpio.gz")) as f:
            self.assertEqual(f.read(), self.own, "the reproducer's own image, gzipped (CONFIG_RD_GZIP=y)")
        self.assertTrue(os.stat(os.path.join(d, "run.sh")).st_mode & stat.S_IXUSR)
        sums = {}
        with open(os.path.join(d, "SHA256SUMS")) as f:
            for line in f:
                h, name = line.split()
                sums[name] = h
        self.assertEqual(set(sums), set(os.listdir(d)) - {"SHA256SUMS"})
        for name, h in sums.items():
            self.assertEqual(hashlib.sha256(read(os.path.join(d, name), "rb")).hexdigest(), h, name)
        readme = read(os.path.join(d, "README.md"))
        self.assertIn("`HANG` (no result within the time limit): neither verdict; exit 125", readme)
        for want in (FIX, "./run.sh", "refcount_t: addition on 0", "`# <case>: FAIL: ...`",
                     "PASS: fake-bug", "FAIL: fake-bug", "# race: FAIL: lost", "A fake."):
            self.assertIn(want, readme)
        for name in ("README.md", "run.sh", "SHA256SUMS"):
            text = read(os.path.join(d, name))
            self.assertNotIn(TOP, text, f"{name} names the repository")
            self.assertNotIn(self.tmp, text, f"{name} names the machine's paths")

    def test_qemu_command_line_is_the_runners(self):
        d = self.unpack()
        code, out, err = self.run_sh(d, "pass")
        self.assertEqual(code, 0, out + err)
        logs = os.path.join(d, "out")
        with open(os.path.join(logs, "qemu-cmdline")) as f:
            words = shlex.split(f.read())
        cmdline = guest.kernel_cmdline("x86_64", "fake-bug", "fake.opt=1")
        want = guest.qemu_argv("x86_64", "tcg", os.path.join(d, "bzImage"),
                               os.path.join(d, "initramfs.cpio.gz"), cmdline, 2,
                               os.path.join(logs, "ktap.txt"))[1:]
        want += ["-chardev", f"file,id=con,path={logs}/console.log", "-serial", "chardev:con"]
        self.assertEqual(words, ["qemu-system-x86_64"] + want, "a shell reads the words back")
        self.assertIn(cmdline, words)
        self.assertIn("krepro.guest=1", cmdline)
        code, out, err = self.run_sh(d, "pass", "--kvm")
        with open(os.path.join(logs, "qemu-cmdline")) as f:
            self.assertIn(" -accel kvm -cpu host ", f.read())

    # --- run.sh's outcome, from the init's result line ---
    def test_outcomes(self):
        d = self.unpack()
        # (plan, the reproducer's exit status, run.sh's, the outcome)
        for plan, status, code, word in (("pass", 0, 0, "PASS"), ("fail-own", 1, 1, "FAIL"),
                                         ("bug-report", 1, 1, "FAIL"), ("broken", 2, 125, "BROKEN"),
                                         ("skip", 4, 125, "SKIP"), ("no-init", None, 125, "BROKEN")):
            with self.subTest(plan=plan):
                got, out, err = self.run_sh(d, plan)
                self.assertEqual(got, code, out + err)
                last = out.strip().splitlines()[-1]
                self.assertTrue(last.startswith(f"{word}: fake-bug on bzImage-mine ("), last)
                if plan == "no-init":
                    self.assertIn("no result line", last)
                else:
                    self.assertIn(f"the reproducer's exit status {status}", last)
        got, out, err = self.run_sh(d, "fail-own")
        self.assertIn("# race: FAIL: 3 values read back stale", out, "the reproducer's last lines are shown")
        self.assertIn(b"exit=1\r\n", read(os.path.join(d, "out", "console.log"), "rb"),
                      "the result line read from a console with CR LF line ends")

    def test_interrupt(self):
        # A Ctrl-C or kill of run.sh ends it at once, with 130, and its
        # guest with it: nothing is left running.
        d = self.unpack()
        with open(os.path.join(self.tmp, "plan"), "w") as f:
            f.write("hang\n")
        qlog = os.path.join(self.tmp, "qemu.log")
        open(qlog, "w").close()
        p = subprocess.Popen(["env", "-i", f"PATH={self.bin}", f"FAKE_QEMU_PLAN={os.path.join(self.tmp, 'plan')}",
                              f"FAKE_QEMU_LOG={qlog}", os.path.join(d, "run.sh")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 30
        while "start" not in read(qlog) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertIn("start", read(qlog), "the fake guest started")
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=20)
        self.assertEqual(p.returncode, 130, out + err)
        self.assertIn("run.sh: interrupted", err)
        deadline = time.monotonic() + 10
        while fake_guests(self.tmp) and time.monotonic() < deadline:
            time.sleep(0.1)
        self.assertEqual(fake_guests(self.tmp), [], "the guest was stopped with run.sh")

    def test_time_limit(self):
        d = self.unpack()
        got, out, err = self.run_sh(d, "hang", "--timeout", "2")
        self.assertEqual(got, 125, out + err)
        self.assertIn("HANG: fake-bug on bzImage-mine (no result line in 2 s", out)

    def test_hang_that_is_the_bug(self):
        # A reproducer that declares its hang: no result in time is its FAIL.
        out = os.path.join(self.tmp, "hang-bundles")
        p = self.krepro("fake-hang", "--kernel", self.image, "--out", out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        d = [os.path.join(out, n) for n in os.listdir(out) if not n.endswith(".tar.gz")][0]
        self.assertIn("No result within the time limit is this bug's hang: `FAIL`, exit 1.",
                      read(os.path.join(d, "README.md")))
        got, stdout, err = self.run_sh(d, "hang", "--timeout", "2")
        self.assertEqual(got, 1, stdout + err)
        self.assertIn("FAIL: fake-hang on bzImage-mine (no result line in 2 s", stdout)

    def test_refusals(self):
        d = self.unpack()
        with open(os.path.join(d, "bzImage"), "ab") as f:
            f.write(b"damaged")
        got, out, err = self.run_sh(d, "pass")
        self.assertEqual(got, 128, out + err)
        self.assertIn("files differ from SHA256SUMS", err)
        d = self.unpack()
        for args, why in ((("--timeout", "x"), "--timeout wants a whole number"),
                          (("--bogus",), "unknown argument '--bogus'")):
            got, out, err = self.run_sh(d, "pass", *args)
            self.assertEqual(got, 128, out + err)
            self.assertIn(why, err)
        # No QEMU on PATH: said, not a verdict.
        p = subprocess.run(["env", "-i", f"PATH={self.bin}", "QEMU=qemu-nowhere", os.path.join(d, "run.sh")],
                           capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 128)
        self.assertIn("no qemu-nowhere: install QEMU", p.stderr)

    def test_bad_requests(self):
        for args, why in ((("fake-arm", "--kernel", self.image), "'fake-arm' runs on arm guests"),
                          (("nosuch", "--kernel", self.image), "unknown reproducer 'nosuch'"),
                          (("fake-bug", "--kernel", os.path.join(self.tmp, "nope")), "no such file"),
                          (("fake-bug",), "--kernel")):
            with self.subTest(args=args):
                p = self.krepro(*args, "--out", os.path.join(self.tmp, "refused"))
                self.assertEqual(p.returncode, 128, p.stdout + p.stderr)
                self.assertIn(why, p.stderr)
                self.assertFalse(os.path.exists(os.path.join(self.tmp, "refused")) and
                                 os.listdir(os.path.join(self.tmp, "refused")))

    def test_prepared_disk_as_qcow2(self):
        # The prepared disk from the cache, as the runner keeps it (its
        # stamp: the patched kernel's and the reproducer's binary).
        os.makedirs(os.path.join(self.tmp, "kernels"), exist_ok=True)
        patched = os.path.join(self.tmp, "kernels", "bzImage-6.1-x86_64-patched")
        shutil.copy(self.image, patched)
        with open(patched + ".stamp", "w") as f:
            f.write("stampP\n")
        saved = dict(os.environ)
        os.environ.update(self.env)
        try:
            from krepro import disks, meta
            stamp = disks.prepared_stamp("x86_64", "6.1", meta.load_all()["fake-disk"])
        finally:
            os.environ.clear()
            os.environ.update(saved)
        img = os.path.join(self.tmp, "cache", "images", "6.1", "fake-disk.img")
        os.makedirs(os.path.dirname(img), exist_ok=True)
        with open(img, "wb") as f:
            f.truncate(64 << 20)
            f.seek(1 << 20)
            f.write(b"written by the patched kernel")
        with open(img + ".stamp", "w") as f:
            f.write(stamp + "\n")
        out = os.path.join(self.tmp, "disk-bundles")
        p = self.krepro("fake-disk", "--kernel", self.image, "--out", out)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        d = [os.path.join(out, n) for n in os.listdir(out) if not n.endswith(".tar.gz")][0]
        raw = os.path.join(self.tmp, "back.raw")
        subprocess.run(["qemu-img", "convert", "-O", "raw", os.path.join(d, "disk.qcow2"), raw], check=True)
        with open(raw, "rb") as a, open(img, "rb") as b:
            self.assertEqual(a.read(), b.read(), "the qcow2 holds the prepared disk's bytes")
        with open(os.path.join(d, "run.sh")) as f:
            self.assertIn('"file=${disk},if=none,id=vda,format=qcow2,snapshot=on"', f.read())
        self.assertIn("disk.qcow2", read(os.path.join(d, "SHA256SUMS")))


if __name__ == "__main__":
    unittest.main(verbosity=1)
