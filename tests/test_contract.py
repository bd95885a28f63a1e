#!/usr/bin/env python3
"""Every entry point keeps the exit contract, on bad and odd input, before any
work: run-in-qemu.sh, python3 -m krepro and its subcommands, scripts/gate.sh,
scripts/kernels.sh and the make targets that take variables.

The contract: 0 clean, 1 the bug (a report found), 125 undecided, 128 usage
error or unreadable input (one line naming it, never a traceback), 130
interrupted; help on stdout with exit 0. GNU make exits 2 whenever a recipe
fails, whatever the script under it said.

Each case runs in a copy of the source tree where nothing has been built, with
an empty cache, a QEMU that leaves a mark if it is ever started and an apt-get
that leaves a mark if anything is installed. After the table: no build
directory, no kernel tree or image in the cache, no mark. So a case that does
work before it checks its arguments fails the test even when its exit status
is right. Boots nothing, builds nothing, touches no kernel of the host.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)

RUN_JSON = {"format": 1, "arch": "x86_64", "accel": "tcg", "started": "2026-12-04T10:00:00+00:00",
            "finished": None, "interrupted": True, "krepro": "test", "expect": True,
            "mode": {"kind": "sequential", "miss": 0.01, "cap": 20}, "kernels": [], "rows": [],
            "prepare": [],
            "runs": [{"repro": "r", "kernel": "patched", "run": 1, "outcome": "PASS",
                      "evidence": "exit 0", "seconds": 5.0, "log": "r.patched.1/console.log",
                      "ktap": "r.patched.1/ktap.txt"}]}

X = "xfs-nowait-dio"
P = "{top}/kernel-patches/xfs-nowait-dio"

# (name, argv, expected exit, a fragment of the output, extra environment).
# {run}, {gate}, {kernels}, {top}, {s} (scratch) are filled in.
CASES = [
    # --- run-in-qemu.sh: help, version, list, plan ---
    ("help", ["{run}", "--help"], 0, "Exit status", None),
    ("help -h", ["{run}", "-h"], 0, "usage: run-in-qemu.sh", None),
    ("version", ["{run}", "--version"], 0, "x86_64 unpatched: not built", None),
    ("list", ["{run}", "--list"], 0, X, None),
    ("list arm", ["{run}", "--arch", "arm", "--list"], 0, "arm-kprobe-fortify", None),
    ("list from KREPRO_ARCH", ["{run}", "--list"], 0, "arm-kprobe-fortify", {"KREPRO_ARCH": "arm"}),
    ("dry run", ["{run}", "--dry-run", X], 0, "nothing is built or booted", None),
    ("dry run of the matrix pair", ["{run}", "--dry-run", "--kernel", "unpatched", "--kernel", "patched",
                                    "--expect", X], 0, "clean runs for miss", None),
    ("dry run of a kernel file", ["{run}", "--dry-run", "--kernel", "{s}/a/bzImage", X], 0, "as given", None),
    ("dry run of a sweep by name", ["{run}", "--dry-run", "xfs-rmap-fuzz"], 0, "xfs-rmap-fuzz", None),
    # --- run-in-qemu.sh: usage errors ---
    ("no reproducer", ["{run}"], 128, "no reproducer given", None),
    ("unknown option", ["{run}", "--frobnicate", X], 128, "unrecognized arguments: --frobnicate", None),
    ("abbreviated --kernel", ["{run}", "--kern", "patched", X], 128, "did you mean --kernel?", None),
    ("abbreviated --tree", ["{run}", "--tre", ".", X], 128, "did you mean --tree?", None),
    ("abbreviated --expect", ["{run}", "--exp", X], 128, "did you mean --expect?", None),
    ("abbreviated --repeat=", ["{run}", "--rep=2", X], 128, "did you mean --repeat?", None),
    ("typo in a name", ["{run}", "xfs-nowait-di0"], 128, "did you mean xfs-nowait-dio?", None),
    ("unknown name", ["{run}", "no-such-bug"], 128, "the reproducers for x86_64: bpf-percpu-reuse", None),
    ("ARM reproducer without --arch", ["{run}", "arm-kprobe-fortify"], 128, "add --arch arm", None),
    ("x86 reproducer on arm", ["{run}", "--arch", "arm", X], 128, "drop --arch arm", None),
    ("unknown arch", ["{run}", "--arch", "sparc", X], 128, "--arch is one of: x86_64 arm", None),
    ("bad KREPRO_ARCH", ["{run}", X], 128, "--arch is one of", {"KREPRO_ARCH": "sparc"}),
    ("flavour typo", ["{run}", "--kernel", "patch", X], 128, "did you mean patched?", None),
    ("missing kernel", ["{run}", "--kernel", "/nonexistent/bzImage", X], 128,
     "no such file, and not a flavour (unpatched or patched)", None),
    ("not a kernel", ["{run}", "--kernel", "{s}/not-a-kernel", X], 128, "not an x86 bzImage", None),
    ("--kernel without a value", ["{run}", "--kernel"], 128, "expected one argument", None),
    ("missing tree", ["{run}", "--tree", "/nonexistent/linux", X], 128, "no such directory", None),
    ("--repeat 0", ["{run}", "--repeat", "0", X], 128, "from 1 to 1000, not '0'", None),
    ("--repeat huge", ["{run}", "--repeat", "1000000000", X], 128, "from 1 to 1000", None),
    ("--repeat abc", ["{run}", "--repeat", "abc", X], 128, "not 'abc'", None),
    ("--max-runs 0", ["{run}", "--max-runs", "0", X], 128, "--max-runs", None),
    ("--max-runs huge", ["{run}", "--max-runs", "5000", X], 128, "from 1 to 1000", None),
    ("--timeout 0", ["{run}", "--timeout", "0", X], 128, "--timeout", None),
    ("--timeout over a day", ["{run}", "--timeout", "100000", X], 128, "from 1 to 86400", None),
    ("-j 0", ["{run}", "-j", "0", X], 128, "--jobs", None),
    ("-j huge", ["{run}", "-j", "1000", X], 128, "from 1 to 64", None),
    ("KREPRO_JOBS abc", ["{run}", X], 128, "KREPRO_JOBS wants a whole number", {"KREPRO_JOBS": "abc"}),
    ("--miss 0", ["{run}", "--miss", "0", X], 128, "between 0 and 1", None),
    ("--miss 1.5", ["{run}", "--miss", "1.5", X], 128, "between 0 and 1", None),
    ("--miss abc", ["{run}", "--miss", "abc", X], 128, "wants a probability", None),
    ("--confidence 2", ["{run}", "--confidence", "2", X], 128, "between 0 and 1", None),
    ("--miss and --confidence", ["{run}", "--miss", "0.1", "--confidence", "0.9", X], 128,
     "say the same thing", None),
    ("--gdb port too high", ["{run}", "--gdb", "70000", X], 128, "from 1 to 65535", None),
    ("--gdb port 0", ["{run}", "--gdb", "0", X], 128, "--gdb", None),
    ("--keep with two reproducers", ["{run}", "--keep", X, "bpf-percpu-reuse"], 128,
     "give one reproducer and one kernel", None),
    ("--keep with two kernels", ["{run}", "--keep", "--kernel", "unpatched", "--kernel", "patched", X],
     128, "give one reproducer and one kernel", None),
    ("--expect on a kernel file", ["{run}", "--expect", "--kernel", "{s}/a/bzImage", X], 128,
     "has no expected verdict", None),
    ("--expect on a tree", ["{run}", "--expect", "--tree", "{s}/a", X], 128, "has no expected verdict", None),
    ("two kernels, one label", ["{run}", "--kernel", "{s}/a/bzImage", "--kernel", "{s}/b/bzImage", X],
     128, "share the label", None),
    ("--results of a past run", ["{run}", "--results", "{s}/old-run", X], 128, "add --replace", None),
    ("--replace alone", ["{run}", "--replace", X], 128, "--replace goes with --results", None),
    ("--via bogus", ["{run}", "--via", "bogus", X], 128, "--via is qemu, lava-run or lava:IDENTITY", None),
    ("--artifacts without a lab", ["{run}", "--artifacts", "d=u", X], 128, "--artifacts is for --via lava:ID",
     None),
    ("--via lava: without artifacts", ["{run}", "--via", "lava:lab", X], 128, "lava", None),
    ("--qemu-opts unbalanced", ["{run}", "--qemu-opts", '"-m 2G', X], 128, "--qemu-opts", None),
    ("--vmlinux with a flavour", ["{run}", "--vmlinux", "{s}/not-a-kernel", X], 128,
     "--vmlinux belongs to one --kernel PATH", None),
    ("--record-rates on patched", ["{run}", "--record-rates", "--kernel", "patched", "--repeat", "2", X], 128,
     "--kernel unpatched --repeat N only", None),
    ("--accel bogus", ["{run}", "--accel", "bogus", X], 128, "invalid choice", None),
    ("--report of a missing directory", ["{run}", "--report", "/nonexistent/run"], 128, "no such directory",
     None),
    ("--report without run.json", ["{run}", "--report", "{s}/empty"], 128, "no run.json there", None),
    ("--report of a truncated run.json", ["{run}", "--report", "{s}/truncated"], 128, "run.json", None),
    ("--report of an empty run.json", ["{run}", "--report", "{s}/zero"], 128, "run.json", None),
    ("--report of an interrupted --expect run", ["{run}", "--report", "{s}/interrupted"], 130, "PARTIAL", None),
    # --- python3 -m krepro ---
    ("krepro without a command", ["{py}", "-m", "krepro"], 128, "usage", None),
    ("krepro --help", ["{py}", "-m", "krepro", "--help"], 0, "classify", None),
    ("krepro unknown command", ["{py}", "-m", "krepro", "frobnicate"], 128, "frobnicate", None),
    ("krepro run abbreviated", ["{py}", "-m", "krepro", "run", "--kern", "patched", X], 128,
     "did you mean --kernel?", None),
    ("report of a missing directory", ["{py}", "-m", "krepro", "report", "/nonexistent/run"], 128,
     "/nonexistent/run", None),
    ("report of a truncated run.json", ["{py}", "-m", "krepro", "report", "{s}/truncated"], 128, "run.json",
     None),
    ("report --help", ["{py}", "-m", "krepro", "report", "--help"], 0, "report", None),
    ("bisect --help", ["{py}", "-m", "krepro", "bisect", "--help"], 0, "Exit status: 0 a culprit named", None),
    ("bisect without --bad", ["{py}", "-m", "krepro", "bisect", "--good", "HEAD", X], 128,
     "--good and --bad are both needed", None),
    ("bisect of an unknown reproducer", ["{py}", "-m", "krepro", "bisect", "--good", "a", "--bad", "b",
                                         "xfs-nowait-di0"], 128, "did you mean xfs-nowait-dio?", None),
    ("bisect abbreviated", ["{py}", "-m", "krepro", "bisect", "--goo", "a", "--bad", "b", X], 128,
     "unrecognized arguments", None),
    ("bisect --floor 1", ["{py}", "-m", "krepro", "bisect", "--good", "a", "--bad", "b", "--floor", "1", X],
     128, "between 0 and 1", None),
    ("fixcheck --help", ["{py}", "-m", "krepro", "fixcheck", "--help"], 0, "0 the fix holds", None),
    ("fixcheck of an unknown reproducer", ["{py}", "-m", "krepro", "fixcheck", "xfs-nowait-di0"], 128,
     "did you mean xfs-nowait-dio?", None),
    ("fixcheck abbreviated", ["{py}", "-m", "krepro", "fixcheck", "--tre", "/", X], 128,
     "unrecognized arguments", None),
    ("gate --tree without --good", ["{py}", "-m", "krepro", "gate", "{s}/truncated", "base", "base+series",
                                    "--tree", "/"], 128, "go together", None),
    ("classify --help", ["{py}", "-m", "krepro", "classify", "--help"], 0, "classify", None),
    ("classify of a missing log", ["{py}", "-m", "krepro", "classify", "/nonexistent/console.log"], 128,
     "/nonexistent/console.log", None),
    ("classify of a log without a report", ["{py}", "-m", "krepro", "classify", "{s}/quiet.log"], 0,
     "no kernel report", None),
    # KREPRO_NO_BUILD: the reproducers' signatures as built (none here), as run-in-qemu.sh.
    ("classify of a KASAN report", ["{py}", "-m", "krepro", "classify", "{top}/tests/console/kasan-uaf.log"],
     1, "no reproducer is built (make build)", {"KREPRO_NO_BUILD": "1"}),
    ("run-in-qemu.sh --classify", ["{run}", "--classify", "{top}/tests/console/kasan-uaf.log", "--json"],
     1, '"title": "KASAN: use-after-free Read in uio_unregister_device"', {"KREPRO_NO_BUILD": "1"}),
    ("run-in-qemu.sh --classify of a missing log", ["{run}", "--classify", "/nonexistent/console.log"], 128,
     "krepro: classify: /nonexistent/console.log: no such file", None),
    ("run-in-qemu.sh --classify with a run option", ["{run}", "--classify", "{s}/quiet.log", "--kernel",
                                                    "patched"], 128, "unrecognized arguments: --kernel", None),
    ("gate of a missing run", ["{py}", "-m", "krepro", "gate", "/nonexistent/run", "base", "base+series"],
     128, "/nonexistent/run", None),
    ("gate of unknown labels", ["{py}", "-m", "krepro", "gate", "{s}/gated", "nosuch", "other"], 128,
     "nosuch", None),
    ("bundle --help", ["{py}", "-m", "krepro", "bundle", "--help"], 0, "Exit status", None),
    ("bundle without --kernel", ["{py}", "-m", "krepro", "bundle", X], 128, "--kernel", None),
    ("bundle reproducer typo", ["{py}", "-m", "krepro", "bundle", "--kernel", "patched", "xfs-nowait-di0"],
     128, "did you mean xfs-nowait-dio?", None),
    ("bundle of an ARM reproducer on x86_64", ["{py}", "-m", "krepro", "bundle", "--kernel", "patched",
                                               "arm-kprobe-fortify"], 128, "--arch arm", None),
    ("bundle --kernel not a kernel", ["{py}", "-m", "krepro", "bundle", "--kernel", "{s}/not-a-kernel", X],
     128, "not an x86 bzImage", None),
    ("bundle --kernel typo", ["{py}", "-m", "krepro", "bundle", "--kernel", "pached", X], 128,
     "did you mean patched?", None),
    ("bundle --arch bogus", ["{py}", "-m", "krepro", "bundle", "--arch", "sparc", "--kernel", "patched", X],
     128, "--arch is one of", None),
    ("bundle --timeout 0", ["{py}", "-m", "krepro", "bundle", "--timeout", "0", "--kernel", "patched", X],
     128, "--timeout", None),
    # --- scripts/gate.sh: all before the kernel tree is unpacked ---
    ("gate.sh --help", ["{gate}", "--help"], 0, "Exit status", None),
    ("gate.sh without a series", ["{gate}"], 128, "no SERIES given", None),
    ("gate.sh unknown option", ["{gate}", "--frobnicate", P], 128, "unknown option --frobnicate", None),
    ("gate.sh abbreviated option", ["{gate}", "--rep", "2", P], 128, "unknown option --rep", None),
    ("gate.sh --miss 2", ["{gate}", "--miss", "2", P], 128, "between 0 and 1", None),
    ("gate.sh reproducer typo", ["{gate}", "--repros", "xfs-nowait-di0", P], 128, "did you mean", None),
    ("gate.sh --repeat 0", ["{gate}", "--repeat", "0", P], 128, "--repeat", None),
    ("gate.sh --repeat huge", ["{gate}", "--repeat", "5000", P], 128, "from 1 to 1000", None),
    ("gate.sh --arch bogus", ["{gate}", "--arch", "sparc", P], 128, "--arch is one of", None),
    ("gate.sh --base not a tree", ["{gate}", "--base", "{s}/empty", P], 128, "not unpatched, patched", None),
    ("gate.sh missing patch", ["{gate}", "{s}/nope.patch"], 128, "no such patch file", None),
    ("gate.sh --results of a past run", ["{gate}", "--results", "{s}/old-run", P], 128, "holds a past run",
     None),
    # --- scripts/kernels.sh ---
    ("kernels.sh unknown command", ["{kernels}", "frobnicate"], 128, "usage", None),
    # --- make: its own status 2 on any failure; the argument check runs first ---
    ("make repro-all with a typo", ["make", "-s", "-C", "{top}", "repro-all", "REPROS=xfs-nowait-di0"], 2,
     "did you mean xfs-nowait-dio?", None),
    ("make repro-all MISS=2", ["make", "-s", "-C", "{top}", "repro-all", "MISS=2"], 2, "between 0 and 1",
     None),
    ("make calibrate CALIBRATE_RUNS=0", ["make", "-s", "-C", "{top}", "calibrate", "CALIBRATE_RUNS=0"], 2,
     "--repeat", None),
    ("make sweeps with a typo", ["make", "-s", "-C", "{top}", "sweeps", "SWEEPS=xfs-rmap-fuz"], 2,
     "did you mean xfs-rmap-fuzz", None),
    ("make gate without SERIES", ["make", "-s", "-C", "{top}", "gate"], 2, "usage: make gate", None),
    ("make report without DIR", ["make", "-s", "-C", "{top}", "report"], 2, "usage: make report", None),
    ("make bisect without GOOD", ["make", "-s", "-C", "{top}", "bisect", "TREE=.", "BAD=HEAD", "REPRO=" + X], 2,
     "usage: make bisect", None),
    ("make bisect of no tree", ["make", "-s", "-C", "{top}", "bisect", "TREE=/nonexistent/linux", "GOOD=a",
                                "BAD=b", "REPRO=" + X], 2, "not a directory", None),
    ("make fixcheck without REPRO", ["make", "-s", "-C", "{top}", "fixcheck"], 2, "usage: make fixcheck", None),
    ("make bundle without REPRO", ["make", "-s", "-C", "{top}", "bundle", "KERNEL=patched"], 2,
     "usage: make bundle", None),
]


def copy_tree(dst):
    """The source tree as git knows it (tracked, and new files not ignored),
    without build/ or results/: a fresh clone of the working tree."""
    files = subprocess.run(["git", "-C", TOP, "ls-files", "-z", "--cached", "--others",
                            "--exclude-standard"], capture_output=True, check=True).stdout
    for rel in files.decode().split("\0"):
        if not rel or not os.path.lexists(os.path.join(TOP, rel)):
            continue
        os.makedirs(os.path.join(dst, os.path.dirname(rel)), exist_ok=True)
        shutil.copy2(os.path.join(TOP, rel), os.path.join(dst, rel), follow_symlinks=False)


def fake_bzimage(path):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(b"\0" * 0x202 + b"HdrS" + b"\0" * 64)


def marker_tool(path, mark):
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\necho \"$0 $*\" >>{mark}\nexit 1\n")
    os.chmod(path, 0o755)


def setup(scratch):
    top = os.path.join(scratch, "krepro")
    copy_tree(top)
    s = os.path.join(scratch, "in")
    for d in ("empty", "old-run", "truncated", "zero", "interrupted", "gated"):
        os.makedirs(os.path.join(s, d))
    fake_bzimage(os.path.join(s, "a", "bzImage"))
    fake_bzimage(os.path.join(s, "b", "bzImage"))
    with open(os.path.join(s, "not-a-kernel"), "w") as f:
        f.write("hello\n")
    with open(os.path.join(s, "old-run", "run.json"), "w") as f:
        json.dump(RUN_JSON, f)
    with open(os.path.join(s, "truncated", "run.json"), "w") as f:
        f.write(json.dumps(RUN_JSON)[:40])
    open(os.path.join(s, "zero", "run.json"), "w").close()
    with open(os.path.join(s, "interrupted", "run.json"), "w") as f:
        json.dump(RUN_JSON, f)
    gated = dict(RUN_JSON, interrupted=False, finished="2026-12-04T10:01:00+00:00", expect=False)
    with open(os.path.join(s, "gated", "run.json"), "w") as f:
        json.dump(gated, f)
    with open(os.path.join(s, "quiet.log"), "w") as f:
        f.write("[    0.000000] Linux version 6.1.0\n[    1.000000] Run /init as init process\n"
                "krepro-init: started\n[    9.000000] reboot: Power down\n")
    marks = os.path.join(scratch, "marks")
    os.makedirs(marks)
    bindir = os.path.join(scratch, "bin")
    os.makedirs(bindir)
    marker_tool(os.path.join(scratch, "qemu"), os.path.join(marks, "qemu"))
    marker_tool(os.path.join(bindir, "apt-get"), os.path.join(marks, "apt-get"))
    cache = os.path.join(scratch, "cache")
    os.makedirs(cache)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("KREPRO_") and k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS")}
    env.update(KREPRO_CACHE=cache, KREPRO_QEMU=os.path.join(scratch, "qemu"),
               PATH=bindir + os.pathsep + env.get("PATH", "/usr/bin:/bin"),
               PYTHONPATH=os.path.join(top, "scripts"),
               # The interpreter's byte-code cache is not krepro writing: a
               # fresh clone has none, and the copy must not change.
               PYTHONDONTWRITEBYTECODE="1")
    subst = {"run": os.path.join(top, "run-in-qemu.sh"), "gate": os.path.join(top, "scripts", "gate.sh"),
             "kernels": os.path.join(top, "scripts", "kernels.sh"), "top": top, "s": s,
             "py": "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable}
    return top, cache, marks, env, subst


def run_case(argv, env, subst, cwd):
    argv = [a.format(**subst) for a in argv]
    p = subprocess.run(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def bisect_case(scratch, env, subst):
    """git bisect run with an abbreviated option must abort the bisection,
    not mark commits bad (exit 1) or skip them (125)."""
    repo = os.path.join(scratch, "toy")
    os.makedirs(repo)
    g = ["git", "-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid"]
    subprocess.run(g + ["init", "-q"], check=True)
    for i in range(4):
        with open(os.path.join(repo, "f"), "w") as f:
            f.write(f"{i}\n")
        subprocess.run(g + ["add", "f"], check=True)
        subprocess.run(g + ["commit", "-q", "-m", f"c{i}"], check=True)
    subprocess.run(g + ["bisect", "start", "HEAD", "HEAD~3"], check=True, capture_output=True)
    p = subprocess.run(g + ["bisect", "run", subst["run"], "--tre", ".", X], env=env, cwd=repo,
                       capture_output=True, text=True, timeout=120)
    out = p.stdout + p.stderr
    log = subprocess.run(g + ["bisect", "log"], capture_output=True, text=True).stdout
    subprocess.run(g + ["bisect", "reset"], capture_output=True)
    problems = []
    if p.returncode == 0:
        problems.append("git bisect run succeeded")
    if "bisect run failed" not in out and "128" not in out:
        problems.append("git did not say the run failed")
    # After its start line the log holds a line per verdict: there must be none.
    verdicts = [l for l in log.splitlines() if l.startswith(("git bisect good", "git bisect bad",
                                                             "git bisect skip"))]
    if verdicts:
        problems.append(f"commits were judged: {verdicts}")
    if "did you mean --tree?" not in out:
        problems.append("the abbreviation was not named")
    return problems, out


def main():
    passed = failed = 0
    with tempfile.TemporaryDirectory() as scratch:
        top, cache, marks, env, subst = setup(scratch)
        for name, argv, want, needle, extra in CASES:
            e = dict(env, **(extra or {}))
            rc, out, err = run_case(argv, e, subst, scratch)
            both = out + err
            problems = []
            if rc != want:
                problems.append(f"exit {rc}, want {want}")
            if needle.format(**subst) not in both:
                problems.append(f"no '{needle}' in the output")
            if "Traceback" in both:
                problems.append("a Python traceback")
            if want == 0 and "help" in name and not out.strip():
                problems.append("help not on stdout")
            if want == 128 and len([l for l in err.splitlines() if "error" in l]) > 3:
                problems.append("more than a few error lines")
            if problems:
                failed += 1
                print(f"not ok - {name}: {'; '.join(problems)}")
                print("    " + " ".join(a.format(**subst) for a in argv))
                print("".join("    | " + l + "\n" for l in both.splitlines()[-15:]), end="")
            else:
                passed += 1
                print(f"ok - {name} (exit {rc})")
        problems, out = bisect_case(scratch, env, subst)
        if problems:
            failed += 1
            print(f"not ok - git bisect run with --tre aborts: {'; '.join(problems)}")
            print("".join("    | " + l + "\n" for l in out.splitlines()[-15:]), end="")
        else:
            passed += 1
            print("ok - git bisect run with --tre aborts the bisection")
        # Nothing may have been built, unpacked, installed or booted.
        left = []
        if os.path.exists(os.path.join(top, "build")):
            left.append("a build directory in the source tree")
        for d in ("linux-6.1", "kernels", "build", "gate", "ccache"):
            if os.path.exists(os.path.join(cache, d)):
                left.append(f"{d} in the cache")
        for m in os.listdir(marks):
            with open(os.path.join(marks, m)) as f:
                left.append(f"{m} was run: {f.read().strip()[:200]}")
        if left:
            failed += 1
            print(f"not ok - no work done by any case: {'; '.join(left)}")
        else:
            passed += 1
            print(f"ok - no case built, unpacked, installed or booted anything ({len(CASES)} cases)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
