#!/usr/bin/env python3
"""Fuzz krepro's input from someone else (hypothesis, python3-hypothesis):
argv for run (always --dry-run or --report), report and classify; mutated
run.json records rendered and gated; log bytes classified. About 5,000
cases in-process, and a few hundred argv through python3 -m krepro as a
user runs it. A case fails on an exception (a traceback), a hang (10 s), an
exit outside 0, 1, 125, 128, 130, a control character written to a report
or the terminal, a KTAP line a parser would misread, JUnit XML that does not
parse, or a file changed outside the run directories.

Boots nothing and builds nothing: every run is a --dry-run (run() is
replaced by one that fails the case), classify uses the signatures built
(KREPRO_NO_BUILD=1), in a copy of the tree with an empty cache and a QEMU
that leaves a mark (tests/test_contract.py's setup).

  FUZZ_SCALE=N  N times as many cases (default 1)."""

import contextlib
import importlib.util
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import xml.dom.minidom

# Hypothesis keeps its caches under the working directory unless told:
# not in the source tree.
STORE = tempfile.mkdtemp(prefix="krepro-fuzz-")
os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = STORE
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_contract  # noqa: E402
import test_untrusted as tu  # noqa: E402
sys.dont_write_bytecode = True  # the tree copy must not change, not even by Python

SCALE = float(os.environ.get("FUZZ_SCALE") or 1)
CONTRACT = {0, 1, 125, 128, 130}
CONTROLS = set(chr(c) for c in range(32) if c not in (9, 10)) | {"\x7f", "\u2028", "\u2029", "\u202e"}


class Hang(Exception):
    pass


class WouldRun(Exception):
    pass


def alarm(signum, frame):
    raise Hang()


def settings_for(n):
    return settings(max_examples=max(1, int(n * SCALE)), deadline=None, database=None, derandomize=True,
                    suppress_health_check=list(HealthCheck))


# --- what the cases are made of ---

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40) | st.sampled_from(
    ["", "x\ny", "\x1b[2J", "a|b", "r # SKIP", "```", "\u202e", "\x00", "x" * 5000, "../../x", "/etc/passwd"])
NUMBER = st.sampled_from(["0", "1", "2", "1_0", "\u0663", "\uff15", " 3", "-1", "1e-30", "1e-6", "0.5", "nan",
                          "inf", "0x10", "99999999999", "0.999999999", "1.5", "0_1", ""]) | TEXT
OPTIONS = ["--arch", "--kernel", "--tree", "--miss", "--confidence", "--max-runs", "--repeat", "--timeout",
           "-j", "--jobs", "--via", "--artifacts", "--accel", "--results", "--replace", "--expect",
           "--any-report", "--record-rates", "--keep", "--append", "--qemu-opts", "--gdb", "--vmlinux",
           "--list", "--report", "--version", "--help", "--kern", "--rep", "--classify", "--", "-"]
NAMES = ["xfs-nowait-dio", "XFS-NOWAIT-DIO", "bpf-percpu-reuse", "arm-kprobe-fortify", "no-such",
         "xfs-nowait-di0"]


def paths(u):
    return [u + "/good", u + "/terminal", u + "/json-fifo", u + "/log-fifo", u + "/dotdot-log",
            u + "/logs/console.fifo", u + "/logs/escapes.log", "/etc", "/dev/zero", "/dev/null",
            "/nonexistent/x", u + "/empty-results", u, "-"]


def argv_of(u):
    token = st.sampled_from(OPTIONS) | st.sampled_from(NAMES) | st.sampled_from(paths(u)) | NUMBER | \
        st.builds(lambda o, v: f"{o}={v}", st.sampled_from(OPTIONS), NUMBER | st.sampled_from(paths(u)))
    return st.lists(token, max_size=8)


def run_argv(u):
    """A run's argv that never boots: --dry-run, unless --report is in it."""
    def fix(tokens, at):
        if any(t == "--report" or t.startswith("--report=") for t in tokens):
            return tokens
        return tokens[:at] + ["--dry-run"] + tokens[at:]
    return st.builds(fix, argv_of(u), st.integers(0, 8))


def sub_argv(u):
    return st.one_of(
        st.builds(lambda a: ["report"] + a, argv_of(u)),
        st.builds(lambda a: ["classify"] + a, argv_of(u)),
        st.builds(lambda a: ["gate"] + a, argv_of(u)),
        st.builds(lambda a: ["help"] + a, argv_of(u)),
        st.builds(lambda a: ["run"] + a, run_argv(u)),
        st.builds(lambda a: a, argv_of(u)))


JSON_VALUE = st.recursive(
    st.none() | st.booleans() | st.integers(-10 ** 30, 10 ** 30) | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3), max_leaves=8)
KEYS = ["rows", "runs", "finished", "interrupted", "expect", "any_report", "mode", "cut_off", "prepare",
        "kernels", "arch", "started", "jobs", "via", "accel", "krepro"]
