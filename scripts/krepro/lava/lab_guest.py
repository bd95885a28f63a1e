"""A lab job's QEMU on this machine, under krepro's locks: the machine lock
shared (a kernel build takes it exclusively) and every guest slot (a lab
job's guest has the host to itself, as a race's odds were measured). The
locks are taken on descriptors QEMU inherits, and QEMU replaces this
process: they are held exactly as long as the guest runs, whoever stops it
(LAVA kills QEMU at the end of the job or at a timeout).

  python3 -m krepro.lab_guest /usr/bin/qemu-system-x86_64 ARGS...
(scripts/lava-lab.sh puts it first in its worker's PATH.)"""
import fcntl
import os
import sys
import time

from .. import guest, slots
from ..paths import cache


# What it prints goes to the job's console, before the guest's: the lab's
# overhead is read past it (lava_lab.job_times()).
SAYS = "krepro lab guest:"


def hold(name, mode):
    """flock $KREPRO_CACHE/<name>, on a descriptor that survives exec;
    the seconds it waited."""
    fd = os.open(os.path.join(cache(), name), os.O_WRONLY | os.O_CREAT, 0o644)
    # Python opens files close-on-exec (PEP 446): QEMU must keep this one.
    os.set_inheritable(fd, True)
    try:
        fcntl.flock(fd, mode | fcntl.LOCK_NB)
        return 0.0
    except BlockingIOError:
        print(f"{SAYS} waiting for {name}", file=sys.stderr, flush=True)
    t0 = time.monotonic()
    fcntl.flock(fd, mode)
    return time.monotonic() - t0


def main(argv):
    if len(argv) < 2:
        sys.exit("usage: python3 -m krepro.lab_guest QEMU [ARGS...]")
    os.makedirs(cache(), exist_ok=True)
    waited = hold("machine.lock", fcntl.LOCK_SH)
    # Every slot, queued first come first served as krepro's own guests are.
    waited += slots.take_all_for_exec(
        guest.default_jobs(), lambda: print(f"{SAYS} waiting for the guest slots", file=sys.stderr, flush=True))
    if waited:
        print(f"{SAYS} waited {waited:.1f} s for this machine's locks", file=sys.stderr, flush=True)
    os.execv(argv[1], argv[1:])


if __name__ == "__main__":
    main(sys.argv)
