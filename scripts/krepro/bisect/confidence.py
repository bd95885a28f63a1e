"""How sure a bisection's answer is. The FAIL rate's 95% lower bound p
(measured on BAD by the driver, or the reproducer's record), and for each
good verdict with c clean runs a miss chance (1 - p)^c; the answer is right
unless one of those good verdicts was a miss, so confidence = product of
(1 - (1 - p)^c). A FAIL is the bug's own evidence and is taken as certain."""
import dataclasses
import math

from .. import stats
from ..bounds import binom_tail


@dataclasses.dataclass
class Rate:
    """FAILs in trials, and where they were counted."""
    fails: int
    trials: int
    source: str

    @property
    def low(self):
        return stats.rate_lower(self.fails, self.trials)


def contradicted(rate_low, fails, trials):
    """Are `fails` FAILs in `trials` runs on bug kernels too few for a FAIL
    rate of at least rate_low? P(that few or fewer) < 5%."""
    if trials <= 0 or rate_low <= 0:
        return False
    return 1 - binom_tail(fails + 1, trials, rate_low) < 0.05


def good_step_runs(rate, miss, max_runs):
    """Clean runs a good verdict needs for the target miss, at the cap at
    most (the cap while there is no rate)."""
    k = stats.clean_runs_needed(rate.low, miss) if rate else math.inf
    return min(k, max_runs) if k != math.inf else max_runs


def miss_chance(rate, clean):
    """The chance that `clean` runs of a bug kernel all PASSed, at 95% for
    the rate (certain when the rate's bound is 0)."""
    return stats.miss(rate.low, clean) if rate.low > 0 else 1.0


def confidence_of(steps, rate):
    """Product of 1 - miss over the good verdicts of GOOD and the search;
    each one's miss is kept in its step."""
    c = 1.0
    for st in steps:
        if st["verdict"] == "good" and st["role"] in ("good", "bisect"):
            st["miss"] = miss_chance(rate, st["clean"])
            c *= 1 - st["miss"]
    return c


def measured_on(steps, bad_commits):
    """The rate the runs on bad_commits measured (the revert is another
    tree: not counted)."""
    on_bad = [s for s in steps if s["commit"] in bad_commits and s["role"] != "revert"]
    fails = sum(s["fails"] for s in on_bad)
    trials = sum(s["trials"] for s in on_bad)
    return Rate(fails, trials, f"measured here on the commits the answer calls bad: {fails}/{trials}")
