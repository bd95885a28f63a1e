#!/usr/bin/env python3
"""How fast `python3 -m krepro classify` reads a big console log, and in how
much memory: writes console logs into /tmp made of krepro's own guest
console logs (tests/console/real-*.log), runs classify on each as a user
would (the reproducers' metadata already built), and prints per log its
size, the reports found, the wall seconds and the peak RSS of the classify
process. A benchmark: it asserts nothing.

usage: bench/classify-speed.py [--mib N] [--runs R] [--only NAME] [--against DIR] [--record NAME] [--keep]

The logs:
  sparse-N    N MiB (default 200) of a clean guest's console (a PASS run),
              with a failing guest's whole console (one to three reports)
              every MiB: the kind of log the classifier is for
  sparse-N/10 the same, a tenth the size: memory flat means the same peak
  dense-N     N MiB of failing guests' consoles end to end: a report every
              19 KiB, the worst case (every line is in some report's window)

--only sparse or dense makes and reads only those logs (dense: the case
classify must read in 10 s or less with flat memory). Each log is classified R times (default 2); the figures are the fastest
run's seconds and the largest peak RSS (other work on the machine slows a
run, never speeds it). The metadata is built before the clock starts
(KREPRO_NO_BUILD=1 in the runs): classify's own check that it is current
costs about a second more.
--against DIR classifies each log with DIR's classify too (another
checkout, e.g. `git worktree add --detach DIR COMMIT`, its metadata built),
the two in turn, R times each: NAME-before is DIR's figures, NAME this
checkout's, under the same load.
--record NAME writes bench/records/NAME.json (figures and the raw lines).
The logs are removed afterwards unless --keep.
"""
import datetime
import json
import os
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
import proof_records as records  # noqa: E402
CONSOLE = os.path.join(TOP, "tests", "console")
QUIET = ["real-xfs-nowait-dio-pass.log", "real-bpf-percpu-reuse-patched.log"]
FAILING = ["real-tcmu-uio-rmdir-unpatched.log", "real-can-j1939-echo-unpatched.log",
           "real-nvme-rdma-timeout-unpatched-kasan.log", "real-nvme-tcp-timeout-unpatched-bug.log"]


def read(name):
    with open(os.path.join(CONSOLE, name)) as f:
        return f.read()


def write_log(path, size, every):
    """size bytes of quiet consoles with a failing console every `every`
    bytes (every 0: failing consoles only)."""
    quiet = "".join(read(n) for n in QUIET)
    failing = [read(n) for n in FAILING]
    written, next_report, k = 0, every, 0
    with open(path, "w") as f:
        while written < size:
            if every == 0 or written >= next_report:
                chunk = failing[k % len(failing)]
                k += 1
                next_report += every
            else:
                chunk = quiet
            f.write(chunk)
            written += len(chunk)
    return written


def classify(path, top=TOP):
    # The metadata is built (main()): the clock is for reading the log.
    env = dict(os.environ, PYTHONPATH=os.path.join(top, "scripts"), KREPRO_NO_BUILD="1")
    with open(path + ".out", "w+") as out, open(path + ".err", "w+") as err:
        t = time.monotonic()
        p = subprocess.Popen([sys.executable, "-m", "krepro", "classify", "--json", path], env=env,
                             stdout=out, stderr=err)
        # wait4: this process's own rusage, its peak RSS (KiB) among it
        _, status, usage = os.wait4(p.pid, 0)
        seconds = time.monotonic() - t
        out.seek(0)
        reports = sum(1 for line in out if line.startswith("{"))
        err.seek(0)
        stderr = err.read().strip()[-300:]
    os.unlink(path + ".out")
    os.unlink(path + ".err")
    # CPU seconds too: on a shared machine the wall clock says how busy it was.
    cpu = usage.ru_utime + usage.ru_stime
    return {"exit": os.waitstatus_to_exitcode(status), "seconds": round(seconds, 1),
            "cpu_seconds": round(cpu, 1), "reports": reports,
            "peak_rss_mib": round(usage.ru_maxrss / 1024, 1), "stderr": stderr}


