#!/usr/bin/env python3
"""A walk of odd invocations over every entry point: run-in-qemu.sh,
scripts/gate.sh, scripts/kernels.sh, python3 -m krepro SUBCOMMAND and the
make targets that take values; every script under scripts/ and bench/
(--help, -h, an unknown option). The table is built from classes (a typo in
each option, --opt=value, digits only Python reads as digits, names of
100,000 characters, newlines in names, a FIFO, /dev/zero, a read-only
place, a file where a directory is wanted and the other way round, bad
variables), not from examples.

Each invocation must: exit within the contract (0, 1, 125, 128, 130; make's
0 or 2), or the one the table names; end without a traceback; say a refusal
in one line of stderr no longer than 1,000 characters; write nothing outside
the cache and the run directories it was given; and start no work before a
refusal (no build directory, kernel tree or image in the cache, no QEMU,
apt-get or tar started). It runs in a copy of the source tree with an empty
cache (tests/test_contract.py's setup). Builds nothing, boots nothing.

usage: tests/walk_invocations.py [--every N] [WORD]
  --every N  every Nth invocation of the table only (ctest takes every 3rd:
             the whole walk, 668 invocations, took 418 s on 2 cores shared
             with the fuzz test)
  WORD       only the invocations whose name holds WORD
"""

import io
import os
import stat
import subprocess
import sys
import tarfile
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_contract as contract  # noqa: E402
from walk_table import table  # noqa: E402
sys.dont_write_bytecode = True  # the tree copy must not change, not even by Python

CONTRACT = {0, 1, 125, 128, 130}
# Left in the cache only by work: a tree unpacked, a kernel or image built.
WORK = ("linux-6.1", "linux-6.12", "kernels", "build", "gate", "ccache", "images", "distro")


def prepare(scratch):
    top, cache, marks, env, subst = contract.setup(scratch)
    s = subst["s"]
    os.mkfifo(os.path.join(s, "fifo"))
    os.mkfifo(os.path.join(s, "fifo.deb"))
    os.makedirs(os.path.join(s, "fifo-run"))
    os.mkfifo(os.path.join(s, "fifo-run", "run.json"))
    os.makedirs(os.path.join(s, "series-fifo"))
    os.mkfifo(os.path.join(s, "series-fifo", "0001-x.patch"))
    os.makedirs(os.path.join(s, "series-link"))
    os.symlink("/etc/passwd", os.path.join(s, "series-link", "0001-x.patch"))
    with open(os.path.join(s, "file"), "w") as f:
        f.write("a file\n")
    with open(os.path.join(s, "junk.deb"), "w") as f:
        f.write("not a package\n")
    # Sparse: 5 GiB on its face, nothing on the disk.
    open(os.path.join(s, "huge"), "w").close()
    os.truncate(os.path.join(s, "huge"), 5 << 30)
    os.link(os.path.join(s, "huge"), os.path.join(s, "huge.deb"))
    for tool in ("tar",):
        contract.marker_tool(os.path.join(os.path.dirname(marks), "bin", tool), os.path.join(marks, tool))
    # As root, a misbehaving output could replace a device it is given: the
    # walk's devices are its own (the same major and minor numbers).
    for name, minor in (("null", 3), ("zero", 5)):
        subst[name] = f"/dev/{name}"
        if os.geteuid() == 0:
            subst[name] = os.path.join(s, f"dev-{name}")
            os.mknod(subst[name], 0o666 | stat.S_IFCHR, os.makedev(1, minor))
    make_debs(s)
    make_good(s)
    home = os.path.join(scratch, "home")
    os.makedirs(home)
    # Nothing the Python side would build is built: a case accepted by
    # mistake ends at "not built", not in a kernel build.
    env = dict(env, HOME=home, XDG_CACHE_HOME=os.path.join(home, ".cache"), KREPRO_NO_BUILD="1")
    return top, cache, marks, env, subst


