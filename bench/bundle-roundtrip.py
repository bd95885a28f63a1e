#!/usr/bin/env python3
"""Bundles made and run for real: for each reproducer (and its arch), on
both flavours, `python3 -m krepro bundle`, its tarball unpacked into an
empty directory, and its run.sh run there with a bare environment (env -i,
PATH=/usr/bin:/bin), holding krepro's guest slots as the runner does for a
guest that needs the host to itself (run.sh takes no lock). Each guest's logs are then read by krepro's own classifier
too (verdict.decide, as a row's guest is), which must agree with what
run.sh said.

usage: bench/bundle-roundtrip.py RECORD [REPRO:ARCH[:KERNEL=OUTCOME]...]
       (default: bpf-percpu-reuse:x86_64 arm-kprobe-fortify:arm)

REPRO:ARCH runs both flavours (unpatched must FAIL, patched PASS);
REPRO:ARCH:KERNEL=OUTCOME one kernel of --kernel's kinds (a distribution
kernel's .deb, say) that must give OUTCOME (PASS or FAIL).

Writes RECORD (bench/records/<date>-bundle-roundtrip.json): the commands,
outcomes, exit statuses, seconds and sizes, without this machine's paths.
Exit 0 when every unpatched bundle FAILs and every patched one PASSes."""
import datetime
import os
import subprocess
import sys
import tarfile
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import guest, meta as metamod, paths  # noqa: E402
import proof_records as records  # noqa: E402
from krepro.verdict import decide  # noqa: E402

EXPECT = {"unpatched": "FAIL", "patched": "PASS"}
EXIT = {"PASS": 0, "FAIL": 1}


def sh(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, **kw)


def one(repro, arch, flavour, expect, work, metas):
    made = os.path.join(work, "made")
    cmd = ["python3", "-m", "krepro", "bundle", "--arch", arch, "--kernel", os.path.basename(flavour),
           "--out", "BUNDLES", repro]
    t0 = time.monotonic()
    p = sh([sys.executable, "-m", "krepro", "bundle", "--arch", arch, "--kernel", flavour, "--out", made, repro],
           env=dict(os.environ, PYTHONPATH=os.path.join(TOP, "scripts")))
    make_s = round(time.monotonic() - t0, 1)
    if p.returncode:
        raise SystemExit(f"bundle-roundtrip: {' '.join(cmd)}: exit {p.returncode}\n{p.stderr}")
    tarball = next(ln.split()[1] for ln in p.stdout.splitlines() if ln.startswith("tarball: "))
    name = os.path.basename(tarball)[:-len(".tar.gz")]
    files = {}
    for ln in p.stdout.splitlines():
        if ln.startswith("  "):
            f = ln.split()[0]
            files[f] = os.path.getsize(os.path.join(made, name, f))
    # An empty directory of its own, as a maintainer's download would be.
    there = tempfile.mkdtemp(prefix="bundle-run.", dir="/tmp")
    with tarfile.open(tarball) as t:
        t.extractall(there)
    run_sh = os.path.join(there, name, "run.sh")
    with guest.flocked("machine.lock", False, "waiting for a kernel build to finish"):
        # Every slot, waiting in line as a guest that needs the host to
        # itself does: the seconds are the guest's alone.
        with guest.guest_slot(guest.default_jobs(), alone=True):
            t0 = time.monotonic()
            r = sh(["env", "-i", "PATH=/usr/bin:/bin", run_sh], cwd=there)
            run_s = round(time.monotonic() - t0, 1)
    out = os.path.join(there, name, "out")
    console, ktap = paths.read(os.path.join(out, "console.log")), paths.read(os.path.join(out, "ktap.txt"))
    v = decide(console, metas[repro], ktap, r.returncode == 3)
    last = r.stdout.strip().splitlines()[-1] if r.stdout.strip() else ""
    word = last.split(":", 1)[0]
    row = {
        "repro": repro, "arch": arch, "kernel": os.path.basename(flavour), "bundle": name + ".tar.gz",
        "bundle_bytes": os.path.getsize(tarball), "files": files, "make_seconds": make_s,
        "command": f"tar xzf {name}.tar.gz && env -i PATH=/usr/bin:/bin {name}/run.sh",
        "exit": r.returncode, "outcome": word, "seconds": run_s, "last_line": last.replace(there + "/", ""),
        "stdout": r.stdout.replace(there + "/", ""), "stderr": r.stderr.replace(there + "/", ""),
        "krepro_outcome": v["outcome"], "krepro_evidence": v["evidence"][:300],
        "expected": expect,
        "as_expected": (word, r.returncode) == (expect, EXIT[expect]) and v["outcome"] == expect,
    }
    print(f"{repro} {arch} {os.path.basename(flavour)}: {word} exit {r.returncode} in {run_s} s (krepro reads it as "
          f"{v['outcome']}); bundle {os.path.getsize(tarball)} bytes", flush=True)
    return row


def main(argv):
    if argv in (["--help"], ["-h"]):
        print(__doc__.strip())
        return 0
    if not argv or any(a.startswith("-") for a in argv):
        print("bundle-roundtrip.py: error: usage: bench/bundle-roundtrip.py RECORD "
              "[REPRO:ARCH[:KERNEL=OUTCOME]...] (--help for more)", file=sys.stderr)
        return 128
    record = argv[0]
    pairs = [a.split(":", 2) for a in argv[1:]] or [["bpf-percpu-reuse", "x86_64"], ["arm-kprobe-fortify", "arm"]]
    metamod.ensure_built()
    metas = metamod.load_all()
    rows = []
    with tempfile.TemporaryDirectory(prefix="bundle-roundtrip.") as work:
        for repro, arch, *kernel in pairs:
            runs = [k.rsplit("=", 1) for k in kernel] or EXPECT.items()
            for spec, expect in runs:
                rows.append(one(repro, arch, spec, expect, work, metas))
    with open("/proc/loadavg") as f:
        load = f.read().split()[:3]
    date = datetime.date.today().isoformat()
    figures = {}
    for r in rows:
        key = f"{r['repro']}-{r['kernel']}"
        figures[key] = f"{r['outcome']} exit {r['exit']} in {r['seconds']} s"
        figures[key + "-size"] = f"{r['bundle_bytes'] / 2**20:.1f} MiB"
    rec = {
        "date": date,
        "what": "krepro bundle round trip: each bundle made, unpacked into an empty directory, "
                "its run.sh run with env -i PATH=/usr/bin:/bin (QEMU TCG), one guest at a time "
                "in krepro's guest slot; krepro's classifier read each guest's logs too",
        "machine": "2 cores, 24 GiB, Debian 12, QEMU TCG",
        "commit": paths.git_commit(),
        "conditions": f"load average {' '.join(load)} at the end; other work may have shared the cores",
        "command": "bench/bundle-roundtrip.py RECORD " + " ".join(
            ":".join(p[:2] + [os.path.basename(k) for k in p[2:]]) for p in pairs),
        "figures": figures,
        "runs": rows,
        "raw": "each run's stdout and stderr are in runs[]",
    }
    records.write(record, rec)
    bad = [r for r in rows if not r["as_expected"]]
    print(f"{len(rows) - len(bad)}/{len(rows)} as expected; record: {record}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
