#!/usr/bin/env python3
"""Input from someone else (docs/design-notes.md, "Input from someone
else"), class by class, through the commands a user runs: a run directory
for --report whose run.json names paths out of it, is a FIFO, a device, a
link out or too large, or holds names that would forge KTAP lines, break the
Markdown table, the JUnit XML or the terminal; a log for --classify that is
no regular file; variables read where they are used; arguments checked
before any work (a reproducer twice, numbers that only Python reads as
numbers, --report with a run's options, --results at a directory of other
files, names too long to echo); Ctrl-C at any moment.

Each case runs in a copy of the source tree with an empty cache and a QEMU
that leaves a mark (tests/test_contract.py's setup): nothing is built or
booted, and the files outside the run directories are the same after the
table. Prints "ok"/"not ok" per case; exits 1 when one failed."""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import xml.dom.minidom

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_contract  # noqa: E402

X = "xfs-nowait-dio"
SECRET = "SECRET-CONTENT-OUTSIDE"
TITLE = "KASAN: use-after-free in f"
ROW = {"repro": "r", "kernel": "patched", "role": "probe", "decision": "FAIL", "runs": 1,
       "counts": {"FAIL": 1}, "fails": 1, "trials": 1, "why": "", "fix_commit": "", "target_miss": 0.01,
       "rate": None, "miss": None, "expected": None, "as_expected": None, "cell": "FAIL 1/1"}
RUN = {"repro": "r", "kernel": "patched", "run": 1, "outcome": "FAIL", "evidence": TITLE, "seconds": 5.0,
       "log": "r.patched.1/console.log", "ktap": "r.patched.1/ktap.txt",
       "reports": [{"title": TITLE, "line": 1}]}
RECORD = {"format": 1, "arch": "x86_64", "accel": "tcg", "started": "2026-12-04T10:00:00+00:00",
          "finished": "2026-12-04T10:01:00+00:00", "interrupted": False, "krepro": "test", "expect": False,
          "mode": {"kind": "sequential", "miss": 0.01, "cap": 20}, "kernels": [], "prepare": [],
          "rows": [ROW], "runs": [RUN]}
CONSOLE = f"[    1.000000] BUG: {TITLE}\n[    1.100000] Call Trace:\n[    1.200000]  f+0x1/0x10\n"


def run_dir(path, rows=None, runs=None, console=CONSOLE, **top):
    """A run directory with one FAIL run; rows/runs: changes to the row and
    the run; top: changes to the record."""
    os.makedirs(os.path.join(path, "r.patched.1"))
    rec = dict(RECORD, rows=[dict(ROW, **(rows or {}))], runs=[dict(RUN, **(runs or {}))], **top)
    with open(os.path.join(path, "run.json"), "w") as f:
        json.dump(rec, f)
    if console is not None:
        with open(os.path.join(path, "r.patched.1", "console.log"), "w") as f:
            f.write(console)
    with open(os.path.join(path, "r.patched.1", "ktap.txt"), "w") as f:
        f.write("KTAP version 1\n1..1\nnot ok 1 r\n")
    return path


def make_inputs(s):
    """The hostile run directories and logs under s/u."""
    u = os.path.join(s, "u")
    os.makedirs(os.path.join(u, "outside"))
    with open(os.path.join(u, "outside", "secret.txt"), "w") as f:
        f.write(SECRET + "\n")
    run_dir(os.path.join(u, "outside", "run"))
    d = lambda name: os.path.join(u, name)  # noqa: E731
    run_dir(d("good"))
    run_dir(d("abs-report"), runs={"report": "/etc/passwd"})
    run_dir(d("dotdot-log"), runs={"log": "../outside/secret.txt"})
    run_dir(d("abs-ktap"), runs={"ktap": os.path.join(u, "outside", "secret.txt")})
    run_dir(d("abs-lava-log"), runs={"lava_log": "/etc/shadow"})
    run_dir(d("cut-off-out"), cut_off=[{"repro": "r", "kernel": "patched", "run": 2, "log": "/etc/passwd"}])
    run_dir(d("prepare-out"), prepare=[{"repro": "r", "outcome": "PASS", "log": "a/../../x", "seconds": 1.0}])
    run_dir(d("log-link-out"), console=None)
    os.symlink(os.path.join(u, "outside", "secret.txt"), os.path.join(d("log-link-out"), "r.patched.1",
                                                                       "console.log"))
    run_dir(d("log-fifo"), console=None)
    os.mkfifo(os.path.join(d("log-fifo"), "r.patched.1", "console.log"))
    for name, make in (("json-fifo", lambda p: os.mkfifo(p)),
                       ("json-devzero", lambda p: os.symlink("/dev/zero", p)),
                       ("json-link-out", lambda p: os.symlink(os.path.join(u, "outside", "run", "run.json"), p)),
                       ("json-dir", os.mkdir)):
        os.makedirs(d(name))
        make(os.path.join(d(name), "run.json"))
    os.makedirs(d("json-big"))
    with open(os.path.join(d("json-big"), "run.json"), "w") as f:
        f.truncate(65 << 20)
    with open(os.path.join(s, "cache-file"), "w") as f:
        f.write("not a directory\n")
    return hostile_records(u, d)


