"""How a guest, a row and a run are decided: the one home of krepro's
verdict rules, in the order of the design notes' verdict table.

Guest (decide()): no init is BROKEN; a kernel report before the start mark
is BROKEN; a report after it matching a declared signature is FAIL; the
reproducer's own FAIL lines (exit 1) are FAIL; any other report is OTHER; a
timeout is FAIL for a declared hang, else HANG; no result line is BROKEN;
exit 0, 2, 4 are PASS, BROKEN, SKIP; exit 1 without own evidence is OTHER.
A BROKEN boot that never reached the test is infrastructure
(infrastructure()), retried and not counted.

Row (row(), lost_boots(), blind()), as the table's second part: with
--repeat N its fixed rule once N ran (fixed()); a SKIP ends it;
MAX_UNDECIDED runs BROKEN or HANG give up; INFRA_RETRIES lost boots give
up BROKEN; a kernel where every evidence path is blind is UNDECIDED
unbooted; then a fixed or probe row's rule (kernel_under_test()) or a bug
row's (bug_row()); the cap is UNDECIDED. stats.Row applies these and is
the only writer of a row's decision.

Run (status()): the exit status from its rows.
"""
from .bounds import clean_runs_needed, miss, rate_lower
from .protocol import CLEAN, EXIT_OUTCOME, INTERRUPTED, REPRODUCED, UNDECIDED
from .reports.console import crashes, signature_matches
from .reports.run_evidence import broken_cases, joined, ktap_lines, landmarks, own_evidence

# Boots a row may lose to the infrastructure (no init, QEMU died, a kernel
# report before the test's start mark) before it is BROKEN; they are retried
# and never counted as runs.
INFRA_RETRIES = 3
# Runs that say nothing about the bug before a row gives up.
MAX_UNDECIDED = 3
# Clean runs a probe row with no usable FAIL rate stops after: more cannot
# be weighed against a rate nobody measured there, and the cell says what
# these few do bound (stats.unbounded_reach()).
UNBOUNDED_CLEAN = 3


# --- a guest ---

def first_label(sigs, test):
    """The label of the first declared signature that passes test, or None."""
    return next((s.label(i) for i, s in enumerate(sigs, 1) if test(s)), None)


class Outcome:
    """decide()'s result being made: called with the outcome, it completes
    and returns the record. A FAIL (or OTHER) keeps the cases its KTAP marks
    BROKEN in its evidence: the higher outcome must not hide them."""

    def __init__(self, res):
        self.res = res

    def __call__(self, outcome, evidence, signature=None, matched=None):
        if outcome in ("FAIL", "OTHER") and self.res["broken_cases"]:
            evidence += f" ; also BROKEN: {joined(self.res['broken_cases'])}"
        self.res.update(outcome=outcome, evidence=evidence, signature=signature,
                        matched_signature=matched)
        return self.res


def decide(console, meta, ktap="", timed_out=False, qemu_status=0):
    """One guest run's outcome, by the guest rules in their order: dict with
    outcome, evidence, signature (the report or own evidence that made it
    FAIL), reports, exit."""
    sigs = meta.signatures
    init_line, mark_line, exit_code = landmarks(console, meta.name)
    # The boot stub's "Booting the kernel." before init is this boot's own.
    reports = [r for r in crashes(console)
               if r["kind"] != "REBOOT" or init_line is not None and r["line"] > init_line]
    before = [r for r in reports if mark_line is None or r["line"] < mark_line]
    after = [r for r in reports if mark_line is not None and r["line"] >= mark_line]
    for r in after:
        # The first declared signature it matches names it in the record.
        r["matched"] = first_label(sigs, lambda s: signature_matches(r, s))
        r["bug"] = r["matched"] is not None
    out = Outcome({"exit": exit_code, "timed_out": timed_out, "reports": reports,
                   "init_line": init_line, "mark_line": mark_line,
                   "broken_cases": broken_cases(ktap, meta.cases)})

    hung = " ; guest hung" if timed_out else ""
    if init_line is None:
        if before:
            return out("BROKEN", f"kernel did not reach init: {before[0]['title']}")
        return out("BROKEN", "kernel did not reach init"
                   + (" (timed out)" if timed_out else f" (qemu exit {qemu_status})"))
    if before:
        return out("BROKEN", f"kernel report before the test started: {before[0]['title']}")
    bug = [r for r in after if r["bug"]]
    own = own_evidence(ktap, meta.cases) if exit_code == 1 else []
    others = [r for r in after if not r["bug"]]
    also = f" (+{len(others)} later report(s) not in its signature: {others[0]['title']})" if others else ""
    if bug:
        more = f" (+{len(bug) - 1} more)" if len(bug) > 1 else ""
        return out("FAIL", f"{bug[0]['title']}{more}{also}{hung}", "report: " + bug[0]["title"],
                   bug[0]["matched"])
    if own:
        return out("FAIL", joined(own) + also, "own evidence", "own evidence")
    if others:
        return out("OTHER", f"{others[0]['title']}"
                   + (f" (+{len(others) - 1} more)" if len(others) > 1 else "") + hung)
    if timed_out:
        if meta.hang_is_bug:
            return out("FAIL", "hang: no result within the time limit", "hang",
                       first_label(sigs, lambda s: s.is_hang))
        return out("HANG", "no result within the time limit")
    if exit_code is None:
        return out("BROKEN", f"guest ended without a result (qemu exit {qemu_status})")
    return by_exit(out, ktap, exit_code)


