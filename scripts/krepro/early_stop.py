"""When a running guest's answer is complete, so that it can be stopped.

A guest whose kernel printed the bug's own report has its answer (FAIL)
once two things are on record: the report itself, to its end, and the
reproducer's own lines, to its KTAP verdict. A kernel that oopsed can leave
the reproducer stuck until the guest's time limit; waiting longer than the
evidence needs is waiting for nothing.

    None        no report of the bug yet: let the guest run
    "report"    the bug's report has ended; the reproducer's verdict is not
                on the KTAP stream yet (it may never come, or the stream is
                not read: a LAVA job's)
    "complete"  the report has ended and every test point the KTAP plan
                announced is on the stream
    "own"       no report, but the reproducer exited FAILing on its own
                evidence with its whole KTAP plan on the stream: complete too
                (by the verdict order no later kernel report can change that
                FAIL, and a kernel the bug left broken can hang in shutdown)
"""
import re
import time

from .paths import read
from .reports.console import REPORT_END, TRACE_LINES
from .reports.console_lines import console_lines
from .verdict import decide

# A report without an end line of its own (a hung task, a lockdep splat, an
# RCU stall) has ended when the console has been quiet this long.
QUIET = 2.0

PLAN = re.compile(r"^1\.\.([0-9]+)")
POINT = re.compile(r"^(?:not )?ok [0-9]+ ([^#]*?)\s*(?:#|$)")


def ktap_complete(ktap, cases=()):
    """Every top-level test point of the stream's plan is on it, or a point
    for every one of the reproducer's cases (the harness's own point, its
    scan after the cases, comes only once the test process has exited,
    which a kernel that oopsed can keep from ever happening)."""
    want, have, names = None, 0, set()
    for line in ktap.splitlines():
        m = PLAN.match(line)
        if m and want is None:
            want = int(m.group(1))
            continue
        m = POINT.match(line)
        if m:
            have += 1
            names.add(m.group(1))
    if want is not None and have >= want:
        return True
    return bool(cases) and set(cases) <= names


def report_ended(console, line, window=TRACE_LINES):
    """Has the report that starts on console line `line` (1-based, as
    console_lines() numbers them) ended: an end line after it, or its
    window's lines of it (a stack overflow's is longer: its crash dict's
    "window")?"""
    after = 0
    for n, l in console_lines(console):
        if n <= line:
            continue
        after += 1
        if REPORT_END.match(l) or after >= window:
            return True
    return False


class Watch:
    """A GuestSpec's answered(): given the guest's console text (or reading
    it from console_path), and reading its KTAP file where there is one
    written live (not a LAVA job's), says None, "report", "complete" or "own"
    (above). meta: the reproducer (meta.Reproducer)."""

    def __init__(self, meta, console_path=None, ktap_path=None):
        self.meta, self.console_path, self.ktap_path = meta, console_path, ktap_path
        self.size, self.quiet_since = -1, None

    def __call__(self, console=None):
        if console is None:
            console = read(self.console_path)
        now = time.monotonic()
        if len(console) != self.size:
            self.size, self.quiet_since = len(console), now
        ktap = read(self.ktap_path) if self.ktap_path else ""
        if not self.meta.signatures and not ktap_complete(ktap):
            # Only own evidence can answer, once the whole plan is in: no
            # need to read the console for reports at every look.
            return None
        res = decide(console, self.meta, ktap)
        if res["outcome"] != "FAIL":
            return None
        if res["signature"] == "own evidence":
            return "own" if ktap_complete(ktap) else None
        if not (res["signature"] or "").startswith("report: "):
            return None
        bug = next(r for r in res["reports"] if r.get("bug"))
        if not (report_ended(console, bug["line"], bug.get("window", TRACE_LINES))
                or now - self.quiet_since >= QUIET):
            return None
        if self.ktap_path and ktap_complete(ktap, self.meta.cases):
            return "complete"
        return "report"
