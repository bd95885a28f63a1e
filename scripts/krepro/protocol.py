"""What crosses between the guest and the host, and what the host hands back.

The guest's side is repro/lib/protocol.h (the harness's exit codes, its
marks, the default time limit) and guest-image/init (the init's lines);
tests/test_protocol.py checks that the three agree.
"""
import re

# --- the guest: the init's lines (guest-image/init), through /dev/kmsg ---

INIT = "krepro-init: "
INIT_STARTED = INIT + "started"
INIT_RUNNING = INIT + "running"
INIT_DONE = INIT + "done"
# The reproducer's exit status, passed back: "krepro-init: result name=X exit=N".
INIT_RESULT = INIT + "result name={name} exit={exit}"
RESULT_RE = re.compile(r"^krepro-init: result name=([A-Za-z0-9_.-]+) exit=([0-9]+)")
# The same line as a LAVA test monitor's pattern (named groups LAVA reads).
RESULT_LAVA = r"krepro-init: result name=(?P<test_case_id>\S+) exit=(?P<result>\d+)"
# Where a reproducer's test begins: the harness's mark ("krepro: X: start",
# HARNESS_START below) or the init's "krepro-init: running X".
START_RE = re.compile(r"^krepro(-init)?: (running )?([A-Za-z0-9_.-]+)(: start)?$")

# --- the guest: the harness (repro/lib/protocol.h) ---

HARNESS_START = "krepro: {name}: start"
# A reproducer's exit status (enum krepro_verdict) -> the run's outcome.
PASS, FAIL, BROKEN, SKIP = 0, 1, 2, 4
EXIT_OUTCOME = {PASS: "PASS", FAIL: "FAIL", BROKEN: "BROKEN", SKIP: "SKIP"}
# Every outcome a guest run can have (the host adds OTHER and HANG).
OUTCOMES = ("PASS", "FAIL", "OTHER", "HANG", "BROKEN", "SKIP")
# A reproducer's time limit when it declares none (KREPRO_DEFAULT_TIMEOUT),
# and what the host adds to it for the boot and the power-off.
DEFAULT_TIMEOUT = 60
TIMEOUT_MARGIN = 60

# --- the host: every entry point's exit status, as git bisect run reads it ---

CLEAN = 0
REPRODUCED = 1
UNDECIDED = 125    # git bisect run skips the commit
USAGE = 128        # git bisect run aborts on a status >= 128
INTERRUPTED = 130     # 128 + SIGINT, as a shell reports a Ctrl-C

# The target miss probability of a clean row (--miss, make's MISS).
DEFAULT_MISS = 0.01

# vCPUs a guest takes (guest.qemu_argv's -smp for every reproducer of today;
# meta.Reproducer.cpus for one that asks for more).
GUEST_CPUS = 2
