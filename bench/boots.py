#!/usr/bin/env python3
"""Boot a kernel N times with no reproducer and say how each boot went.

usage: bench/boots.py [--arch A] [--kernel unpatched|patched|PATH] [--append ARGS]
                      [--without WORD]... [--load TEXT] [--stop-at REGEX]
                      [--initrd IMAGE] [--runs N] [--record FILE] [--keep-logs DIR]

Each guest runs krepro's guest image with nothing to run: init reports
"krepro-init: started" with its uptime, then powers off. Per boot it notes
whether init was reached, the uptime at init (boot to init), the wall
seconds, and the title of any kernel report (classified as the runner does).
Prints a line a boot and a summary (boots, failures, boot-to-init median and
worst); --record writes the same as a JSON record for bench/records/. Asserts
nothing. --stop-at ends each guest early in its boot (an early-boot failure
series: hundreds of boots in minutes); --without and --load make a
before/after series (e.g. --without no_timer_check under bench/with-load.sh).
One guest at a time; never beside a kernel build.
"""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import arches, guest, kernels, paths  # noqa: E402
import proof_records as records  # noqa: E402
from krepro.reports.console import crashes  # noqa: E402
from krepro.options import Parser  # noqa: E402


RUN_INIT = re.compile(r"^\[ *([0-9.]+)\] Run /init as init process", re.M)
# x86: the IO-APIC timer probe (check_timer()) found too few ticks and took
# its fallback path, whose lines it prints even on a quiet console.
TIMER_FALLBACK = re.compile(r"MP-BIOS bug: 8254 timer not connected|trying to set up timer")


def one_boot(arch, image, initrd, append, without, logdir, stop_at=None):
    cmdline = " ".join(w for w in guest.kernel_cmdline(arch, "", append).split() if w not in without)
    argv = guest.qemu_argv(arch, "tcg", image, initrd, cmdline, guest.GUEST_CPUS, None)
    console_path = os.path.join(logdir, "console.log")

    def early_boot_seen():
        # Stopped once the console passed stop_at, unless the timer probe
        # fell back: then the boot goes on, to show where the fallback leads.
        text = paths.read(console_path)
        return "complete" if stop_at.search(text) and not TIMER_FALLBACK.search(text) else None

    res = guest.boot(argv, logdir, 120, answered=early_boot_seen if stop_at else None)
    with open(os.path.join(logdir, "console.log"), errors="replace") as f:
        console = f.read()
    up = guest.boot_seconds(console)
    found = list(crashes(console))
    # With --append loglevel=7 the console has the kernel's "Run /init"
    # line: what the init script takes before its first line is the rest.
    run_init = RUN_INIT.search(console)
    return {"init": up is not None, "uptime_at_init": up, "stopped_early": res.stopped_early,
            "timer_fallback": bool(TIMER_FALLBACK.search(console)),
            "init_script": round(up - float(run_init.group(1)), 3) if up is not None and run_init else None,
            "seconds": res.seconds, "qemu_status": res.status, "timed_out": res.timed_out,
            "report": found[0]["title"] if found else None}