ITEM_KEYS = ["repro", "kernel", "decision", "cell", "counts", "runs", "role", "expected", "as_expected", "rate",
             "miss", "why", "fix_commit", "outcome", "run", "evidence", "log", "ktap", "report", "reports", "seconds",
             "lava_results", "lava_log", "signature", "decoded", "decode_error", "unbounded"]


def mutate(rec, where, key, value):
    """rec with one key of the record (where "top"), its row or its run set
    to value."""
    rec = json.loads(json.dumps(rec))
    items = rec.get(where) if where != "top" else None
    if where == "top":
        rec[key] = value
    elif isinstance(items, list) and items and isinstance(items[0], dict):
        items[0][key] = value
    return rec


MUTATION = st.lists(st.tuples(st.sampled_from(["top", "rows", "runs"]),
                              st.sampled_from(KEYS + ITEM_KEYS), JSON_VALUE), min_size=1, max_size=3)
LOG_LINE = st.sampled_from([
    b"[    1.000000] BUG: KASAN: use-after-free in f\n", b"[    1.1] Call Trace:\n", b" f+0x1/0x10\n",
    b"[    2.0] ------------[ cut here ]------------\n", b"[    2.1] WARNING: CPU: 0 PID: 1 at x.c:1 g+0x1/0x2\n",
    b"[    3.0] ---[ end trace 0000000000000000 ]---\n", b"krepro-init: started\n", b"Linux version 6.1.0\n",
    b"[    4.0] Kernel panic - not syncing: x\n", b"\x1b[2J\x07\r\n", b"\xff\xfe\x00", b"=" * 70 + b"\n",
    b"[    5.0] BUG: unable to handle page fault for address: 0\n", b"refcount_t: addition on 0; use-after-free.\n",
    b"x" * 70000 + b"\n",
    # the wrappings pasted.py joins or splits: a quote, a flowed break, #012, a fence, a journal field
    b"> [    1.2] BUG: KASAN: use-after-free in f\n", b"> a_long_quoted_word_that_goes_on\n",
    b"a plain line that ends in two blanks and is long enough to wrap  \n", b"> > x  \n",
    b"#012[    1.3] WARNING: x#011y\n", b"```text\n", b"    MESSAGE=BUG: x\n"]) | st.binary(max_size=200)


# --- running a case ---

def load_main(top):
    """python3 -m krepro's module, its functions loaded and nothing run."""
    spec = importlib.util.find_spec("krepro.__main__")
    mod = importlib.util.module_from_spec(spec)
    saved = sys.argv
    sys.argv = ["krepro", "--help"]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            spec.loader.exec_module(mod)
    except SystemExit:
        pass
    finally:
        sys.argv = saved
    return mod


class Harness:
    def __init__(self, main, u):
        self.main, self.u, self.problems, self.cases, self.would_run = main, u, [], 0, 0

    def call(self, fn, *args):
        """fn(*args) with stdout and stderr caught: (status, output)."""
        out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape", write_through=True)
        err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="surrogateescape", write_through=True)
        signal.alarm(10)
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                code = fn(*args)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 0 if e.code is None else 1
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGINT, signal.default_int_handler)
            signal.signal(signal.SIGPIPE, signal.SIG_IGN)
        text = out.buffer.getvalue().decode("utf-8", "replace") + err.buffer.getvalue().decode("utf-8", "replace")
        return code, text

    def judge(self, what, fn, *args, dirs=()):
        self.cases += 1
        try:
            code, text = self.call(fn, *args)
        except WouldRun:
            self.would_run += 1
            return
        except Hang:
            return self.fail(what, "hung (10 s)")
        except Exception as e:  # noqa: BLE001 - any exception is a traceback a user would see
            return self.fail(what, f"{type(e).__name__}: {e}"[:300])
        if code not in CONTRACT:
            return self.fail(what, f"exit {code}")
        bad = CONTROLS & set(text)
        if bad:
            return self.fail(what, f"control characters on the terminal: {sorted(bad)!r}")
        for d in dirs:
            why = self.outputs_ok(d)
            if why:
                return self.fail(what, why)

    def outputs_ok(self, d):
        """Why the reports written in d are wrong, or None."""
        for name in ("summary.md", "results.ktap", "junit.xml", "gate.md"):
            p = os.path.join(d, name)
            if not os.path.exists(p):
                continue
            with open(p, encoding="utf-8", errors="replace") as f:
                text = f.read()
            if CONTROLS & set(text):
                return f"a control character in {name}"
            if name == "results.ktap":
                lines = text.splitlines()
                if any(not l.startswith(("KTAP version", "1..", "# ", "ok ", "not ok ")) for l in lines):
                    return "a line of results.ktap KTAP cannot read"
                if len([l for l in lines if l.startswith(("ok ", "not ok "))]) != int(lines[1][3:]):
                    return "results.ktap's result lines do not match its plan"
            if name == "junit.xml":
                try:
                    xml.dom.minidom.parseString(text)
                except Exception as e:  # noqa: BLE001
                    return f"junit.xml does not parse: {e}"
        return None

    def fail(self, what, why):
        self.problems.append(f"{why}: {what!r}"[:400])


