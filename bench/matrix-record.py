#!/usr/bin/env python3
"""Summarise matrix runs, and keep them as a bench record.

usage: bench/matrix-record.py [--record FILE] [--what TEXT] LABEL=RESULTS_DIR...

Each RESULTS_DIR is a finished run-in-qemu.sh run (its run.json). Per run:
wall time (run.json's start to finish), guests, guest seconds, boot to init
(median and worst over its guests), rows as expected, and each row's guests
and cell; with two runs of one arch, the first's wall time over the second's. --record
writes the same as a JSON record for bench/records/ (kind "matrix"): the
machine, the krepro commit, the kernel builds, every guest's boot and total
seconds, every row's guests. docs/performance.md's matrix table is made from
such records (bench/perf-tables.py). Asserts nothing.
"""
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import guest  # noqa: E402
import proof_records as records  # noqa: E402
from krepro.paths import read  # noqa: E402
from krepro.options import Parser  # noqa: E402


def when(stamp):
    return datetime.datetime.fromisoformat(stamp)


def machine():
    mem = next((int(l.split()[1]) // 1024 for l in read("/proc/meminfo").splitlines()
                if l.startswith("MemTotal:")), None)
    qemu = subprocess.run(["qemu-system-x86_64", "--version"], capture_output=True, text=True)
    return {"cores": os.cpu_count(), "memory_mib": mem, "arch": platform.machine(),
            "qemu": (qemu.stdout.splitlines() or ["?"])[0], "os": platform.platform()}


def one(label, d):
    rec = json.load(open(os.path.join(d, "run.json")))
    guests = []
    for r in rec["runs"]:
        boot = r.get("boot")
        if boot is None and r.get("log"):
            boot = guest.boot_seconds(read(os.path.join(d, r["log"])))
        guests.append({"repro": r["repro"], "kernel": r["kernel"], "run": r["run"],
                       "outcome": r["outcome"], "seconds": r.get("seconds"), "boot": boot,
                       "stopped_early": bool(r.get("stopped_early")),
                       "window_hits": records.hits_kept(r)})
    boots = [g["boot"] for g in guests if g["boot"] is not None]
    wall = (when(rec["finished"]) - when(rec["started"])).total_seconds() if rec.get("finished") else None
    return {"label": label, "command": records.portable(rec.get("command") or []), "arch": rec.get("arch"), "mode": rec.get("mode"),
            "krepro": rec.get("krepro"), "accel": rec.get("accel"),
            "builds": {k["label"]: (k.get("build") or "")[:12] for k in rec["kernels"]},
            "wall": round(wall) if wall is not None else None, "guest_count": len(guests),
            "guest_seconds": round(sum(g["seconds"] or 0 for g in guests)),
            "boot_median": round(statistics.median(boots), 2) if boots else None,
            "boot_max": max(boots) if boots else None, "boots": len(boots),
            "rows_as_expected": f"{sum(1 for r in rec['rows'] if r.get('as_expected'))}/{len(rec['rows'])}",
            "rows": [{"repro": r["repro"], "kernel": r["kernel"], "guests": r["runs"], "cell": r.get("cell")}
                     for r in rec["rows"]],
            "guests": guests}


def minutes(s):
    return "?" if s is None else f"{int(s) // 60}m{int(s) % 60:02d}s"


def show(runs):
    print(f"{'run':<14} {'wall':>7} {'guests':>6} {'guest s':>7} {'boot median/max':>16}  rows as expected")
    for r in runs:
        boot = f"{r['boot_median']}/{r['boot_max']} s" if r["boots"] else "unknown"
        print(f"{r['label']:<14} {minutes(r['wall']):>7} {r['guest_count']:>6} {r['guest_seconds']:>7} "
              f"{boot:>16}  {r['rows_as_expected']}")
        for row in r["rows"]:
            print(f"    {row['repro']:<20} {row['kernel']:<10} {row['guests']:>3} guests  {row['cell']}")


def main():
    p = Parser(prog="bench/matrix-record.py", description=__doc__.splitlines()[0], allow_abbrev=False)
    p.add_argument("--record")
    p.add_argument("--what", default="the matrix, warm kernels")
    p.add_argument("runs", nargs="+", metavar="LABEL=RESULTS_DIR")
    o = p.parse_args()
    runs = []
    for spec in o.runs:
        label, sep, d = spec.partition("=")
        if not sep:
            p.error(f"{spec}: want LABEL=RESULTS_DIR")
        runs.append(one(label, d))
    show(runs)
    ratio = None
    if len(runs) == 2 and runs[0]["arch"] == runs[1]["arch"] and runs[0]["wall"] and runs[1]["wall"]:
        ratio = round(runs[0]["wall"] / runs[1]["wall"], 2)
        print(f"{runs[0]['label']} / {runs[1]['label']} wall time: {ratio:.2f}")
    if o.record:
        out = {"date": datetime.date.today().isoformat(), "kind": "matrix", "what": o.what,
               "machine": machine(), "runs": runs, "ratio": ratio,
               # Without this machine's paths: the results directories are named by label.
               "raw": "bench/matrix-record.py " + " ".join(f"{r['label']}=RESULTS" for r in runs)}
        records.write(o.record, out)
        print(f"record: {o.record}")


if __name__ == "__main__":
    main()