def summarize(o, argv, image, initrd, boots):
    ups = [b["uptime_at_init"] for b in boots if b["init"]]
    # A boot stopped on purpose (--stop-at) did not fail by not reaching init.
    failed = [b for b in boots if not (b["init"] or b["stopped_early"]) or b["report"]]
    scripts = [b["init_script"] for b in boots if b["init_script"] is not None]
    return {
        "date": datetime.date.today().isoformat(), "what": "boots to init, no reproducer",
        "machine": f"{os.cpu_count()} cores, {platform.machine()}, QEMU TCG",
        "commit": paths.git_commit(), "arch": o.arch, "kernel": o.kernel,
        "build": kernels.read_stamp(image), "append": o.append, "without": o.without,
        "load": o.load, "stop_at": o.stop_at.pattern if o.stop_at else None,
        "initrd": os.path.relpath(initrd, TOP) if initrd.startswith(TOP) else os.path.basename(initrd),
        "boots": len(boots),
        "failed_boots": len(failed),
        "timer_fallbacks": sum(b["timer_fallback"] for b in boots),
        "failures": sorted({b["report"] or "no init" for b in failed}),
        "uptime_at_init_median": round(statistics.median(ups), 2) if ups else None,
        "uptime_at_init_max": max(ups) if ups else None,
        "init_script_median": round(statistics.median(scripts), 3) if scripts else None,
        "wall_median": round(statistics.median(b["seconds"] for b in boots), 2) if boots else None,
        "uptimes_at_init": [b["uptime_at_init"] for b in boots],
        "raw": "bench/boots.py " + " ".join(argv),
    }


def regex(text):
    try:
        return re.compile(text)
    except re.error as e:
        raise argparse.ArgumentTypeError(f"not a regular expression ({e})")


def count(text):
    if not text.isdigit() or not 1 <= int(text) <= 10000:
        raise argparse.ArgumentTypeError(f"wants a whole number from 1 to 10000, not '{text}'")
    return int(text)


def main(argv):
    p = Parser(prog="bench/boots.py", allow_abbrev=False)
    p.add_argument("--arch", default="x86_64", choices=sorted(arches.ARCHES))
    p.add_argument("--kernel", default="unpatched")
    p.add_argument("--append", default="")
    p.add_argument("--without", action="append", default=[],
                   help="leave this word out of krepro's own kernel command line (a before/after series)")
    p.add_argument("--load", default="none",
                   help="what ran beside the guests, for the record (e.g. 'bench/with-load.sh 2')")
    p.add_argument("--runs", type=count, default=20)
    p.add_argument("--record")
    p.add_argument("--keep-logs")
    p.add_argument("--stop-at", type=regex,
                   help="stop each guest once its console has a line matching this regex (an "
                        "early-boot series), unless the timer probe fell back")
    p.add_argument("--initrd", help="the guest image (default: the whole one, every reproducer)")
    o = p.parse_args(argv)
    image = kernels.flavour_image(o.arch, o.kernel) if o.kernel in kernels.FLAVOURS else o.kernel
    sub = "" if o.arch == "x86_64" else o.arch
    initrd = o.initrd or os.path.join(TOP, "build", sub, "guest", "initramfs.cpio")
    for f in (image, initrd):
        if not os.path.isfile(f):
            print(f"boots.py: no {f} (make kernels guest)", file=sys.stderr)
            return 128
    work = tempfile.mkdtemp(prefix="krepro-boots.")
    boots = []
    try:
        for i in range(1, o.runs + 1):
            d = os.path.join(work, str(i))
            os.makedirs(d)
            b = one_boot(o.arch, image, initrd, o.append, o.without, d, o.stop_at)
            boots.append(b)
            print(f"boot {i:>3}: {'init' if b['init'] else 'stopped' if b['stopped_early'] else 'NO INIT'} "
                  f"{b['uptime_at_init'] if b['init'] else '-':>6} s uptime, {b['seconds']:5.1f} s wall"
                  + (", timer fallback" if b["timer_fallback"] else "")
                  + (f", report: {b['report']}" if b["report"] else ""), flush=True)
            if o.keep_logs and (not (b["init"] or b["stopped_early"]) or b["report"] or b["timer_fallback"]):
                os.makedirs(o.keep_logs, exist_ok=True)
                shutil.copy(os.path.join(d, "console.log"), os.path.join(o.keep_logs, f"boot-{i}.log"))
            shutil.rmtree(d)
            if o.record:
                records.write(o.record, summarize(o, argv, image, initrd, boots))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    summary = summarize(o, argv, image, initrd, boots)
    print(json.dumps(summary, indent=1))
    if o.record:
        records.write(o.record, summary)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