def hostile_records(u, d):
    """The run directories whose names or strings are hostile, and the rest."""
    forged = "r\nok 2 forged"
    run_dir(d("newline-name"), rows={"repro": forged}, runs={"repro": forged})
    run_dir(d("hash-name"), rows={"repro": "r # SKIP"}, runs={"repro": "r # SKIP"})
    run_dir(d("skip-cell"), rows={"cell": "SKIP forged"})
    run_dir(d("terminal"), runs={"evidence": TITLE + " \x1b[2J\x1b]0;title\x07\u202e"},
            rows={"fix_commit": "\x1b[31mred"}, arch="x86_64\x1b[5m")
    run_dir(d("xml-controls"), rows={"repro": "r\x01\x0b\x0c\ufffe"}, runs={"repro": "r\x01\x0b\x0c\ufffe"})
    run_dir(d("pipe-name"), rows={"repro": "a|b", "kernel": "k|"}, runs={"repro": "a|b", "kernel": "k|"})
    run_dir(d("fence-log"), console=CONSOLE + "[    1.300000] ```\n[    1.400000] ````` # end\n")
    run_dir(d("long-name"), rows={"repro": "x" * 100000}, runs={"repro": "x" * 100000})
    run_dir(d("tmp-link-out"))
    os.symlink(os.path.join(u, "outside", "secret.txt"), os.path.join(d("tmp-link-out"), "summary.md.tmp"))
    os.makedirs(d("dry-run-report"))
    run_dir(os.path.join(d("dry-run-report"), "run"))
    os.makedirs(d("empty-results"))
    logs = os.path.join(u, "logs")
    os.makedirs(logs)
    os.mkfifo(os.path.join(logs, "console.fifo"))
    with open(os.path.join(HERE, "console", "kasan-uaf.log")) as f:
        text = f.read()
    with open(os.path.join(logs, "escapes.log"), "w") as f:
        f.write(text.replace("uio_unregister_device", "uio_unregister_device\x1b[2J\x1b]0;x\x07", 3))
    return u


def ktap_lines(path):
    with open(os.path.join(path, "results.ktap")) as f:
        return f.read().splitlines()


def results_only(lines):
    return [l for l in lines if l.startswith(("ok ", "not ok "))]


def check_ktap_one_result(d, out):
    lines = ktap_lines(d)
    bad = [l for l in lines if not l.startswith(("KTAP version", "1..", "# ", "ok ", "not ok "))]
    res = results_only(lines)
    return ([f"a line KTAP cannot read: {bad[0]!r}"] if bad else []) + \
        ([f"{len(res)} result lines, want 1: {res}"] if len(res) != 1 else [])


def check_not_skip(d, out):
    res = results_only(ktap_lines(d))
    forged = [f"a forged directive: {res}"] if any("# SKIP" in l for l in res) else []
    return forged + check_ktap_one_result(d, out)


def check_clean_text(d, out):
    problems = []
    for name in ("summary.md", "results.ktap", "junit.xml"):
        with open(os.path.join(d, name), encoding="utf-8") as f:
            text = f.read()
        if any(c in text for c in "\x1b\x07\u202e\x01\x0b\x0c"):
            problems.append(f"a control character in {name}")
    if any(c in out for c in "\x1b\x07\u202e"):
        problems.append("a control character on the terminal")
    return problems + check_junit(d, out)


def check_junit(d, out):
    try:
        xml.dom.minidom.parse(os.path.join(d, "junit.xml"))
    except Exception as e:  # noqa: BLE001 - any parse error is the finding
        return [f"junit.xml does not parse: {e}"]
    return []


def check_table(d, out):
    with open(os.path.join(d, "summary.md")) as f:
        rows = [l for l in f.read().splitlines() if l.startswith("| ")]
    counts = {l.replace("\\|", "").count("|") for l in rows}
    return [] if counts == {10} else [f"table rows with {sorted(counts)} cell separators, want 10"]