def make_debs(s):
    """Packages someone may hand over, each with a hostile data member: a
    link or a name out of the package, a FIFO; and an unpacked package whose
    image is a link out. Made as dpkg-deb makes a package, its data replaced."""
    def reg(name, data=b"x"):
        m = tarfile.TarInfo(name)
        m.size = len(data)
        return m, data

    def special(name, kind, to=""):
        m = tarfile.TarInfo(name)
        m.type, m.linkname, m.mode = kind, to, 0o755
        return m, None
    debs = {"abs-link": [special("./boot", tarfile.DIRTYPE), special("./boot/vmlinuz-1", tarfile.SYMTYPE,
                                                                      "/boot/vmlinuz")],
            "up-link": [special("./lib", tarfile.DIRTYPE), special("./lib/modules", tarfile.SYMTYPE, "../..")],
            "dotdot": [reg("./../../escape")], "abs-name": [reg("/etc/krepro-walk")],
            "fifo-member": [special("./boot", tarfile.DIRTYPE), special("./boot/f", tarfile.FIFOTYPE)],
            "hard-link-out": [special("./boot", tarfile.DIRTYPE), special("./x", tarfile.LNKTYPE, "../etc/passwd")]}
    for name, members in debs.items():
        d = os.path.join(s, "debs", name)
        os.makedirs(os.path.join(d, "DEBIAN"))
        with open(os.path.join(d, "DEBIAN", "control"), "w") as f:
            f.write("Package: x\nVersion: 1\nArchitecture: amd64\nMaintainer: x <x@x>\nDescription: x\n")
        subprocess.run(["dpkg-deb", "-Zxz", "--build", d, d + ".deb"], check=True, capture_output=True)
        parts = d + ".parts"
        os.makedirs(parts)
        subprocess.run(["ar", "x", d + ".deb"], cwd=parts, check=True)
        for f in os.listdir(parts):
            if f.startswith("data.tar"):
                os.unlink(os.path.join(parts, f))
        with tarfile.open(os.path.join(parts, "data.tar.xz"), "w:xz") as t:
            for m, data in members:
                t.addfile(m, io.BytesIO(data) if data is not None else None)
        os.unlink(d + ".deb")
        subprocess.run(["ar", "rc", d + ".deb", "debian-binary", "control.tar.xz", "data.tar.xz"], cwd=parts,
                       check=True)
    out = os.path.join(s, "debs", "unpacked-link-out")
    os.makedirs(os.path.join(out, "boot"))
    os.makedirs(os.path.join(out, "lib", "modules", "1"))
    os.symlink(os.path.join(s, "a", "bzImage"), os.path.join(out, "boot", "vmlinuz-1"))


def make_good(s):
    """Input that is fine, for the cases a dry run must take without writing
    anything: a linux-image .deb (its image a link to another member, as
    a package may have it) and a -dbg one, made by dpkg-deb; kernel trees
    (of the default branch and of another) as kernels.sh build-tree wants
    them, and trees it refuses."""
    rel = "6.1.0-99-amd64"
    files = {"good/boot/real-image": None, f"good/boot/config-{rel}": b"CONFIG_XFS_FS=m\n",
             f"good/lib/modules/{rel}/modules.order": b"",
             f"dbg/usr/lib/debug/boot/vmlinux-{rel}": b"\x7fELF" + b"\0" * 60}
    for path, data in files.items():
        p = os.path.join(s, "debs", path)
        if data is None:
            contract.fake_bzimage(p)
            continue
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)
    os.symlink("real-image", os.path.join(s, "debs", "good", "boot", f"vmlinuz-{rel}"))
    for name in ("good", "dbg"):
        d = os.path.join(s, "debs", name)
        os.makedirs(os.path.join(d, "DEBIAN"))
        with open(os.path.join(d, "DEBIAN", "control"), "w") as f:
            f.write(f"Package: {name}\nVersion: 1\nArchitecture: amd64\nMaintainer: x <x@x>\nDescription: x\n")
        subprocess.run(["dpkg-deb", "-Zxz", "--build", d, d + ".deb"], check=True, capture_output=True)
    for tree, version in (("tree-6.1", "6\nPATCHLEVEL = 1"), ("tree-5.10", "5\nPATCHLEVEL = 10"),
                          ("tree-no-version", None), ("tree-no-arch", "6\nPATCHLEVEL = 1")):
        t = os.path.join(s, tree)
        os.makedirs(os.path.join(t, "scripts", "kconfig"))
        if tree != "tree-no-arch":
            os.makedirs(os.path.join(t, "arch", "x86"))
        with open(os.path.join(t, "Makefile"), "w") as f:
            f.write(f"VERSION = {version}\n" if version else "all:\n")
        merge = os.path.join(t, "scripts", "kconfig", "merge_config.sh")
        open(merge, "w").close()
        os.chmod(merge, 0o755)


def snapshot(root, skip):
    """Every path under root but those under skip: (size, mtime) of files."""
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if os.path.join(d, x) not in skip]
        for f in files + [x for x in dirs if os.path.islink(os.path.join(d, x))]:
            p = os.path.join(d, f)
            try:
                st = os.lstat(p)
            except FileNotFoundError:
                continue
            out[p] = (st.st_size, st.st_mtime_ns) if not os.path.isdir(p) else None
    return out


