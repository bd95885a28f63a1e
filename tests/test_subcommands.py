#!/usr/bin/env python3
"""python3 -m krepro's subcommands keep the exit contract: 0 clean, 1 a bug
reproduced or a report found, 125 undecided, 128 usage error or unreadable
input (one line on stderr, "krepro: ..."), 130 interrupted; help on stdout
with exit 0; never a traceback.

A table of invocations on fake run directories and console logs (run as
subprocesses), then: gate writes nothing on bad labels, an interrupt is 130,
a closed stdout is quiet, render() and gate() survive every mangled record,
and the streaming classifier finds what crashes() finds in every golden log.
Boots nothing."""
import contextlib
import copy
import fcntl
import glob
import io
import json
import os
import signal
import struct
import subprocess
import sys
import tempfile
import termios
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
SCRIPTS = os.path.join(TOP, "scripts")
sys.path.insert(0, SCRIPTS)
from krepro.results import gate, render  # noqa: E402
from krepro.reports import console  # noqa: E402
from krepro.reports.console_lines import MAX_LINE, file_lines  # noqa: E402

KASAN = os.path.join(HERE, "console", "kasan-uaf.log")
QUIET = os.path.join(HERE, "console", "real-xfs-nowait-dio-pass.log")


def row(repro, kernel, decision, role="probe", expected=None, as_expected=None):
    return {"repro": repro, "kernel": kernel, "role": role, "decision": decision, "runs": 1,
            "counts": {decision: 1}, "fails": int(decision == "FAIL"), "trials": 1, "why": "", "fix_commit": "",
            "target_miss": 0.01, "rate": None, "miss": None, "expected": expected,
            "as_expected": as_expected, "cell": f"{decision} 1/1"}


def run(repro, kernel, outcome):
    d = f"{repro}.{kernel}.1"
    r = {"repro": repro, "kernel": kernel, "run": 1, "outcome": outcome, "evidence": f"{outcome} evidence",
         "seconds": 5.0, "log": f"{d}/console.log", "ktap": f"{d}/ktap.txt"}
    if outcome in ("FAIL", "OTHER"):
        title = "KASAN: use-after-free in uio_unregister_device"
        r.update(evidence=title, signature="report: " + title, reports=[
            {"kind": "KASAN", "title": title, "line": 5, "headers": [["KASAN", title]],
             "frames": ["uio_unregister_device", "tcmu_destroy_device"], "culprit": title}])
    return r


def record(rows, runs, finished=True, interrupted=False, expect=False, **extra):
    rec = {"format": 1, "arch": "x86_64", "accel": "tcg", "started": "2026-12-04T10:00:00+00:00",
           "finished": "2026-12-04T10:05:00+00:00" if finished else None, "interrupted": interrupted,
           "krepro": "test", "expect": expect, "any_report": False, "jobs": 1, "via": "qemu",
           "mode": {"kind": "sequential", "miss": 0.01, "cap": 20},
           "kernels": [{"label": k} for k in dict.fromkeys(r["kernel"] for r in rows + runs)],
           "rows": rows, "runs": runs, "prepare": []}
    rec.update(extra)
    return rec


PAIR = [row("a", "base", "PASS"), row("a", "base+series", "FAIL")]
PAIR_RUNS = [run("a", "base", "PASS"), run("a", "base+series", "FAIL")]
MATRIX = [row("a", "unpatched", "FAIL", "bug", "FAIL", True), row("a", "patched", "PASS", "fixed", "PASS", True)]
MATRIX_RUNS = [run("a", "unpatched", "FAIL"), run("a", "patched", "PASS")]
# run-in-qemu.sh's record of a run stopped by Ctrl-C before any row was decided.
STOPPED = dict(record([], [run("r", "patched", "PASS")], finished=False, interrupted=True, expect=True),
               cut_off=[{"repro": "r", "kernel": "patched", "run": 2, "log": "r.patched.2/console.log"}])

