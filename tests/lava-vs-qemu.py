#!/usr/bin/env python3
"""The same reproducers on the same kernels, once directly in QEMU and once
as LAVA jobs through lava-run: prints one table row per (reproducer,
kernel) with both outcomes and both wall times, and exits 1 when an outcome
differs (2 when a run could not be made).

  tests/lava-vs-qemu.py [--arch A] [--runs N] [--results DIR] [repro...]

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


def run(arch, via, repros, results, runs):
    t0 = time.monotonic()
    argv = [RUN, "--arch", arch, "--via", via, "--repeat", str(runs), "--kernel", "unpatched",
            "--kernel", "patched", "--results", results] + repros
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
                "seconds": statistics.median(r["seconds"] for r in v)} for k, v in rows.items()}, wall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--arch", default="x86_64")
    ap.add_argument("--results", default=os.path.join(TOP, "results", "lava-vs-qemu-"
                                                      + time.strftime("%Y%m%d-%H%M%S")))
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("repros", nargs="*")
    o = ap.parse_args()
    repros = o.repros or subprocess.run([RUN, "--arch", o.arch, "--list"], capture_output=True,
                                        text=True, check=True).stdout.split()
    direct, wall_d = run(o.arch, "qemu", repros, os.path.join(o.results, f"{o.arch}-qemu"), o.runs)
    lava, wall_l = run(o.arch, "lava-run", repros, os.path.join(o.results, f"{o.arch}-lava-run"), o.runs)
    each = "one run each" if o.runs == 1 else f"{o.runs} runs each, median seconds"
    print(f"\n{o.arch}: the same guest directly in QEMU and as a LAVA job (lava-run), {each}")
    print(f"{'reproducer':<20} {'kernel':<10} {'qemu':<7} {'s':>6}   {'lava-run':<8} {'s':>6}  "
          f"{'ratio':>5}  same")
    differ, ratios = 0, []
    for r in repros:
        for k in ("unpatched", "patched"):
            d, la = direct.get((r, k)), lava.get((r, k))
            if not d or not la:
                print(f"{r:<20} {k:<10} (no run: {'qemu' if not d else 'lava-run'})")
                differ += 1
                continue
            same = d["outcome"] == la["outcome"]
            differ += not same
            ratio = la["seconds"] / d["seconds"] if d["seconds"] else float("nan")
            ratios.append(ratio)
            print(f"{r:<20} {k:<10} {d['outcome']:<7} {d['seconds']:6.1f}   {la['outcome']:<8} "
                  f"{la['seconds']:6.1f}  {ratio:5.2f}  {'yes' if same else 'NO'}")
    n = len(repros) * 2
    print(f"{n - differ}/{n} rows agree; lava-run/qemu per guest: median {statistics.median(ratios):.2f}, "
          f"range {min(ratios):.2f}-{max(ratios):.2f}; whole runs {wall_d:.0f} s direct, {wall_l:.0f} s "
          f"through lava-run (builds and disk preparation included in the first)")
    print(f"runs: {o.results}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