def judge(case, rc, out, err, is_make):
    """The problems of one invocation's status and output."""
    name, argv, want, env = case
    problems = []
    allowed = {0, 2} if is_make else CONTRACT
    if rc not in allowed:
        problems.append(f"exit {rc}, outside the contract")
    if want is not None and rc not in want:
        problems.append(f"exit {rc}, want {sorted(want)}")
    if argv[-1] in ("--help", "-h") and want == {0} and not out.strip():
        problems.append("no help on stdout")
    if "Traceback" in out + err:
        problems.append("a traceback")
    refused = rc == 128 or (is_make and rc == 2)
    lines = err.splitlines()
    if refused and not is_make and not lines:
        problems.append("refused with nothing on stderr")
    errors = [l for l in lines if "error" in l.lower() or l.startswith("krepro:")]
    if refused and not is_make and len(errors) > 2:
        problems.append(f"{len(errors)} error lines")
    if any(len(l) > 1000 for l in lines):
        problems.append("a stderr line over 1,000 characters")
    return problems


def work_done(top, cache, marks):
    left = [f"{d} in the cache" for d in WORK if os.path.exists(os.path.join(cache, d))]
    if os.path.exists(os.path.join(top, "build")):
        left.append("a build directory in the source tree")
    for m in os.listdir(marks):
        with open(os.path.join(marks, m)) as f:
            left.append(f"{m} was run: {f.read().strip()[:120]}")
    return left


def run_one(case, env, subst, scratch):
    name, argv, want, extra = case
    argv = [a.format(**subst) if "{" in a and len(a) < 300 else a for a in argv]
    e = dict(env, **{k: v.format(**subst) for k, v in (extra or {}).items()})
    t = time.monotonic()
    try:
        p = subprocess.run(argv, env=e, cwd=scratch, stdin=subprocess.DEVNULL, capture_output=True,
                           timeout=90)
    except subprocess.TimeoutExpired:
        return None, "", "", time.monotonic() - t
    dec = lambda b: b.decode(errors="replace")  # noqa: E731
    return p.returncode, dec(p.stdout), dec(p.stderr), time.monotonic() - t


def main(argv):
    if argv[:1] in (["--help"], ["-h"]):
        print(__doc__.strip())
        return 0
    every = 1
    if argv[:1] == ["--every"] and len(argv) > 1 and argv[1].isdigit() and int(argv[1]) > 0:
        every, argv = int(argv[1]), argv[2:]
    if len(argv) > 1 or argv and argv[0].startswith("-"):
        print(f"walk_invocations.py: error: {argv[0][:200]!r} is not an argument here (--help)", file=sys.stderr)
        return 128
    only = argv[0] if argv else None
    passed = failed = 0
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        top, cache, marks, env, subst = prepare(scratch)
        cases = [c for c in table(subst) if not only or only in c[0]][::every]
        # The cache and the run directories the cases name may be written.
        skip = {cache, os.path.join(top, "results"), os.path.join(scratch, "out")}
        before = snapshot(scratch, skip)
        for case in cases:
            rc, out, err, secs = run_one(case, env, subst, scratch)
            is_make = case[1][0] == "make"
            problems = ["still running after 90 s"] if rc is None else judge(case, rc, out, err, is_make)
            after = snapshot(scratch, skip)
            changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
            if changed:
                problems.append(f"wrote outside the cache and run directories: {changed[:3]}")
            left = work_done(top, cache, marks)
            if left:
                problems.append(f"work started: {left[:3]}")
            if problems:
                failed += 1
                print(f"not ok - {case[0]}: {'; '.join(problems)}")
                print("".join("    | " + contract_line(l) + "\n" for l in (out + err).splitlines()[-6:]), end="")
                repair(top, cache, marks)
                before = snapshot(scratch, skip)
            else:
                passed += 1
                print(f"ok - {case[0]} (exit {rc}, {secs:.1f} s)")
    print(f"# {passed + failed} invocations in {time.monotonic() - t0:.0f} s")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


def contract_line(line):
    return line if len(line) <= 300 else line[:300] + "..."


def repair(top, cache, marks):
    """After a misbehaving case: its traces removed, so the next case is
    judged on its own."""
    import shutil
    for d in WORK:
        shutil.rmtree(os.path.join(cache, d), ignore_errors=True)
    shutil.rmtree(os.path.join(top, "build"), ignore_errors=True)
    for m in os.listdir(marks):
        os.unlink(os.path.join(marks, m))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