# Run directories: name -> run.json's text (None: no run.json at all).
RUNS = {
    "clean": record([row("a", "base", "PASS"), row("a", "base+series", "PASS")],
                    [run("a", "base", "PASS"), run("a", "base+series", "PASS")]),
    "failed": record(PAIR, PAIR_RUNS),
    "undecided": record([row("a", "base", "BROKEN")], [run("a", "base", "BROKEN")]),
    "expect-ok": record(MATRIX, MATRIX_RUNS, expect=True),
    "expect-bad": record([dict(MATRIX[0], decision="PASS", as_expected=False, cell="PASS 1/1"), MATRIX[1]],
                         [run("a", "unpatched", "PASS"), MATRIX_RUNS[1]], expect=True),
    "stopped": STOPPED,
    "stopped-fail": record(PAIR, PAIR_RUNS, finished=False, interrupted=True),
    "killed-expect": record(MATRIX[:1], MATRIX_RUNS, finished=False, expect=True),
    "killed-fail": record(PAIR, PAIR_RUNS, finished=False),
    "empty": "",
    "truncated": json.dumps(record(PAIR, PAIR_RUNS))[:200],
    "a-list": "[1, 2, 3]\n",
    "no-rows": {k: v for k, v in record(PAIR, PAIR_RUNS).items() if k != "rows"},
    "runs-a-string": dict(record(PAIR, PAIR_RUNS), runs="none"),
    "kernel-a-number": record([dict(PAIR[0], kernel=7)], PAIR_RUNS),
    "no-run-json": None,
}

