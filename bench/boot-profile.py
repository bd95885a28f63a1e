#!/usr/bin/env python3
"""Where a guest's boot spends its time, by sampling the guest's instruction
pointer: a profile that initcall_debug cannot give (time outside initcalls,
time before the console's clock runs, a CPU busy in a leaf function).

usage: bench/boot-profile.py [--arch A] [--kernel unpatched|patched|PATH]
                             [--initrd IMAGE] [--cpu MODEL] [--append ARGS]
                             [--every SECONDS] [--record FILE]

Boots one guest with no reproducer and QEMU's monitor on a socket, and asks
the monitor for every vCPU's registers every --every seconds (default 0.005)
until init starts. Each sample's RIP is named from the kernel's vmlinux
(beside the image, as krepro's builds keep it). For a sample in a memset or
memcpy (leaf functions without a frame), the return addresses found on its
stack name the caller. Prints the functions with the most samples, over the
whole boot and per quarter second of wall time, and the guest's boot to
init. --cpu replaces the arch's QEMU -cpu (a before/after series). x86_64
only: the register dump's names are x86's. Runs in the guest slots like any
guest, alone. A benchmark: it asserts nothing, and samples are not time
(a vCPU stopped for the monitor is not running).
"""
import argparse
import bisect
import collections
import datetime
import os
import platform
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import arches, guest, kernels, paths  # noqa: E402
import proof_records as records  # noqa: E402
from krepro.options import Parser  # noqa: E402

LEAVES = re.compile(r"^(memset|memcpy|memmove|clear_page|copy_page)")
KERNEL_TEXT = re.compile(r"0x(ffffffff8[0-9a-f]{7})\b")


class Symbols:
    def __init__(self, vmlinux):
        out = subprocess.run(["nm", "-n", vmlinux], capture_output=True, text=True,
                             check=True).stdout
        rows = [line.split() for line in out.splitlines()]
        rows = [(int(r[0], 16), r[2]) for r in rows if len(r) == 3 and r[1] in "tTwW"]
        self.addrs = [a for a, _ in rows]
        self.names = [n for _, n in rows]

    def name(self, pc):
        i = bisect.bisect_right(self.addrs, pc) - 1
        return self.names[i] if i >= 0 and pc >= self.addrs[0] else "(not kernel text)"


class Monitor:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.settimeout(5)
        self.sock.connect(path)
        self.ask("")

    def ask(self, command):
        self.sock.sendall((command + "\n").encode())
        buf = b""
        while not buf.endswith(b"(qemu) "):
            chunk = self.sock.recv(65536)
            if not chunk:
                raise EOFError("QEMU closed its monitor")
            buf += chunk
        return buf.decode(errors="replace")


def sample(mon, syms):
    """One sample a vCPU: its function, with a leaf function's callers."""
    names = []
    for cpu, regs in enumerate(mon.ask("info registers -a").split("RAX=")[1:]):
        rip = re.search(r"RIP=([0-9a-f]+)", regs)
        rsp = re.search(r"RSP=([0-9a-f]+)", regs)
        if not rip:
            continue
        name = syms.name(int(rip.group(1), 16))
        if LEAVES.match(name) and rsp:
            mon.ask(f"cpu {cpu}")
            words = KERNEL_TEXT.findall(mon.ask(f"x/8gx 0x{rsp.group(1)}"))
            callers = [syms.name(int(w, 16)) for w in words[:2]]
            name = " < ".join([name] + callers)
        names.append(name)
    return names


def profile(o, image, initrd, syms, work):
    mon_path = os.path.join(work, "monitor")
    console = os.path.join(work, "console.log")
    argv = guest.qemu_argv(o.arch, "tcg", image, initrd, guest.kernel_cmdline(o.arch, "", o.append),
                           guest.GUEST_CPUS, None)
    if o.cpu:
        argv[argv.index("-cpu") + 1] = o.cpu
    argv += ["-monitor", f"unix:{mon_path},server,nowait",
             "-chardev", f"file,id=con,path={console}", "-serial", "chardev:con"]
    samples = []
    with guest.guest_slot(1, alone=True):
        qemu = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            t0 = time.monotonic()
            while not os.path.exists(mon_path) and qemu.poll() is None:
                time.sleep(0.01)
            mon = Monitor(mon_path)
            while qemu.poll() is None and time.monotonic() - t0 < 60:
                if guest.boot_seconds(paths.read(console)) is not None:
                    break
                try:
                    names = sample(mon, syms)
                except (OSError, EOFError):
                    break
                samples.append((time.monotonic() - t0, names))
                time.sleep(o.every)
        finally:
            qemu.kill()
            qemu.wait()
    return samples, guest.boot_seconds(paths.read(console))