def by_exit(out, ktap, exit_code):
    """A run with no report after its mark that ended in time: its exit."""
    outcome = EXIT_OUTCOME.get(exit_code, "BROKEN")
    if outcome == "FAIL":
        # The harness failed the run on taint with no report on the console.
        why = ktap_lines(ktap, "REPORT:") + ktap_lines(ktap, "FAIL:")
        return out("OTHER", " | ".join(why[:2]) or "exit 1 without the reproducer's evidence")
    tag = {"PASS": "PASS:", "BROKEN": "BROKEN", "SKIP": "SKIP"}[outcome]
    return out(outcome, " | ".join(ktap_lines(ktap, tag)[:3]) or f"exit {exit_code}")


def infrastructure(v, keep=False):
    """Whether a guest's outcome (decide()'s dict) is a boot that failed, not
    the test: BROKEN with no init, no start of the reproducer and no result
    of its, or a kernel report before its start mark. --keep keeps it a run."""
    mark = v["mark_line"]
    return v["outcome"] == "BROKEN" and not keep and (
        v["init_line"] is None or (mark is None and v["exit"] is None)
        or any(mark is not None and r["line"] < mark for r in v["reports"]))


# --- a row ---

def lost_boots(n):
    """(what the guest's line says, (decision, why) or None) after n boots
    that never reached the test."""
    if n < INFRA_RETRIES:
        return f" (infrastructure: not counted; boot again, {n} of {INFRA_RETRIES})", None
    return " (infrastructure: the row gives up)", (
        "BROKEN", f"{n} boots never reached the test (infrastructure, not the bug): see their logs")


def blind(why):
    """A row whose kernel cannot show any evidence path: nothing a guest could
    print would be this bug, so a boot could only come back clean."""
    return "UNDECIDED", why


def row(r):
    """(decision, why) of a row (stats.Row) after its latest outcome, or None
    while it needs more runs; why is "" where the decision says it all."""
    n, last = len(r.outcomes), r.outcomes[-1]
    if r.repeat:
        return (fixed(r), "") if n >= r.repeat else None
    if last == "SKIP":
        return "SKIP", "a prerequisite is missing"
    undecided = [o for o in r.outcomes if o in ("BROKEN", "HANG")]
    if len(undecided) >= MAX_UNDECIDED:
        return (max(sorted(set(undecided)), key=undecided.count),
                f"{len(undecided)} runs said nothing about the bug")
    decided = bug_row(r) if r.role == "bug" else kernel_under_test(r, last)
    if decided is None and n >= r.cap:
        return "UNDECIDED", f"no decision in {n} runs (the cap)"
    return decided


def kernel_under_test(r, last):
    """A fixed or probe row: a FAIL ends it; so does a report that is not
    this bug (a finding: a regression to flag, or for bisect undecided); it
    ends clean once its clean runs bound the miss (or, with no rate, after
    UNBOUNDED_CLEAN of a probe's)."""
    if r.fails:
        return "FAIL", ""
    if last == "OTHER":
        return "OTHER", "a kernel report that is not this bug"
    clean, p = r.count("PASS"), r.p_low()
    if p > 0 and miss(p, clean) <= r.target:
        return "PASS", ""
    if p <= 0 and r.role == "probe" and clean >= UNBOUNDED_CLEAN:
        return "PASS", ""
    return None


def bug_row(r):
    """A bug row: FAIL as soon as a recorded rate stands behind it, or once
    one more FAIL would save at most one clean run on the fixed row; PASS
    when the recorded rate says it would have been reproduced by now."""
    k, t = r.fails, r.trials
    if k and r.rate is not None:
        return "FAIL", ""
    if k and clean_runs_needed(rate_lower(k + 1, t + 1), r.target) >= \
            clean_runs_needed(rate_lower(k, t), r.target) - 1:
        return "FAIL", ""
    p = r.p_low()
    if not k and p > 0 and miss(p, r.count("PASS")) <= r.target:
        return "PASS", "not reproduced where the recorded rate says it would have been"
    return None


def fixed(r):
    """A row of a fixed number of runs (REPEAT=N), once they all ran."""
    if r.count("SKIP") == len(r.outcomes):
        return "SKIP"
    if r.fails:
        return "FAIL"
    if r.count("OTHER"):
        return "OTHER"
    if r.count("PASS") == len(r.outcomes):
        return "PASS"
    return "BROKEN"


# --- a run ---

def status(rec, any_report=False):
    """Exit status. A run that did not finish decides nothing, whatever rows it
    holds: 130 (INTERRUPTED) when it was interrupted, else 125 (killed, or
    still running). A finished one: with --expect, 0 every row as expected,
    else 1; otherwise git bisect's: 1 a row reproduced its bug, 125 a row
    undecided, 0 all clean."""
    if rec.get("interrupted"):
        return INTERRUPTED
    if not rec.get("finished"):
        return UNDECIDED
    rows = rec["rows"]
    if rec.get("expect"):
        return CLEAN if rows and all(r.get("as_expected") for r in rows) else REPRODUCED
    ds = [r["decision"] for r in rows]
    if "FAIL" in ds or (any_report and "OTHER" in ds):
        return REPRODUCED
    if not rows or any(d != "PASS" for d in ds):
        return UNDECIDED
    return CLEAN