def check_fence(d, out):
    with open(os.path.join(d, "summary.md")) as f:
        lines = f.read().splitlines()
    opened = next((l for l in lines if l.startswith("```") and set(l) == {"`"}), None)
    longest = max(len(l) - len(l.lstrip("`")) for l in lines if "```" in l and set(l) != {"`"}) if any(
        "```" in l and set(l) != {"`"} for l in lines) else 0
    return [] if opened and len(opened) > 5 and len(opened) > longest else [f"fence {opened!r} can be closed"]


def check_no_secret(d, out):
    found = [n for n in os.listdir(d) if os.path.isfile(os.path.join(d, n))
             and SECRET in open(os.path.join(d, n), errors="replace").read()]
    return ([f"the outside file quoted in {found}"] if found else []) + \
        (["the outside file on the terminal"] if SECRET in out else [])


def check_secret_kept(d, out):
    with open(os.path.join(os.path.dirname(d), "outside", "secret.txt")) as f:
        return [] if f.read() == SECRET + "\n" else ["a file outside the run directory was written"]


def check_not_rendered(d, out):
    return [f"{n} written" for n in ("summary.md", "results.ktap", "junit.xml")
            if os.path.exists(os.path.join(d, n))]


def check_short(d, out):
    return [f"{len(out)} characters of output"] if len(out) > 2000 else []


def check_escaped_terminal(d, out):
    return ["a control character on the terminal"] if any(c in out for c in "\x1b\x07") else []


