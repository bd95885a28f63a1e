"""Sequential decisions: how many guests a row needs, and what its cell says.

A bug row bounds the reproducer's FAIL rate p from below (one-sided
Clopper-Pearson, 95%). A clean row on a kernel under test then has missed a
bug of that rate with probability at most (1 - p_low)^k after k clean runs;
it stops when that is at or below the target miss probability.
"""
import copy
import math

from .protocol import DEFAULT_MISS

CONFIDENCE = 0.95


def binom_tail(k, n, p):
    """P(X >= k) for X ~ Binomial(n, p)."""
    if k <= 0:
        return 1.0
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i) for i in range(k, n + 1))


def rate_lower(fails, runs, confidence=CONFIDENCE):
    """One-sided Clopper-Pearson lower bound of a FAIL rate from `fails` of `runs`."""
    if fails <= 0 or runs <= 0:
        return 0.0
    alpha = 1 - confidence
    if fails == runs:
        return alpha ** (1 / runs)
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if binom_tail(fails, runs, mid) < alpha:
            lo = mid
        else:
            hi = mid
    return lo


def miss(p_low, clean):
    """Chance that `clean` clean runs miss a bug that fails with rate p_low."""
    return (1 - p_low) ** clean


def clean_runs_needed(p_low, target):
    if p_low <= 0:
        return math.inf
    if p_low >= 1:
        return 1
    return max(1, math.ceil(math.log(target) / math.log(1 - p_low) - 1e-9))


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

    # Runs that say nothing about the bug before a row gives up as BROKEN.
    MAX_UNDECIDED = 3
    # Clean runs a probe row with no usable FAIL rate stops after: more
    # cannot be weighed against a rate nobody measured there, and the cell
    # says what these few do bound (unbounded_reach()).
    UNBOUNDED_CLEAN = 3

    def __init__(self, role, target=DEFAULT_MISS, cap=20, rate=None, repeat=None,
                 any_report=False):
        self.role, self.target, self.cap, self.repeat = role, target, cap, repeat
        self.rate = rate
        self.any_report = any_report
        self.outcomes = []
        self.decision = None
        self.why = ""

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
        self.outcomes.append(outcome)
        self.decision = self._decide()
        return self.decision

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

    def _decide(self):
        n = len(self.outcomes)
        last = self.outcomes[-1]
        if self.repeat:
            return self._fixed() if n >= self.repeat else None
        if last == "SKIP":
            self.why = "a prerequisite is missing"
            return "SKIP"
        undecided = [o for o in self.outcomes if o in ("BROKEN", "HANG")]
        if len(undecided) >= self.MAX_UNDECIDED:
            self.why = f"{len(undecided)} runs said nothing about the bug"
            return max(sorted(set(undecided)), key=undecided.count)
        if self.role in ("fixed", "probe"):
            if self.fails:
                return "FAIL"
            if last == "OTHER":
                # On a kernel under test, a report that is not this bug is a
                # finding (a regression to flag, or for bisect: undecided).
                self.why = "a kernel report that is not this bug"
                return "OTHER"
            clean = self.count("PASS")
            p = self.p_low()
            if p > 0 and miss(p, clean) <= self.target:
                return "PASS"
            if p <= 0 and self.role == "probe" and clean >= self.UNBOUNDED_CLEAN:
                return "PASS"
        else:  # bug row
            k, t = self.fails, self.trials
            if k and self.rate is not None:
                return "FAIL"
            if k and clean_runs_needed(rate_lower(k + 1, t + 1), self.target) >= \
                    clean_runs_needed(rate_lower(k, t), self.target) - 1:
                # One more FAIL would save at most one clean run on the fixed row.
                return "FAIL"
            p = self.p_low()
            if not k and p > 0 and miss(p, self.count("PASS")) <= self.target:
                self.why = "not reproduced where the recorded rate says it would have been"
                return "PASS"
        if n >= self.cap:
            self.why = f"no decision in {n} runs (the cap)"
            return "UNDECIDED"
        return None

    def _fixed(self):
        if self.count("SKIP") == len(self.outcomes):
            return "SKIP"
        if self.fails:
            return "FAIL"
        if self.count("OTHER"):
            return "OTHER"
        if self.count("PASS") == len(self.outcomes):
            return "PASS"
        return "BROKEN"