def fresh_dir(base, n):
    d = os.path.join(base, f"case-{n}")
    os.makedirs(os.path.join(d, "r.patched.1"))
    return d


def in_process(h, u, work):
    @settings_for(2000)
    @given(run_argv(u))
    def runs(argv):
        from krepro import cli
        h.judge(["run"] + argv, h.main.entry, ["run"] + argv)
        assert cli.run is refuse_run

    @settings_for(1000)
    @given(sub_argv(u))
    def subcommands(argv):
        h.judge(argv, h.main.entry, argv)

    counter = iter(range(10 ** 9))

    @settings_for(1500)
    @given(MUTATION, st.booleans())
    def records(mutations, gate):
        from krepro.results import gate as gatemod, render
        rec = tu.RECORD
        for where, key, value in mutations:
            rec = mutate(rec, where, key, value)
        d = fresh_dir(work, next(counter))
        try:
            with open(os.path.join(d, "run.json"), "w", encoding="utf-8", errors="surrogatepass") as f:
                json.dump(rec, f)
        except (TypeError, ValueError):
            return
        with open(os.path.join(d, "r.patched.1", "console.log"), "w") as f:
            f.write(tu.CONSOLE)
        if gate:
            h.judge(rec, gatemod.gate, d, "patched", "x", dirs=[d])
        else:
            h.judge(rec, render.render, d, None, dirs=[d])

    @settings_for(1000)
    @given(st.lists(LOG_LINE, max_size=30), st.booleans(), st.booleans())
    def logs(lines, as_json, in_report):
        from krepro.reports import classify
        # In a report's window every line is read whole (pasted.py, the title).
        lines = [b"[    0.9] BUG: KASAN: use-after-free in f\n"] + lines if in_report else lines
        p = os.path.join(work, "log")
        with open(p, "wb") as f:
            f.write(b"".join(lines))
        h.judge(b"".join(lines)[:200], classify.main, (["--json"] if as_json else []) + [p])

    for test in (runs, subcommands, records, logs):
        test()


def refuse_run(config):
    raise WouldRun()


def through_python(h, u, env, scratch):
    """A few hundred argv as a user gives them: python3 -m krepro, in a
    process of its own (the module's top, the exit status as the shell sees
    it)."""
    @settings_for(250)
    @given(sub_argv(u))
    def cases(argv):
        if argv[:1] == ["run"] and "--dry-run" not in argv:
            return
        h.cases += 1
        try:
            p = subprocess.run([sys.executable, "-m", "krepro"] + argv, env=env, cwd=scratch,
                               stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            return h.fail(argv, "hung (30 s)")
        except (ValueError, OSError):
            return    # an argument no process can be given (a NUL, too long)
        err = p.stderr.decode("utf-8", "replace")
        if p.returncode not in CONTRACT or "Traceback" in err:
            h.fail(argv, f"exit {p.returncode}: {err[-200:]}")
    cases()


def main():
    with tempfile.TemporaryDirectory() as scratch:
        top, cache, marks, env, subst = test_contract.setup(scratch)
        u = tu.make_inputs(subst["s"])
        work = os.path.join(scratch, "work")
        os.makedirs(work)
        skip = {os.path.join(u, n) for n in os.listdir(u)} | {os.path.join(u, "dry-run-report", "run")}
        before = tu.snapshot(scratch, skip | {work, cache})
        env = dict(env, KREPRO_NO_BUILD="1")
        os.environ.clear()
        os.environ.update(env)
        sys.path.insert(0, os.path.join(top, "scripts"))
        os.chdir(scratch)
        from krepro import cli
        from krepro.lava import lab as lava_lab
        cli.run = refuse_run
        lava_lab.check_lab = lambda ident: None    # no lab is asked anything
        sys.stdin = open(os.devnull)               # classify - reads nothing
        signal.signal(signal.SIGALRM, alarm)
        h = Harness(load_main(top), u)
        in_process(h, u, work)
        through_python(h, u, env, scratch)
        after = tu.snapshot(scratch, skip | {work, cache})
        changed = sorted(p for p in set(before) | set(after) if before.get(p) != after.get(p))
        if changed:
            h.fail("the whole run", f"files changed outside the run directories: {changed[:5]}")
        if os.listdir(marks) or os.path.exists(os.path.join(top, "build")):
            h.fail("the whole run", f"something was built or booted: {os.listdir(marks)}")
        os.chdir(HERE)
    for p in h.problems[:30]:
        print(f"not ok - {p}")
    print(f"{h.cases} cases ({h.would_run} would have run, refused), {len(h.problems)} failed")
    return 1 if h.problems or h.cases < 5000 else 0


if __name__ == "__main__":
    try:
        status = main()
    finally:
        shutil.rmtree(STORE, ignore_errors=True)
    sys.exit(status)