# (argv, expected exit, stream "out" or "err", a fragment of it, stdin or None).
# {d} is the directory of fake runs, {log} a scratch directory of console logs.
CASES = [
    # the command itself
    ([], 128, "err", "usage: python3 -m krepro", None),
    (["--help"], 0, "out", "usage: python3 -m krepro", None),
    (["-h"], 0, "out", "130 interrupted", None),
    (["help"], 0, "out", "classify [--json] LOG", None),
    (["help", "gate"], 0, "out", "BASE", None),
    (["help", "nosuch"], 128, "err", "krepro: help: no subcommand 'nosuch'", None),
    (["help", "help"], 0, "out", "classify [--json] LOG", None),
    (["--version"], 0, "out", "krepro ", None),
    (["--version", "x"], 128, "err", "krepro: unknown option '--version'", None),
    (["frobnicate"], 128, "err", "krepro: unknown subcommand 'frobnicate'", None),
    (["--frobnicate"], 128, "err", "krepro: unknown option '--frobnicate'", None),
    (["run", "--help"], 0, "out", "run-in-qemu.sh", None),
    # report: help, usage
    (["report", "--help"], 0, "out", "130 a run that was interrupted", None),
    (["report"], 128, "err", "krepro: report: the following arguments are required: DIR", None),
    (["report", "{d}/clean", "extra"], 128, "err", "krepro: report: unrecognized arguments: extra", None),
    (["report", "--any", "{d}/clean"], 128, "err", "unrecognized arguments: --any", None),
    # report: the status of finished runs, as before
    (["report", "{d}/clean"], 0, "out", "| a | base | PASS 1/1 |", None),
    (["report", "{d}/failed"], 1, "out", "FAIL in 1 of 1 runs", None),
    (["report", "{d}/undecided"], 125, "out", "BROKEN 1/1", None),
    (["report", "{d}/expect-ok"], 0, "out", "matrix: every row as expected", None),
    (["report", "{d}/expect-bad"], 1, "out", "matrix: UNEXPECTED rows above", None),
    # report: runs that did not finish decide nothing
    (["report", "{d}/stopped"], 130, "err", "krepro: {d}/stopped holds a partial run", None),
    (["report", "{d}/stopped"], 130, "out", "matrix: PARTIAL run", None),
    (["report", "{d}/stopped-fail"], 130, "out", "**PARTIAL**", None),
    (["report", "{d}/killed-expect"], 125, "out", "this run did not finish (killed or still running)", None),
    (["report", "{d}/killed-fail"], 125, "out", "**PARTIAL**", None),
    # report: what is not a run
    (["report", "{d}/nosuch"], 128, "err", "krepro: report: {d}/nosuch: no such directory", None),
    (["report", "{d}/no-run-json"], 128, "err", "krepro: report: {d}/no-run-json/run.json: no such file", None),
    (["report", "{d}/empty"], 128, "err",
     "krepro: report: {d}/empty/run.json: not a krepro run record (empty file)", None),
    (["report", "{d}/truncated"], 128, "err",
     "krepro: report: {d}/truncated/run.json: not a krepro run record (truncated JSON", None),
    (["report", "{d}/a-list"], 128, "err", "not a krepro run record (the record is a list, not an object)", None),
    (["report", "{d}/no-rows"], 128, "err", "not a krepro run record (rows is missing)", None),
    (["report", "{d}/runs-a-string"], 128, "err", "not a krepro run record (runs is a string, not a list)", None),
    (["report", "{d}/kernel-a-number"], 128, "err",
     "not a krepro run record (rows[0].kernel is a number, not a string)", None),
    (["report", "{d}/a-file"], 128, "err", "krepro: report: {d}/a-file: not a directory", None),
    (["report", "{d}/binary"], 128, "err", "not a krepro run record (not UTF-8 text)", None),
    (["report", "{d}/json-dir"], 128, "err", "{d}/json-dir/run.json: is a directory", None),
    (["report", "{d}/unwritable"], 128, "err", "krepro: report: {d}/unwritable/summary.md: cannot write it (", None),
    # gate
    (["gate", "--help"], 0, "out", "BASE", None),
    (["gate", "{d}/failed", "base"], 128, "err", "krepro: gate: the following arguments are required: SERIES",
     None),
    (["gate", "{d}/failed", "base", "base+series"], 1, "out", "the series broke these): a", None),
    (["gate", "{d}/clean", "base", "base+series"], 0, "out", "| a | PASS 1/1 | PASS 1/1 | unchanged |", None),
    (["gate", "{d}/killed-fail", "base", "base+series"], 1, "out", "PARTIAL", None),
    (["gate", "{d}/nosuch", "base", "base+series"], 128, "err", "krepro: gate: {d}/nosuch: no such directory",
     None),
    (["gate", "{d}/truncated", "base", "base+series"], 128, "err", "not a krepro run record (truncated JSON",
     None),
    (["gate", "{d}/gated", "nosuch", "other"], 128, "err",
     "krepro: gate: {d}/gated: no kernel 'nosuch' or 'other' in this run (its kernels: base, base+series)",
     None),
    (["gate", "{d}/gated", "base", "other"], 128, "err", "no kernel 'other' in this run", None),
    (["gate", "{d}/gated", "base", "base"], 128, "err", "BASE and SERIES are both 'base'", None),
    # classify
    (["classify", "--help"], 0, "out", "--json             one JSON object a report and line", None),
    (["classify", "--help"], 0, "out", "journalctl or syslog output", None),
    (["classify"], 128, "err", "krepro: classify: the following arguments are required: LOG", None),
    (["classify", "/nonexistent/console.log"], 128, "err", "krepro: classify: /nonexistent/console.log: no such file",
     None),
    (["classify", "{log}"], 128, "err", "krepro: classify: {log}: is a directory", None),
    (["classify", KASAN], 1, "out", "report 1, line 5: KASAN: use-after-free Read in uio_unregister_device\n", None),
    (["classify", "--json", KASAN], 1, "out",
     '{"line": 5, "kind": "KASAN", "title": "KASAN: use-after-free Read in uio_unregister_device", "header": ', None),
    (["classify", "--vmlinux", "{log}", KASAN], 128, "err", "krepro: classify: {log}: is a directory", None),
    (["classify", "--vmlinux", KASAN, KASAN], 128, "err", "not an ELF file", None),
    (["classify", "--jso", KASAN], 128, "err", "unrecognized arguments: --jso", None),
    (["classify", QUIET], 0, "out", "no kernel report", None),
    (["classify", "{log}/empty.log"], 0, "out", "no kernel report", None),
    (["classify", "-"], 1, "out", "  header     refcount_t: addition on 0; use-after-free\n",
     os.path.join(HERE, "console", "refcount-warning.log")),
]