U = "{s}/u"
PY = ["{py}", "-m", "krepro"]
# (name, argv, expected exit, a fragment of the output, extra environment,
# a check of (the directory named by the last argument, the output)).
CASES = [
    # --- run.json: paths stay inside the run directory ---
    ("report of a good run", ["{run}", "--report", U + "/good"], 1, "written", None, check_junit),
    ("report path absolute", ["{run}", "--report", U + "/abs-report"], 128,
     "runs[0].report is '/etc/passwd', not a path inside the run directory", None, check_not_rendered),
    ("log path with ..", PY + ["report", U + "/dotdot-log"], 128, "not a path inside", None, check_no_secret),
    ("ktap path absolute", PY + ["report", U + "/abs-ktap"], 128, "runs[0].ktap", None, check_no_secret),
    ("lava log path absolute", PY + ["report", U + "/abs-lava-log"], 128, "runs[0].lava_log", None, None),
    ("cut-off log path absolute", PY + ["report", U + "/cut-off-out"], 128, "cut_off[0].log", None, None),
    ("prepare log climbing out", PY + ["report", U + "/prepare-out"], 128, "prepare[0].log", None, None),
    ("console.log a link out", PY + ["report", U + "/log-link-out"], 128, "leads out of the run directory",
     None, check_no_secret),
    ("gate of a link out", PY + ["gate", U + "/dotdot-log", "patched", "x"], 128, "not a path inside", None,
     None),
    # --- only regular files, bounded ---
    ("console.log a FIFO", PY + ["report", U + "/log-fifo"], 128, "is a FIFO, not a regular file", None,
     check_not_rendered),
    ("run.json a FIFO", ["{run}", "--report", U + "/json-fifo"], 128, "is a FIFO, not a regular file", None,
     None),
    ("run.json a link to /dev/zero", PY + ["report", U + "/json-devzero"], 128, "leads out", None, None),
    ("run.json a link out", PY + ["report", U + "/json-link-out"], 128, "leads out", None, None),
    ("run.json a directory", PY + ["report", U + "/json-dir"], 128, "is a directory", None, None),
    ("run.json over 64 MiB", PY + ["report", U + "/json-big"], 128, "MiB", None, None),
    # --- escaped wherever written ---
    ("a name with a newline forges no KTAP line", PY + ["report", U + "/newline-name"], 1, "\\x0a", None,
     check_ktap_one_result),
    ("a name with # forges no directive", PY + ["report", U + "/hash-name"], 1, "written", None, check_not_skip),
    ("a cell passes for no directive", PY + ["report", U + "/skip-cell"], 1, "written", None, check_not_skip),
    ("terminal controls escaped", PY + ["report", U + "/terminal"], 1, "\\x1b[2J", None, check_clean_text),
    ("XML-illegal characters escaped", PY + ["report", U + "/xml-controls"], 1, "written", None,
     check_clean_text),
    ("pipes escaped in the table", PY + ["report", U + "/pipe-name"], 1, "a\\|b", None, check_table),
    ("a log's backticks cannot close the fence", PY + ["report", U + "/fence-log"], 1, "``````", None,
     check_fence),
    ("a name of 100,000 characters", PY + ["report", U + "/long-name"], 1, "written", None, check_junit),
    ("a report's temporary file a link out", PY + ["report", U + "/tmp-link-out"], 1, "written", None,
     check_secret_kept),
    # --- classify: only a regular file; its words escaped ---
    ("classify a FIFO", PY + ["classify", U + "/logs/console.fifo"], 128, "is a FIFO", None, None),
    ("classify /dev/zero", ["{run}", "--classify", "/dev/zero"], 128, "is a character device", None, None),
    ("classify --vmlinux a FIFO", PY + ["classify", "--vmlinux", U + "/logs/console.fifo", U + "/logs/escapes.log"],
     128, "is a FIFO", None, None),
    ("--classify=LOG", ["{run}", "--classify=" + U + "/logs/escapes.log"], 1, "KASAN", {"KREPRO_NO_BUILD": "1"},
     check_escaped_terminal),
    # --- variables, where they are used ---
    ("bad KREPRO_AFTER_REPORT and --help", ["{run}", "--help"], 0, "Exit status", {"KREPRO_AFTER_REPORT": "abc"},
     None),
    ("bad KREPRO_AFTER_REPORT and krepro --help", PY + ["--help"], 0, "classify",
     {"KREPRO_AFTER_REPORT": "abc"}, None),
    ("bad KREPRO_AFTER_REPORT and a report", PY + ["report", U + "/good"], 1, "written",
     {"KREPRO_AFTER_REPORT": "abc"}, None),
    ("bad KREPRO_AFTER_REPORT and a run", ["{run}", "--dry-run", X], 128, "KREPRO_AFTER_REPORT wants seconds",
     {"KREPRO_AFTER_REPORT": "abc"}, None),
    ("huge KREPRO_AFTER_REPORT", ["{run}", "--dry-run", X], 128, "from 0 to 3600",
     {"KREPRO_AFTER_REPORT": "1e5"}, None),
    ("KREPRO_CACHE a file: run", ["{run}", "--dry-run", X], 128, "KREPRO_CACHE={s}/cache-file: not a directory",
     {"KREPRO_CACHE": "{s}/cache-file"}, None),
    ("KREPRO_CACHE a file: --version", ["{run}", "--version"], 128, "not a directory",
     {"KREPRO_CACHE": "{s}/cache-file"}, None),
    ("KREPRO_CACHE a file: a report needs none", PY + ["report", U + "/good"], 1, "written",
     {"KREPRO_CACHE": "{s}/cache-file"}, None),
    # --- arguments ---
    ("a reproducer twice", ["{run}", "--dry-run", X, X], 128, "given twice", None, None),
    ("--repeat 1_0", ["{run}", "--repeat", "1_0", X], 128, "not '1_0'", None, None),
    ("--repeat in Arabic-Indic digits", ["{run}", "--repeat", "\u0663", X], 128, "whole number", None, None),
    ("--max-runs in full-width digits", ["{run}", "--max-runs", "\uff15", X], 128, "whole number", None, None),
    ("-j with spaces", ["{run}", "-j", " 2", X], 128, "whole number", None, None),
    ("KREPRO_JOBS 1_0", ["{run}", "--dry-run", X], 128, "KREPRO_JOBS", {"KREPRO_JOBS": "1_0"}, None),
    ("--miss 1e-30", ["{run}", "--dry-run", "--miss", "1e-30", X], 128, "below 1e-06", None, None),
    ("--miss 0_1", ["{run}", "--miss", "0_1", X], 128, "wants a probability", None, None),
    ("--miss nan", ["{run}", "--miss", "nan", X], 128, "wants a probability", None, None),
    ("--confidence of nines", ["{run}", "--dry-run", "--confidence", "0.9999999999", X], 128, "below 1e-06",
     None, None),
    ("--report with --dry-run", ["{run}", "--report", U + "/dry-run-report/run", "--dry-run"], 128,
     "not --dry-run", None, None),
    ("--dry-run before --report", ["{run}", "--dry-run", "--report", U + "/dry-run-report/run"], 128,
     "not --dry-run", None, check_not_rendered),
    ("--report with a reproducer", ["{run}", "--report", U + "/good", X], 128, "not " + X, None, None),
    ("--report with --kernel=", ["{run}", "--report", U + "/good", "--kernel=patched"], 128, "not --kernel",
     None, None),
    ("--report= with --any-report", ["{run}", "--report=" + U + "/good", "--any-report"], 1, "written", None,
     None),
    ("--results /etc", ["{run}", "--dry-run", "--results", "/etc", X], 128, "holds files and no run.json", None,
     None),
    ("--results of other files with --replace", ["{run}", "--dry-run", "--results", U + "/outside", "--replace",
                                                 X], 0, "nothing is built or booted", None, None),
    ("--results an empty directory", ["{run}", "--dry-run", "--results", U + "/empty-results", X], 0,
     "nothing is built or booted", None, None),
    ("a name of 100,000 characters", ["{run}", "--dry-run", "x" * 100000], 128, "characters)...", None,
     check_short),
    ("an option of 100,000 characters", ["{run}", "--" + "x" * 100000], 128, "characters)", None, check_short),
    ("a subcommand of 100,000 characters", PY + ["y" * 100000], 128, "characters)", None, check_short),
    ("a name with terminal controls", ["{run}", "--dry-run", "x\x1b[2Jy"], 128, "\\x1b[2J", None,
     check_escaped_terminal),
    ("a name in upper case", ["{run}", "--dry-run", "XFS-NOWAIT-DIO"], 128, "did you mean xfs-nowait-dio?", None,
     None),
]


