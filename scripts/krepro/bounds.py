"""The bounds a row's runs give: a FAIL rate's one-sided Clopper-Pearson
lower bound, and the chance that clean runs miss a bug of a given rate."""
import math

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
