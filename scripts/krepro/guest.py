"""One QEMU guest: its command line (built here only), the boot, the locks."""
import contextlib
import fcntl
import os
import re
import shlex
import signal
import subprocess
import threading
import time

from .arches import ARCHES
from .backend import Backend, GuestResult, stopped
from .paths import cache, read
from .log import log
from .protocol import GUEST_CPUS, INIT_DONE, INIT_STARTED
from .untrusted import Refused, cut
# Guest slots live in slots.py; lava/job.py and the bench take them through here.
from .slots import guest_slot  # noqa: F401


def qemu_binary(arch):
    # The unit tests put a fake QEMU here; nobody else needs to.
    return os.environ.get("KREPRO_QEMU") or ARCHES[arch]["qemu"]


def machine_args(arch, accel, smp):
    """The guest machine: board, CPU, memory, vCPUs, no default devices.
    The same for a local guest and a LAVA job's."""
    a = ARCHES[arch]
    argv = []
    if a["machine"]:
        argv += ["-M", a["machine"]]
    argv += ["-accel", "kvm", "-cpu", "host"] if accel == "kvm" else ["-accel", "tcg", "-cpu", a["cpu"]]
    argv += ["-m", "1G"]
    if arch == "x86_64":
        # One socket per CPU: without ACPI the kernel finds CPUs in SeaBIOS's
        # MP table, which lists one entry per package.
        argv += ["-smp", f"{smp},sockets={smp},cores=1,threads=1"]
    else:
        argv += ["-smp", str(smp)]
    return argv + ["-nodefaults", "-display", "none", "-no-reboot"]


def disk_args(arch, disk, prepare=False, fmt="raw"):
    # prepare writes the image; a run gets a copy-on-write view of it.
    opts = f"file={disk},if=none,id=vda,format={fmt}" + ("" if prepare else ",snapshot=on")
    return ["-drive", opts, "-device", f"virtio-blk-{ARCHES[arch]['virtio']},drive=vda"]


def qemu_argv(arch, accel, image, initrd, cmdline, smp, ktap, disk=None, prepare=False):
    """The guest's QEMU command line, without the serial console's chardev."""
    argv = [qemu_binary(arch)] + machine_args(arch, accel, smp)
    argv += ["-kernel", image, "-initrd", initrd, "-append", cmdline,
             "-device", f"virtio-serial-{ARCHES[arch]['virtio']}"]
    if ktap:
        argv += ["-chardev", f"file,id=ktap,path={ktap}", "-device", "virtconsole,chardev=ktap"]
    if disk:
        argv += disk_args(arch, disk, prepare)
    return argv


def own_image(initrd, repro):
    """The reproducer's own guest image, which guest-image/build.sh writes
    beside the whole one (repro/<id>.cpio: only its binary and programs, a
    quarter of the whole image's unpacking at boot); the whole image where
    there is none (a KREPRO_INITRD of the user's)."""
    own = os.path.join(os.path.dirname(initrd), "repro", f"{repro}.cpio")
    return own if os.path.isfile(own) else initrd


def kernel_cmdline(arch, repro, extra="", keep=False, prepare=False):
    # Quiet boot, full console from /init on (guest-image/init): a boot's
    # warnings and reports still reach the console. --append loglevel=7
    # brings the boot's other lines back.
    parts = ([f"console={ARCHES[arch]['console']}", "loglevel=5", "krepro.loglevel=7", "panic=-1"]
             + ARCHES[arch]["bootargs"].split() + ["krepro.guest=1", f"krepro.run={repro}"])
    if extra:
        parts.append(extra)
    if keep:
        parts.append("krepro.keep=1")
    if prepare:
        parts.append("krepro.prepare=1")
    return " ".join(parts)