def summarize(samples, top=12):
    every = collections.Counter(n for _, names in samples for n in names)
    total = sum(every.values())
    phases = []
    for k in range(int(samples[-1][0] / 0.25) + 1 if samples else 0):
        c = collections.Counter(n for t, names in samples if k * 0.25 <= t < (k + 1) * 0.25
                                for n in names)
        phases.append({"from": k * 0.25, "top": c.most_common(4)})
    return {"samples": total,
            "top": [{"function": n, "samples": c, "share": round(c / total, 3)}
                    for n, c in every.most_common(top)],
            "phases": phases}


def busiest(s):
    """The function with the most samples that is work: not a CPU idling,
    not outside the kernel (firmware, the decompressor, user space)."""
    work = [r for r in s["top"] if "idle" not in r["function"] and not r["function"].startswith("(")]
    return f"{work[0]['function']} {work[0]['share']:.1%}" if work else None


def figures(s, up):
    return {"boot to init": f"{up} s", "samples": s["samples"], "busiest function": busiest(s)}


def interval(text):
    """--every: seconds between samples, more than 0 and at most 1."""
    try:
        v = float(text)
    except ValueError:
        v = None
    if v is None or not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"wants seconds above 0 and at most 1, not '{text}'")
    return v


def main(argv):
    p = Parser(prog="bench/boot-profile.py", allow_abbrev=False)
    p.add_argument("--arch", default="x86_64", choices=["x86_64"])
    p.add_argument("--kernel", default="unpatched")
    p.add_argument("--initrd", help="the guest image (default: the whole one)")
    p.add_argument("--cpu", help="QEMU -cpu instead of the arch's")
    p.add_argument("--append", default="")
    p.add_argument("--every", type=interval, default=0.005)
    p.add_argument("--record")
    o = p.parse_args(argv)
    image = kernels.flavour_image(o.arch, o.kernel) if o.kernel in kernels.FLAVOURS else o.kernel
    initrd = o.initrd or os.path.join(TOP, "build", "guest", "initramfs.cpio")
    for f in (image, image + ".vmlinux", initrd):
        if not os.path.isfile(f):
            print(f"boot-profile.py: no {f} (make kernels guest)", file=sys.stderr)
            return 128
    try:
        syms = Symbols(image + ".vmlinux")
    except (OSError, subprocess.CalledProcessError) as e:
        print(f"boot-profile.py: cannot read the symbols of {image}.vmlinux ({e})", file=sys.stderr)
        return 128
    if not syms.addrs:
        print(f"boot-profile.py: {image}.vmlinux has no symbols", file=sys.stderr)
        return 128
    work = tempfile.mkdtemp(prefix="krepro-boot-profile.")
    try:
        samples, up = profile(o, image, initrd, syms, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    s = summarize(samples)
    for row in s["top"]:
        print(f"{row['samples']:6} {row['share']:6.1%}  {row['function']}")
    for ph in s["phases"]:
        print(f"{ph['from']:5.2f} s  " + ", ".join(f"{n} {c}" for n, c in ph["top"]))
    print(f"boot to init {up} s, {s['samples']} samples")
    if o.record:
        rec = {"date": datetime.date.today().isoformat(),
               "what": "where an x86_64 boot spends its time: the guest's instruction pointer sampled "
                       "through QEMU's monitor until init",
               "machine": f"{os.cpu_count()} cores, {platform.machine()}, QEMU TCG",
               "commit": paths.git_commit(), "build": kernels.read_stamp(image),
               "cpu": o.cpu or arches.ARCHES[o.arch]["cpu"], "initrd": os.path.basename(initrd),
               "figures": figures(s, up),
               "profile": s, "raw": "bench/boot-profile.py " + " ".join(argv)}
        records.write(o.record, rec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