def setup(scratch):
    d = os.path.join(scratch, "runs")
    for name, rec in RUNS.items():
        os.makedirs(os.path.join(d, name))
        if rec is None:
            continue
        with open(os.path.join(d, name, "run.json"), "w") as f:
            f.write(rec if isinstance(rec, str) else json.dumps(rec, indent=1))
    # The FAIL runs' console, for the report's excerpt.
    for name in ("failed", "expect-ok", "stopped-fail", "killed-fail", "killed-expect"):
        for k in ("base+series", "unpatched"):
            os.makedirs(os.path.join(d, name, f"a.{k}.1"))
            with open(KASAN) as src, open(os.path.join(d, name, f"a.{k}.1", "console.log"), "w") as f:
                f.write(src.read())
    os.makedirs(os.path.join(d, "gated"))
    with open(os.path.join(d, "gated", "run.json"), "w") as f:
        json.dump(RUNS["failed"], f)
    with open(os.path.join(d, "gated", "gate.md"), "w") as f:
        f.write("an earlier gate\n")
    with open(os.path.join(d, "a-file"), "w") as f:
        f.write("not a directory\n")
    os.makedirs(os.path.join(d, "binary"))
    with open(os.path.join(d, "binary", "run.json"), "wb") as f:
        f.write(b"\xff\xfe\x00binary\x80")
    os.makedirs(os.path.join(d, "json-dir", "run.json"))
    os.makedirs(os.path.join(d, "unwritable", "summary.md.tmp"))
    with open(os.path.join(d, "unwritable", "run.json"), "w") as f:
        json.dump(RUNS["clean"], f)
    log = os.path.join(scratch, "logs")
    os.makedirs(log)
    open(os.path.join(log, "empty.log"), "w").close()
    env = dict(os.environ, PYTHONPATH=SCRIPTS)
    return {"d": d, "log": log}, env


def krepro(argv, env, stdin=None, **kw):
    with open(stdin) if stdin else open(os.devnull) as f:
        return subprocess.run([sys.executable, "-m", "krepro"] + argv, env=env, stdin=f,
                              capture_output=True, text=True, timeout=120, **kw)


class Tally:
    def __init__(self):
        self.passed = self.failed = 0

    def check(self, name, problems, detail=""):
        if problems:
            self.failed += 1
            print(f"not ok - {name}: {'; '.join(problems)}")
            if detail:
                print("".join("    | " + l + "\n" for l in detail.splitlines()[-12:]), end="")
        else:
            self.passed += 1
            print(f"ok - {name}")


def fill(s, subst):
    for k, v in subst.items():
        s = s.replace("{" + k + "}", v)
    return s


def table(t, subst, env):
    for argv, want, stream, needle, stdin in CASES:
        argv = [fill(a, subst) for a in argv]
        needle = fill(needle, subst)
        p = krepro(argv, env, stdin)
        text = p.stdout if stream == "out" else p.stderr
        problems = []
        if p.returncode != want:
            problems.append(f"exit {p.returncode}, want {want}")
        if needle not in text:
            problems.append(f"no {needle!r} on std{stream}")
        if "Traceback" in p.stdout + p.stderr:
            problems.append("a Python traceback")
        err = p.stderr.splitlines()
        if want == 128 and argv and (len(err) != 1 or not err[0].startswith("krepro: ")):
            problems.append(f"{len(err)} lines on stderr, want one 'krepro: ...' line")
        if want == 128 and not argv and not err[-1:][0].startswith("krepro: "):
            problems.append("the usage does not end with a 'krepro: ...' line")
        if ("--help" in argv or argv[:1] == ["help"] and want == 0) and (p.stderr or not p.stdout):
            problems.append("help not on stdout alone")
        t.check(f"krepro {' '.join(argv)} -> {want}", problems, p.stdout + p.stderr)


