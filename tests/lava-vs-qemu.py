#!/usr/bin/env python3
"""The same reproducers on the same kernels, once directly in QEMU and once
as LAVA jobs (through lava-run, or a lab's with --via lava:ID): prints one
table row per (reproducer, kernel) with both outcomes and both wall times,
and exits 1 when an outcome differs (2 when a run could not be made).

  tests/lava-vs-qemu.py [--arch A] [--runs N] [--results DIR]
                        [--via lava:ID --artifacts DIR=URL] [repro...]

Through a lab it also gives the lab's overhead per job, from LAVA's own
times (run.json's lava_times): submission to the job's start on the worker,
and to the guest's first console line.

Without reproducers: every matrix reproducer of the arch (run-in-qemu.sh
--list). Each side runs --repeat N (default 1) on unpatched and patched, so
a row's outcomes should be FAIL and PASS on both sides; with N > 1 the
times are medians.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN = os.path.join(TOP, "run-in-qemu.sh")


def run(arch, via, repros, results, runs, artifacts=None):
    t0 = time.monotonic()
    argv = [RUN, "--arch", arch, "--via", via, "--repeat", str(runs), "--kernel", "unpatched",
            "--kernel", "patched", "--results", results] + (["--artifacts", artifacts] if artifacts else []) + repros
    print(f"$ {' '.join(argv[1:])}", file=sys.stderr, flush=True)
    p = subprocess.run(argv)
    wall = time.monotonic() - t0
    path = os.path.join(results, "run.json")
    if p.returncode >= 125 and not os.path.exists(path):
        sys.exit(f"lava-vs-qemu: run-in-qemu.sh --via {via} exited {p.returncode} with no run.json")
    with open(path) as f:
        rec = json.load(f)
    rows = {}
    for r in rec["runs"]:
        rows.setdefault((r["repro"], r["kernel"]), []).append(r)
    return {k: {"outcome": "/".join(sorted({r["outcome"] for r in v})),
                "seconds": statistics.median(r["seconds"] for r in v),
                "lab": [r["lava_times"] for r in v if r.get("lava_times")]} for k, v in rows.items()}, wall


def overhead(rows):
    """The lab's overhead line, from every job's LAVA times; None without.
    A lab job on this machine may wait for krepro's guest slot (another
    guest running): that wait is this machine's, and is taken out."""
    times = [t for row in rows.values() for t in row["lab"]]
    console = [t["to_console"] - (t.get("lock_wait") or 0) for t in times if t.get("to_console") is not None]
    queue = [t["queue"] for t in times if t.get("queue") is not None]
    waits = [t.get("lock_wait") or 0 for t in times]
    if not console:
        return None
    return (f"lab overhead per job ({len(times)} jobs), submit to the guest's first console line: "
            f"median {statistics.median(console):.1f} s, range {min(console):.1f}-{max(console):.1f} s; "
            f"of it the queue (submit to start): median {statistics.median(queue):.1f} s; "
            f"waits for this machine's guest slot taken out: {sum(waits):.1f} s in all")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="x86_64")
    ap.add_argument("--results", default=os.path.join(TOP, "results", "lava-vs-qemu-"
                                                      + time.strftime("%Y%m%d-%H%M%S")))
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--via", default="lava-run", help="lava-run (default) or lava:ID")
    ap.add_argument("--artifacts", help="DIR=URL, with --via lava:ID")
    ap.add_argument("repros", nargs="*")
    o = ap.parse_args()
    repros = o.repros or subprocess.run([RUN, "--arch", o.arch, "--list"], capture_output=True,
                                        text=True, check=True).stdout.split()
    direct, wall_d = run(o.arch, "qemu", repros, os.path.join(o.results, f"{o.arch}-qemu"), o.runs)
    side = "lava-run" if o.via == "lava-run" else "lab"
    lava, wall_l = run(o.arch, o.via, repros, os.path.join(o.results, f"{o.arch}-{side}"), o.runs,
                       o.artifacts)
    each = "one run each" if o.runs == 1 else f"{o.runs} runs each, median seconds"
    print(f"\n{o.arch}: the same guest directly in QEMU and as a LAVA job ({o.via}), {each}")
    print(f"{'reproducer':<20} {'kernel':<10} {'qemu':<7} {'s':>6}   {side:<8} {'s':>6}  "
          f"{'ratio':>5}  same")
    differ, ratios = 0, []
    for r in repros:
        for k in ("unpatched", "patched"):
            d, la = direct.get((r, k)), lava.get((r, k))
            if not d or not la:
                print(f"{r:<20} {k:<10} (no run: {'qemu' if not d else side})")
                differ += 1
                continue
            same = d["outcome"] == la["outcome"]
            differ += not same
            ratio = la["seconds"] / d["seconds"] if d["seconds"] else float("nan")
            ratios.append(ratio)
            print(f"{r:<20} {k:<10} {d['outcome']:<7} {d['seconds']:6.1f}   {la['outcome']:<8} "
                  f"{la['seconds']:6.1f}  {ratio:5.2f}  {'yes' if same else 'NO'}")
    n = len(repros) * 2
    if ratios:
        print(f"{n - differ}/{n} rows agree; {side}/qemu per guest: median {statistics.median(ratios):.2f}, "
              f"range {min(ratios):.2f}-{max(ratios):.2f}; whole runs {wall_d:.0f} s direct, {wall_l:.0f} s "
              f"through {side} (builds and disk preparation included in the first)")
    if overhead(lava):
        print(overhead(lava))
    print(f"runs: {o.results}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
