"""Sequential decisions: how many guests a row needs, and what its cell says.

A bug row bounds the reproducer's FAIL rate p from below (one-sided
Clopper-Pearson, 95%). A clean row on a kernel under test then has missed a
bug of that rate with probability at most (1 - p_low)^k after k clean runs;
it stops when that is at or below the target miss probability.
"""
import copy
import math

from . import verdict
from .bounds import CONFIDENCE, clean_runs_needed, miss, rate_lower  # noqa: F401 (read through stats too)
from .protocol import DEFAULT_MISS

def pct(x):
    """A probability as a cell shows it: bounds round toward the safe side."""
    return f"{math.floor(x * 100 + 1e-9):.0f}%"


def pct_up(x):
    # Up to the next whole percent: a positive bound never reads "0%".
    v = math.ceil(x * 100 - 1e-9)
    return f"{max(v, 1) if x > 0 else 0:.0f}%"


def rate_bound(p_low):
    """A rate's lower bound as a cell states it, with its confidence."""
    return f"rate ≥ {pct(p_low)} at {pct(CONFIDENCE)}"


def unbounded_reach(clean, target):
    """What `clean` clean runs bound without a FAIL rate: the smallest rate a
    bug may have and still be missed by all of them at most `target` of the
    time, as a cell states it."""
    if clean <= 0:
        return ""
    r = 1 - target ** (1 / clean)
    runs = "1 clean run misses" if clean == 1 else f"{clean} clean runs miss"
    return f"{runs} ≤ {pct_up(target)} only a bug whose FAIL rate is ≥ {pct_up(r)}"


def miss_bound(m):
    """A miss bound as a cell states it: computed from the rate's lower
    bound, so it holds at that bound's confidence, not outright."""
    return f"miss ≤ {pct_up(m)} at {pct(CONFIDENCE)}"


class Row:
    """One reproducer on one kernel, decided by sequential runs.

    role: "bug"   the kernel has the bug (--expect's unpatched): FAIL expected;
          "fixed" the kernel has the fix: PASS expected;
          "probe" no expectation (a bisect step, a kernel of the user's): a FAIL
                  ends it, as many clean runs as the target needs end it clean.
    rate: (fails, runs, source) of the reproducer on a bug kernel, or None.
    repeat: a fixed number of runs instead (REPEAT=N).
    """

    UNBOUNDED_CLEAN = verdict.UNBOUNDED_CLEAN

    def __init__(self, role, target=DEFAULT_MISS, cap=20, rate=None, repeat=None,
                 any_report=False):
        self.role, self.target, self.cap, self.repeat = role, target, cap, repeat
        self.rate = rate
        self.any_report = any_report
        self.outcomes = []
        self.decision = None
        self.why = ""
        self.lost = 0          # boots that never reached the test (not outcomes)

    def count(self, outcome):
        return sum(1 for o in self.outcomes if o == outcome)

    @property
    def fails(self):
        return self.count("FAIL") + (self.count("OTHER") if self.any_report else 0)

    @property
    def trials(self):
        # Runs in which the reproducer got to a verdict on the bug.
        return self.fails + self.count("PASS") + (0 if self.any_report else self.count("OTHER"))

    def p_low(self):
        """The FAIL rate bound a clean run of this row is weighed with."""
        if self.rate is None:
            return 0.0
        return rate_lower(self.rate[0], self.rate[1])

    def add(self, outcome):
        """One guest's outcome; the row's decision when it has one (verdict.row)."""
        self.outcomes.append(outcome)
        self._settle(verdict.row(self))
        return self.decision

    def lost_boot(self):
        """A boot that never reached the test: not a run. What the rule says
        of it (verdict.lost_boots): retry, or the row gives up BROKEN."""
        self.lost += 1
        said, give_up = verdict.lost_boots(self.lost)
        if give_up:
            self.outcomes.append(give_up[0])
            self._settle(give_up)
        return said

    def blind(self, why):
        """Nothing the kernel could show is this bug: decided unbooted (verdict.blind)."""
        self._settle(verdict.blind(why))

    def _settle(self, decided):
        # The one place a row's decision is written.
        if decided is not None:
            self.decision, why = decided
            self.why = why or self.why

    def expected_remaining(self):
        """Guests this row still needs if each ends as its role expects (a bug
        row FAIL, any other PASS): how many may run at once without waste."""
        if self.decision is not None:
            return 0
        if self.repeat:
            return self.repeat - len(self.outcomes)
        want = "FAIL" if self.role == "bug" else "PASS"
        probe = copy.copy(self)
        probe.outcomes = list(self.outcomes)
        k = 0
        while probe.decision is None:
            probe.add(want)
            k += 1
        return k