def gate_writes_nothing(t, subst, env):
    d = os.path.join(subst["d"], "gated")
    krepro(["gate", d, "nosuch", "other"], env)
    with open(os.path.join(d, "gate.md")) as f:
        kept = f.read() == "an earlier gate\n"
    t.check("gate with labels not in the run leaves gate.md as it was", [] if kept else ["gate.md rewritten"])


def interrupt(t, scratch, env):
    """Ctrl-C while classify waits on its input (a pipe, on stdin: a FIFO
    given as LOG is refused): 130 and one line."""
    p = subprocess.Popen([sys.executable, "-m", "krepro", "classify", "-"], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdin.write("[    1.0] some console line\n")
    p.stdin.flush()
    # Once the pipe is empty the reader has taken the line: it is in Python,
    # past its start, reading.
    deadline = time.time() + 30
    while time.time() < deadline and pending(p.stdin.fileno()):
        time.sleep(0.05)
    time.sleep(0.3)
    p.send_signal(signal.SIGINT)
    err = p.stderr.read()
    p.wait(timeout=30)
    out = p.stdout.read()
    p.stdin.close()
    problems = []
    if p.returncode != 130:
        problems.append(f"exit {p.returncode}, want 130")
    if err != "krepro: classify: interrupted\n":
        problems.append(f"stderr {err!r}")
    t.check("Ctrl-C in classify: 130, one line", problems, out + err)


def pending(fd):
    """Bytes waiting in the pipe fd writes to."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0" * 4))[0]


def closed_stdout(t, scratch, env):
    """classify BIG | head -1: no traceback when the reader goes."""
    big = os.path.join(scratch, "logs", "many.log")
    with open(KASAN) as src, open(big, "w") as f:
        text = src.read()
        for _ in range(3000):
            f.write(text)
    p = subprocess.Popen([sys.executable, "-m", "krepro", "classify", big], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    first = p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read()
    p.wait(timeout=60)
    problems = [] if first.startswith("report 1, line 5: KASAN") else [f"first line {first!r}"]
    if err:
        problems.append(f"stderr {err[-300:]!r}")
    t.check("classify into a closed pipe ends quietly", problems)


def paths(obj, prefix=()):
    """Every key and index path into a JSON value."""
    if isinstance(obj, dict):
        items = obj.items()
    elif isinstance(obj, list):
        items = enumerate(obj)
    else:
        return
    for k, v in items:
        yield prefix + (k,)
        yield from paths(v, prefix + (k,))


def mangled(rec):
    """rec with one key dropped or one value of another type, every way."""
    for path in paths(rec):
        for what in ("drop", None, 0, 1e308, "x", True, [None], {"x": None}):
            r = copy.deepcopy(rec)
            parent = r
            for k in path[:-1]:
                parent = parent[k]
            if what == "drop":
                if isinstance(parent, list):
                    continue
                del parent[path[-1]]
            else:
                parent[path[-1]] = copy.deepcopy(what)
            yield f"{'.'.join(map(str, path))}={what!r}", r


def survives(t, scratch):
    """render() and gate() on every mangled record: a status, never an
    exception; a refusal is the one-line kind the record check gives."""
    d = os.path.join(scratch, "mangled")
    os.makedirs(os.path.join(d, "a.base+series.1"))
    with open(KASAN) as src, open(os.path.join(d, "a.base+series.1", "console.log"), "w") as f:
        f.write(src.read())
    rich = record(PAIR + [row("b", "base", "OTHER")], PAIR_RUNS + [run("b", "base", "OTHER")],
                  cut_off=[{"repro": "a", "kernel": "base", "run": 2, "log": "a.base.2/console.log"}],
                  prepare=[{"repro": "a", "outcome": "PASS", "seconds": 1.0, "log": "prepare/a/console.log"}])
    rich["rows"][0]["miss"] = 0.3
    rich["rows"][1]["rate"] = {"fails": 1, "runs": 1, "low": 0.05, "source": "measured"}
    rich["runs"][1].update(report="a.base+series.1/report.txt", decoded=3,
                           lava_results={"lava/job": 7, "x": "pass"}, via="lava-run")
    problems, n = [], 0
    for base, series, good in (("base", "base+series", rich), ("unpatched", "patched", RUNS["expect-ok"]),
                               ("patched", "patched2", STOPPED)):
        for what, rec in mangled(good):
            with open(os.path.join(d, "run.json"), "w") as f:
                json.dump(rec, f)
            n += 2
            problems += refusals(d, what, base, series)
    t.check(f"render and gate on {n} mangled records: a status, never an exception", problems[:10],
            "\n".join(problems[:30]))


def refusals(d, what, base, series):
    problems = []
    for name, call in (("render", lambda: render.render(d, quiet=True)),
                       ("gate", lambda: gate.gate(d, base, series))):
        err = io.StringIO()
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
                code = call()
        except Exception as e:  # noqa: BLE001 - the point of the test
            problems.append(f"{name} {what}: {type(e).__name__}: {e}")
            continue
        lines = err.getvalue().splitlines()
        if code not in (0, 1, 125, 128, 130):
            problems.append(f"{name} {what}: exit {code}")
        elif code == 128 and (len(lines) != 1 or not any(
                x in lines[0] for x in ("not a krepro run record (", ": no kernel "))):
            problems.append(f"{name} {what}: {lines}")
        elif code == 128 and "unexpected content" in lines[0]:
            problems.append(f"{name} {what}: past the record check: {lines[0]}")
    return problems


def golden(t, scratch):
    """The streaming classifier finds exactly crashes()'s reports, in every
    golden log, and with the line breaks splitlines() knows beside \\n."""
    logs = sorted(glob.glob(os.path.join(HERE, "console", "*.log")))
    if not logs:
        t.check("golden logs", ["none found"])
    for log in logs:
        with open(log, errors="replace") as f:
            want = console.crashes(f.read())
        with open(log, errors="replace") as f:
            got = list(console.crashes_stream(file_lines(f)))
        t.check(f"crashes_stream = crashes: {os.path.basename(log)}",
                [] if got == want else [f"{len(got)} crashes, want {len(want)}"])
    odd = os.path.join(scratch, "logs", "odd.log")
    with open(KASAN) as f:
        text = f.read()
    text = text.replace("\n", "\r\n", 3).replace("Call Trace:", "Call\x0cTrace:\x85") + "\rlast\u2028line"
    with open(odd, "w", newline="") as f:
        f.write(text)
    with open(odd, errors="replace") as f:
        want = console.crashes(f.read())
    with open(odd, errors="replace") as f:
        got = list(console.crashes_stream(file_lines(f)))
    t.check("crashes_stream = crashes: CR, CRLF, form feed, NEL, U+2028",
            [] if got == want and want else [f"{got} != {want}"])
    # A line past MAX_LINE: its head is read, the lines after it keep their numbers.
    long = os.path.join(scratch, "logs", "long.log")
    text = ("boot\nBUG: KASAN: use-after-free in foo+0x1/0x2 " + "x " * MAX_LINE + "\n"
            "---[ end trace 0 ]---\nBUG: KASAN: double-free or invalid-free in bar+0x1/0x2\n")
    with open(long, "w") as f:
        f.write(text)
    with open(long) as f:
        got = list(console.crashes_stream(file_lines(f)))
    want = console.crashes(text)
    t.check("crashes_stream = crashes: a line longer than MAX_LINE",
            [] if got == want and [c["line"] for c in got] == [2, 4] else [f"{got} != {want}"])


def main():
    t = Tally()
    with tempfile.TemporaryDirectory() as scratch:
        subst, env = setup(scratch)
        table(t, subst, env)
        gate_writes_nothing(t, subst, env)
        interrupt(t, scratch, env)
        closed_stdout(t, scratch, env)
        survives(t, scratch)
        golden(t, scratch)
    print(f"{t.passed} passed, {t.failed} failed")
    return 1 if t.failed else 0


if __name__ == "__main__":
    sys.exit(main())