@contextlib.contextmanager
def flocked(name, exclusive, waiting_msg):
    """Hold $KREPRO_CACHE/<name> (flock); say so when we have to wait."""
    os.makedirs(cache(), exist_ok=True)
    fd = os.open(os.path.join(cache(), name), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
    mode = fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH
    try:
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
        except BlockingIOError:
            log(f"{waiting_msg} (lock: {os.path.join(cache(), name)})")
            fcntl.flock(fd, mode)
        yield fd
    finally:
        os.close(fd)



def default_jobs():
    """Guests this machine holds at once: its cores over a guest's vCPUs."""
    return max(1, (os.cpu_count() or 1) // GUEST_CPUS)


# Live guests, so that an interrupt stops every one of them, whichever thread
# started it.
LIVE = set()
LIVE_LOCK = threading.Lock()


def stop_all():
    with LIVE_LOCK:
        for p in list(LIVE):
            kill_group(p)


# How often a running guest's console is read; how long a guest may go on
# once the bug's own report has ended (answer.Watch says "report") for the
# reproducer to print its verdict; how long once the verdict is on its KTAP
# stream too ("complete"), for the lines printed right after it (the
# report's register summary, the harness's closing scan).
WATCH_EVERY = 1.0
AFTER_REPORT = 10.0


def after_report():
    """AFTER_REPORT, or $KREPRO_AFTER_REPORT (seconds, 0-3600): read where it
    is used, not at import, so a bad value is one usage error of the run
    that uses it (untrusted.Refused), not a traceback of every command."""
    v = os.environ.get("KREPRO_AFTER_REPORT")
    if not v:
        return AFTER_REPORT
    if not re.fullmatch(r"[0-9]{1,4}(\.[0-9]{1,3})?", v) or float(v) > 3600:
        raise Refused(f"KREPRO_AFTER_REPORT wants seconds from 0 to 3600, not '{cut(v)}'")
    return float(v)
AFTER_COMPLETE = 1.0


def boot(argv, rundir, limit, keep=False, answered=None, jobs=1, alone=False):
    """Run one guest to its end or its time limit, its serial console in
    rundir/console.log. answered() says when the run's outcome is already
    known (the bug's own report): see supervise()."""
    console = os.path.join(rundir, "console.log")
    if keep:
        argv = argv + ["-chardev", f"stdio,id=con,logfile={console},signal=off", "-serial", "chardev:con"]
    else:
        argv = argv + ["-chardev", f"file,id=con,path={console}", "-serial", "chardev:con"]
    with open(os.path.join(rundir, "qemu-cmdline"), "w") as f:
        f.write(" ".join(shlex.quote(a) for a in argv) + "\n")
    # No more guests than the machine holds, whoever started them: TCG guests
    # beyond the cores stall each other (RCU stall reports) and change a
    # race's odds.
    with guest_slot(jobs, alone):
        t0 = time.monotonic()
        if keep:
            return GuestResult(subprocess.call(argv), False, round(time.monotonic() - t0, 1))
        with open(os.path.join(rundir, "qemu.log"), "w") as out:
            status, timed_out, stop = supervise(argv, out, limit, answered)
        return GuestResult(status, timed_out, round(time.monotonic() - t0, 1), **stopped(stop))


class Qemu(Backend):
    """A guest that QEMU runs here. keep: on this terminal, kept up after
    the reproducer; gdb: QEMU's gdbstub on that port, stopped at the first
    instruction; extra: the user's QEMU options; prepare: the run writes its
    disk (a reproducer's disk preparation)."""

    def __init__(self, keep=False, gdb=None, extra=(), prepare=False):
        self.keep, self.gdb, self.extra, self.prepare = keep, gdb, tuple(extra), prepare

    def run(self, spec):
        argv = qemu_argv(spec.arch, spec.accel, spec.image, spec.initrd, spec.cmdline, spec.cpus,
                         os.path.join(spec.rundir, "ktap.txt"), spec.disk, prepare=self.prepare)
        if self.gdb:
            argv += ["-gdb", f"tcp::{self.gdb}", "-S"]
        argv += self.extra
        console = os.path.join(spec.rundir, "console.log")
        answered = (lambda: spec.answered(read(console))) if spec.answered else None
        return boot(argv, spec.rundir, spec.limit, self.keep, answered, spec.jobs, spec.alone)


# init's first line says how long the kernel took to reach it.
INIT_UPTIME = re.compile(re.escape(INIT_STARTED) + r", uptime ([0-9.]+) s")


def boot_seconds(console):
    """The guest's uptime when /init started (boot to init), or None."""
    m = INIT_UPTIME.search(console)
    return float(m.group(1)) if m else None


def kill_group(p):
    # The process's session: QEMU, or lava-run and the QEMU it started.
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def no_stop():
    return {"early": False, "report": None, "complete": None}


def supervise(argv, out, limit, answered=None, grace=5):
    """Run argv (a guest, or a runner of one) in a session of its own, its
    output to the file out, until it ends or `limit` seconds. answered()
    (answer.Watch) says when the outcome is known: the guest is stopped
    AFTER_COMPLETE seconds after its answer is "complete", AFTER_REPORT
    seconds after the bug's "report" has ended if the reproducer's verdict
    does not come (a kernel that oopsed can leave it stuck until the limit).
    Returns (status, timed out, stop): stop["early"] says whether it was
    stopped so, stop["report"] and stop["complete"] the guest's seconds when
    each was first seen (None when never)."""
    wait_report = after_report()
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, start_new_session=True)
    with LIVE_LOCK:
        LIVE.add(p)
    status, timed_out, stop = None, False, no_stop()
    try:
        while status is None:
            now = time.monotonic() - t0
            left = limit - now
            if left <= 0:
                timed_out = True
                break
            if (stop["complete"] is not None and now - stop["complete"] >= AFTER_COMPLETE) or \
                    (stop["report"] is not None and now - stop["report"] >= wait_report):
                stop["early"] = True
                break
            try:
                status = p.wait(timeout=min(WATCH_EVERY, left))
            except subprocess.TimeoutExpired:
                state = answered() if answered and stop["complete"] is None else None
                seen = round(time.monotonic() - t0, 1)
                if state in ("report", "complete") and stop["report"] is None:
                    stop["report"] = seen
                if state in ("complete", "own"):
                    stop["complete"] = seen
        if status is None:
            p.terminate()
            try:
                p.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                kill_group(p)
                p.wait()
            status = p.returncode
        # Nothing of its session outlives it (lava-run's QEMU).
        kill_group(p)
    except BaseException:
        # Ctrl-C or a kill: no guest is left behind.
        kill_group(p)
        p.wait()
        raise
    finally:
        with LIVE_LOCK:
            LIVE.discard(p)
    return status, timed_out, stop


def kvm_works(image, initrd):
    """KVM only after a probe boot reaches the end of init (it is broken on
    machines whose /proc/cpuinfo has no vmx/svm even when /dev/kvm exists)."""
    with open("/proc/cpuinfo") as f:
        flags = f.read()
    if " vmx" not in flags and " svm" not in flags:
        log("no vmx/svm in /proc/cpuinfo: KVM unusable")
        return False
    if not os.access("/dev/kvm", os.W_OK):
        log("/dev/kvm not writable: KVM unusable")
        return False
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        argv = qemu_argv("x86_64", "kvm", image, initrd, "console=ttyS0 panic=-1 krepro.guest=1", 1, None)
        boot(argv, d, 60)  # its console says whether init finished
        with open(os.path.join(d, "console.log"), errors="replace") as f:
            if INIT_DONE in f.read():
                return True
    log("KVM probe boot did not reach the end of init in 60 s: using TCG")
    return False