def summary(tries, written):
    """One log's figures from its runs: the fastest wall and CPU seconds,
    the largest peak RSS."""
    r = min(tries, key=lambda t: t["seconds"])
    return dict(r, peak_rss_mib=max(t["peak_rss_mib"] for t in tries),
                all_seconds=[t["seconds"] for t in tries], bytes=written,
                cpu_seconds=min(t["cpu_seconds"] for t in tries),
                all_cpu_seconds=[t["cpu_seconds"] for t in tries])


def report_line(name, r):
    line = (f"{name}: {r['bytes'] / (1 << 20):.0f} MiB, {r['reports']} reports, exit {r['exit']}, "
            f"{r['seconds']} s ({r['cpu_seconds']} s CPU), peak RSS {r['peak_rss_mib']} MiB")
    return line + (f"\n  stderr: {r['stderr']}" if r["stderr"] else "")


def main(argv):
    from krepro.options import Parser
    p = Parser(prog="bench/classify-speed.py", allow_abbrev=False)
    p.add_argument("--mib", type=int, default=200)
    p.add_argument("--runs", type=int, default=2)
    p.add_argument("--only", choices=("sparse", "dense"))
    p.add_argument("--against", metavar="DIR", help="another checkout to compare with")
    p.add_argument("--record")
    p.add_argument("--conditions", default="", help="what else the machine was doing")
    p.add_argument("--keep", action="store_true")
    o = p.parse_args(argv)
    # The metadata classify matches against, built before the clock starts.
    for top in [TOP] + ([o.against] if o.against else []):
        subprocess.run(["make", "-C", top, "-s", "--no-print-directory", "build"], check=True,
                       stdout=subprocess.DEVNULL)
    mib = 1 << 20
    logs = [(f"sparse-{o.mib // 10}", o.mib // 10 * mib, mib), (f"sparse-{o.mib}", o.mib * mib, mib),
            (f"dense-{o.mib}", o.mib * mib, 0)]
    logs = [x for x in logs if not o.only or x[0].startswith(o.only)]
    results, raw = {}, []
    for name, size, every in logs:
        path = f"/tmp/krepro-classify-{name}.log"
        written = write_log(path, size, every)
        tops = [(name + "-before", o.against), (name, TOP)] if o.against else [(name, TOP)]
        tries = {n: [] for n, _ in tops}
        for _ in range(max(1, o.runs)):
            for n, top in tops:
                tries[n].append(classify(path, top))
        for n, _ in tops:
            results[n] = summary(tries[n], written)
            line = report_line(n, results[n])
            print(line, flush=True)
            raw.append(line)
        if not o.keep:
            os.unlink(path)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average at the end: {load}")
    if o.record:
        commit, against = (subprocess.run(["git", "-C", top, "rev-parse", "--short=12", "HEAD"],
                                          capture_output=True, text=True).stdout.strip() or None
                           for top in (TOP, o.against or TOP))
        rec = {"date": datetime.date.today().isoformat(),
               "what": "python3 -m krepro classify --json on console logs made of krepro's own guest "
                       "consoles (bench/classify-speed.py): wall seconds and the classify process's "
                       "peak RSS",
               "machine": f"2 cores, 24 GiB, Debian 12; load average {load} at the end",
               "commit": commit,
               **({"against_commit": against} if o.against else {}),
               "conditions": f"{o.conditions + '; ' if o.conditions else ''}load average {load} at the end; "
                             "other work may have shared the cores",
               "command": "bench/classify-speed.py " + " ".join(records.portable(argv)),
               "figures": {f"{n}-seconds": f"{r['seconds']} s" for n, r in results.items()}
               | {f"{n}-cpu-seconds": f"{r['cpu_seconds']} s" for n, r in results.items()}
               | {f"{n}-rss": f"{r['peak_rss_mib']} MiB" for n, r in results.items()}
               | {f"{n}-reports": str(r["reports"]) for n, r in results.items()},
               "logs": {n: {k: v for k, v in r.items() if k != "stderr"}
                        for n, r in results.items()},
               "raw": "\n".join(raw)}
        path = os.path.join(TOP, "bench", "records", o.record + ".json")
        with open(path, "w") as f:
            json.dump(rec, f, indent=1)
            f.write("\n")
        print(f"wrote {os.path.relpath(path, TOP)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
