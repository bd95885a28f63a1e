"""The run: kernels and guest image ready, disks prepared, the rows decided
(scheduler.py), and run.json written as every guest ends."""
import datetime
import json
import os
import signal
import subprocess
import sys

from . import disks
from .distro import kernel as distro_kernel
from . import guest, rates
from .results import render
from .dispatch import Dispatcher
from .log import log
from .kernels import Kernel, Undecidable, check_kconfig, prepare_kernels, unpatched_build
from .paths import TOP, build, git_commit
from .protocol import INTERRUPTED, UNDECIDED, USAGE
from .scheduler import Scheduler
from .untrusted import no_build, write_whole


class RunRecord:
    """run.json: what ran and how each guest and row ended, rewritten whole
    (atomically) after every guest, so an interrupted run keeps what
    finished."""

    def __init__(self, config, accel):
        self.config = config
        self.path = os.path.join(config.results, "run.json")
        self.data = {
            "format": 1, "command": sys.argv[1:], "arch": config.arch, "accel": accel,
            "branch": config.branch,
            "started": now(), "finished": None, "interrupted": False, "krepro": git_commit(),
            "mode": config.mode(), "expect": config.expect, "any_report": config.any_report,
            "jobs": config.jobs, "via": config.via,
            "kernels": [], "runs": [], "rows": [], "prepare": [], "infra_boots": 0,
        }

    def save(self):
        # --replace may reuse a directory someone handed over: never
        # written through a link it holds.
        write_whole(self.path, json.dumps(self.data, indent=1))
        self.record_rates()

    def record_rates(self, bug_row=None):
        """The one place FAIL rates are recorded. A decided bug row (repro,
        branch, fails, trials) is folded into the cache copy of its branch's
        record; else, with --record-rates, the run's unpatched rows become
        the committed records, after every guest, so a calibration cut short
        keeps what it measured."""
        c = self.config
        if bug_row is not None:
            repro, branch, fails, trials = bug_row
            rates.add_runs(repro, c.arch, branch, unpatched_build(c.arch, branch), fails, trials,
                           self.data["accel"])
        elif c.record_rates and self.data["runs"]:
            rates.record_run(c.results, c.arch, c.branch, c.repros,
                             unpatched_build(c.arch, c.branch), c.repeat, self.data)


def now():
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def build_guest(arch):
    sub = "" if arch == "x86_64" else arch
    image = os.path.join(build(), sub, "guest", "initramfs.cpio")
    if no_build():
        if not os.path.isfile(image):
            raise RuntimeError(f"KREPRO_NO_BUILD=1 and there is no guest image {image}")
        return image
    target = "guest" if arch == "x86_64" else f"guest-{arch}"
    p = subprocess.run(["make", "-C", TOP, "--no-print-directory", "-s", f"BUILD={build()}", target],
                       capture_output=True, text=True)
    out = (p.stdout or "") + (p.stderr or "")
    if p.returncode:
        sys.stderr.write(out)
        raise RuntimeError("building the reproducers or the guest image failed (output above)")
    for line in out.splitlines():
        if "guest image:" in line:
            print(line, file=sys.stderr)
    return image


def interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def pick_accel(config, kernel, initrd):
    if config.arch != "x86_64":
        return "tcg"
    if config.accel == "auto":
        return "kvm" if guest.kvm_works(kernel.image, initrd) else "tcg"
    return config.accel


def main_run(config, metas):
    """run-in-qemu.sh's work after its arguments were checked."""
    # Ctrl-C, and a kill or hangup too, end the run the same way: the guest
    # is stopped, run.json keeps what finished, the locks go with the process.
    # (A shell's background job starts with SIGINT ignored: take it back.)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)
    # Builds before the machine lock: kernels.sh takes it exclusively. A
    # prepared disk is written by the patched kernel, so that one too.
    extra = (Kernel("patched", config.arch, config.branch),) \
        if any(metas[r].prepare for r in config.repros) else ()
    if not prepare_kernels(config.kernels + extra):
        return UNDECIDED
    # Shared between invocations, never with a kernel build (kernels.sh takes
    # it exclusively): guests stall beside a build.
    with guest.flocked("machine.lock", False, "waiting for a kernel build to finish"):
        try:
            initrd = config.initrd or build_guest(config.arch)
        except RuntimeError as e:
            log(f"error: {e}")
            return USAGE
        for k in config.kernels:
            if k.distro_root:
                try:
                    k.guest_image(initrd, config.repros, metas)
                except (distro_kernel.DistroError, Undecidable) as e:
                    log(f"{k.label}: {e}")
                    return UNDECIDED
            if not k.flavour:
                check_kconfig(k, config.repros, metas)
        code = decide_rows(config, metas, initrd)
    return code if code is not None else render.render(config.results, any_report=config.any_report)


def decide_rows(config, metas, initrd):
    """Disks, then every row; None when the run ended by itself, else its
    exit status."""
    accel = pick_accel(config, config.kernels[0], initrd)
    os.makedirs(config.results, exist_ok=True)
    record = RunRecord(config, accel)
    log(f"accelerator: {accel}; results: {config.results}")
    disk, prep_errors = {}, {}
    for r in config.repros:
        disk[r], err = disks.prepare(config, accel, initrd, metas[r], record.data["prepare"])
        if err:
            prep_errors[r] = err
            log(f"{r}: {err}")
    guests = Dispatcher(config, accel, initrd)
    record.data["kernels"] = [k.record() for k in config.kernels]
    record.save()
    try:
        Scheduler(config, metas, record, lambda pr, n, rundir: guests.run(
            pr.kernel, metas[pr.repro], n, rundir, disk.get(pr.repro),
            prep_errors.get(pr.repro))).execute()
    except KeyboardInterrupt:
        record.data["interrupted"] = True
        record.save()
        log(f"interrupted: the finished guests are in {config.results}/run.json; "
            f"make report DIR={config.results} renders them")
        render.render(config.results, quiet=True)
        return INTERRUPTED
    record.data["finished"] = now()
    record.save()
    return None