def interrupt_anywhere(subst, env):
    """Ctrl-C at 20 moments of run-in-qemu.sh --classify - (from the shell's
    start to the reader waiting on stdin): 130 (or the shell's own death by
    SIGINT, before krepro's code), at most one line, never a traceback."""
    problems = []
    for i in range(20):
        p = subprocess.Popen([subst["run"], "--classify", "-"], env=env, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(i * 0.015)
        p.send_signal(signal.SIGINT)
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            problems.append(f"at {i * 15} ms: still running 30 s later")
            continue
        if p.returncode not in (130, -signal.SIGINT) or "Traceback" in err or len(err.splitlines()) > 1:
            problems.append(f"at {i * 15} ms: exit {p.returncode}, stderr {err[-200:]!r}")
    return problems


def snapshot(root, skip):
    """Every file under root but those under skip, with its size and mtime."""
    out = {}
    for d, dirs, files in os.walk(root):
        dirs[:] = [x for x in dirs if os.path.join(d, x) not in skip]
        for f in files:
            p = os.path.join(d, f)
            st = os.lstat(p)
            out[p] = (st.st_size, st.st_mtime_ns)
    return out


def one_case(case, env, subst, scratch):
    name, argv, want, needle, extra, check = case
    e = dict(env, **{k: v.format(**subst) for k, v in (extra or {}).items()})
    argv = [a.format(**subst) for a in argv]
    try:
        p = subprocess.run(argv, env=e, cwd=scratch, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=60, errors="surrogateescape")
    except subprocess.TimeoutExpired:
        return ["hung: no exit in 60 s"], ""
    both = p.stdout + p.stderr
    problems = [] if p.returncode == want else [f"exit {p.returncode}, want {want}"]
    if needle.format(**subst) not in both:
        problems.append(f"no {needle[:80]!r} in the output")
    if "Traceback" in both:
        problems.append("a Python traceback")
    if want == 128 and len(p.stderr.splitlines()) > 1:
        problems.append(f"{len(p.stderr.splitlines())} lines on stderr, want one")
    if check:
        problems += check(argv[-1] if os.path.isdir(argv[-1]) else argv[-1].split("=", 1)[-1], both)
    return problems, both


def main():
    passed = failed = 0
    with tempfile.TemporaryDirectory() as scratch:
        top, cache, marks, env, subst = test_contract.setup(scratch)
        u = make_inputs(subst["s"])
        runs = {os.path.join(u, n) for n in os.listdir(u)} | {os.path.join(u, "dry-run-report", "run")}
        before = snapshot(subst["s"], runs)
        for case in CASES:
            problems, out = one_case(case, env, subst, scratch)
            if problems:
                failed += 1
                print(f"not ok - {case[0]}: {'; '.join(problems)}")
                print("".join("    | " + l[:300] + "\n" for l in out.splitlines()[-8:]), end="")
            else:
                passed += 1
                print(f"ok - {case[0]}")
        checks = [("Ctrl-C at any moment: 130, one line", interrupt_anywhere(subst, env))]
        after = snapshot(subst["s"], runs)
        changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
        checks.append(("nothing written outside the run directories", [f"changed: {changed[:5]}"] if changed else []))
        left = [m for m in os.listdir(marks)]
        if os.path.exists(os.path.join(top, "build")):
            left.append("a build directory")
        checks.append(("nothing built or booted", [f"left: {left}"] if left else []))
        for name, problems in checks:
            if problems:
                failed += 1
                print(f"not ok - {name}: {'; '.join(problems[:5])}")
            else:
                passed += 1
                print(f"ok - {name}")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
