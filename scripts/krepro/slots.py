"""The machine's guest slots ($KREPRO_CACHE/boot.lock*), handed out in the
order they were asked for.

flock() wakes its waiters in no order, so a run that gives its slot back and
asks again at once (a calibration, a bisection) could keep it for an hour
while another run waited. Every taker therefore queues in
$KREPRO_CACHE/boot.queue first, and only the head of the queue may take a
slot. An entry names its process (pid and start time): one left by a process
that died is dropped by the next reader, so a crash never blocks the queue."""
import contextlib
import fcntl
import itertools
import os
import sys
import threading
import time

from .paths import cache

QUEUE = "boot.queue"
POLL = 0.2
_requests = itertools.count()


def slot_name(i):
    # Slot 0 keeps the name of the old one-guest lock.
    return "boot.lock" if i == 0 else f"boot.lock.{i}"


def _start_time(pid):
    """The process's start time (clock ticks after boot), or None if it is gone:
    with the pid it names a process even after the pid is reused."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


def _alive(entry):
    fields = entry.split()
    return len(fields) == 3 and fields[1].isdigit() and _start_time(int(fields[1])) == fields[2]


def _edit_queue(change):
    """Under the queue's own lock: drop dead entries, apply change(entries),
    write the result back; returns the entries as they are now."""
    fd = os.open(os.path.join(cache(), QUEUE), os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with os.fdopen(os.dup(fd), "r+") as f:
            was = f.read()
            entries = change([e for e in was.splitlines() if _alive(e)])
            now = "".join(e + "\n" for e in entries)
            # A waiter looks 5 times a second: write only what changed.
            if now != was:
                f.seek(0)
                f.truncate()
                f.write(now)
        return entries
    finally:
        os.close(fd)


def _take(fds, held, alone):
    """Non-blocking, in slot order: one free slot, or for `alone` every slot
    (kept as each frees up). True when the request is met."""
    for fd in fds:
        if fd in held:
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            continue
        held.append(fd)
        if not alone:
            return True
    return len(held) == len(fds)


def _open_slots(jobs, inheritable=False):
    os.makedirs(cache(), exist_ok=True)
    fds = [os.open(os.path.join(cache(), slot_name(i)), os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
           for i in range(jobs)]
    for fd in fds:
        # Python opens files close-on-exec (PEP 446): an exec'd QEMU must keep these.
        os.set_inheritable(fd, inheritable)
    return fds


def _acquire(fds, alone, say):
    """Queue, then at the head take one slot of fds (all for `alone`);
    returns the seconds waited. The queue entry is gone on return, and on
    an interrupt too."""
    pid = os.getpid()
    me = f"{pid}.{threading.get_ident()}.{next(_requests)} {pid} {_start_time(pid)}"
    held = []
    t0 = time.monotonic()
    try:
        _edit_queue(lambda q: q + [me])
        said = False
        while not (_edit_queue(lambda q: q)[:1] == [me] and _take(fds, held, alone)):
            if not said:
                say()
                said = True
            time.sleep(POLL)
        return time.monotonic() - t0
    finally:
        _edit_queue(lambda q: [e for e in q if e != me])


def _say_waiting(alone):
    what = ("the other guests to finish (this one needs the host to itself"
            if alone else "another guest to finish (first come, first served")
    print(f"krepro: waiting for {what}; queue: {os.path.join(cache(), QUEUE)})",
          file=sys.stderr, flush=True)


@contextlib.contextmanager
def guest_slot(jobs, alone=False):
    """One of the machine's `jobs` guest slots, or all of them for a guest
    that needs the host to itself (a race whose odds change when other guests
    share the CPUs). Held across invocations: two runs on one machine share
    its slots, first come first served."""
    fds = _open_slots(jobs)
    try:
        _acquire(fds, alone, lambda: _say_waiting(alone))
        yield
    finally:
        for fd in fds:
            os.close(fd)


def take_all_for_exec(jobs, say):
    """Every slot, in the queue's turn, on descriptors a program exec'd next
    inherits (a lab job's QEMU: the slots are held exactly as long as it
    runs); the seconds waited."""
    return _acquire(_open_slots(jobs, inheritable=True), True, say)
