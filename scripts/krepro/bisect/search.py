"""krepro bisect's search: drive a whole bisection with krepro's rows, check
the culprit it ends at, and say how sure its answer is.

The search is krepro's own binary search over `git rev-list --first-parent
GOOD..BAD`, not `git bisect`: no bisect state in the user's repository (its
checkout, refs/bisect and a second bisection of the same repository stay
free), skips are explicit (the untested commit nearest the middle is tried
next), and each step's verdict comes with the runs behind it, which the
confidence needs. First-parent keeps a merge whole: a merge can be the
culprit (flagged), and its branch can be bisected after.

Every checkout happens in a scratch clone under the cache (`git clone
--shared`); bisect/machinery.py builds and runs it.

The checks of the culprit it ends at: bisect/verify.py. How sure the
answer is: bisect/confidence.py.
"""
import math
import os

from .. import arches
from . import record
from .. import stats
from .confidence import Rate, confidence_of, good_step_runs
from .machinery import checkout, first_parent_line, prepare_scratch, scratch_dir, subject, unjudged
from .record import log
from .verify import REFAILS, CulpritCheck
from ..protocol import DEFAULT_MISS, INTERRUPTED, UNDECIDED, USAGE

DEFAULT_FLOOR = 0.66
DEFAULT_CALIBRATE = 10


class Bisect(CulpritCheck):
    """One bisection: its steps, the rate in use and its record."""

    def __init__(self, tree, good, bad, repro, machinery, results, arch="x86_64",
                 rate_mode="measure", calibrate=DEFAULT_CALIBRATE, miss=DEFAULT_MISS,
                 floor=DEFAULT_FLOOR, max_runs=20, recorded=None, scratch=None):
        self.tree, self.repro, self.m, self.results = tree, repro, machinery, results
        self.arch, self.rate_mode, self.calibrate = arch, rate_mode, calibrate
        self.miss, self.floor, self.max_runs = miss, floor, max_runs
        self.recorded = recorded      # Rate of the reproducer's record (--rate recorded)
        self.good_arg, self.bad_arg = good, bad
        self.scratch = scratch or scratch_dir(tree)
        self.steps, self.rate = [], None
        self.replaced = False         # the record was contradicted (cross_check)
        self.data = None

    def resolve(self):
        """The commits to search, oldest first (BAD last); raises UsageError."""
        self.good, self.bad, line = first_parent_line(self.tree, self.good_arg, self.bad_arg)
        return line

    def step(self, role, commit, label=None, repeat=None, prepared=False, again=False):
        """Build commit (checked out unless prepared) and decide it: a step
        record with verdict bad, good or skip."""
        n = len(self.steps) + 1
        st = record.new_step(n, role, commit, subject(self.tree, commit))
        self.steps.append(st)
        label = label or commit[:12]
        log(f"step {n} ({role}): {commit[:12]} {st['subject']}")
        if not prepared:
            checkout(self.scratch, commit)
        image = os.path.join(self.results, "kernels", f"{arches.image_name(self.arch)}-{self.arch}-{label}")
        b = self.m.build(self.scratch, image)
        st.update(build_seconds=b.seconds, build="ok" if b.ok else "failed", text=b.text)
        if not b.ok:
            st["why"] = f"does not build: {b.why}"
            self.save()
            return st
        try:
            if again:
                self.refail(st, b.image)
            else:
                self.decide(st, b.image, repeat)
        finally:
            self.m.unlink_debug(b.image)
        self.save()
        return st

    def wanted(self):
        """Clean runs a good verdict needs for the target miss, at the cap at most."""
        return good_step_runs(self.rate, self.miss, self.max_runs)

    def row(self, st, image, **kw):
        """One more row of step st: its record added to the step's."""
        d = os.path.join(self.results, f"step{st['n']:02d}-{st['role']}-{st['commit'][:12]}"
                         + (f"-{len(st['rows']) + 1}" if st["rows"] else ""))
        r = self.m.row(image, self.repro, d, rate=self.rate, **kw)
        if r.get("code") in (USAGE, INTERRUPTED):
            raise Stop(r["code"], "run-in-qemu.sh exited "
                       + ("130: interrupted" if r["code"] == INTERRUPTED else
                          "128 (krepro's own reproducers or guest image?); see its message above"))
        r.setdefault("counts", {})
        st["rows"].append({"dir": os.path.relpath(d, self.results), "decision": r.get("decision"),
                           "runs": r.get("runs", 0), "counts": r["counts"], "cell": r.get("cell")})
        st["runs"] += r.get("runs", 0)
        st["fails"] += r.get("fails", 0)
        st["trials"] += r.get("trials", 0)
        return r

    def decide(self, st, image, repeat):
        # A probe row whose record applies stops clean sooner than the driver
        # may want (its rate can be lower than the record's): the next row
        # runs the rest. Every row adds a clean run or ends the step.
        want = repeat or self.wanted()
        while True:
            r = self.row(st, image, repeat=repeat) if repeat else \
                self.row(st, image, max_runs=max(1, want - st["clean"]))
            if r.get("fails"):
                st["verdict"] = "bad"
                return
            st["why"] = unjudged(r) or ""
            if st["why"]:
                return
            st["clean"] += r["counts"]["PASS"]
            if repeat or st["clean"] >= want:
                break
        st["verdict"] = "good"

    def refail(self, st, image):
        """The culprit again: rows until it has FAILed REFAILS times, within
        the step's cap. Their runs are a sample of the true rate for the
        check of the rate, larger than one row's."""
        while st["fails"] < REFAILS and st["runs"] < self.max_runs:
            r = self.row(st, image, max_runs=self.max_runs - st["runs"])
            if not r.get("fails"):
                st["why"] = unjudged(r) or f"no FAIL in {r.get('runs', 0)} more runs"
                break
        st["verdict"] = "bad" if st["fails"] else "skip"
        if st["fails"] and st["fails"] < REFAILS:
            st["why"] = f"{st['fails']} FAILs in {st['runs']} runs, {REFAILS} wanted" + \
                (f" ({st['why']})" if st["why"] else "")

    def confidence(self):
        """Product of 1 - miss over the good verdicts so far."""
        return confidence_of(self.steps, self.rate)

    def run(self, line=None):
        """The whole bisection; line: resolve()'s, when the caller has it."""
        os.makedirs(self.results, exist_ok=True)
        line = line or self.resolve()
        self.data = record.new_record(self, len(line))
        log(f"{len(line)} commits on the first-parent line from {self.good[:12]} (good) to "
            f"{self.bad[:12]} (bad): about {math.ceil(math.log2(len(line) + 1))} steps after BAD and GOOD")
        prepare_scratch(self.scratch, self.tree)
        try:
            code = self.search(line)
        except Stop as e:
            code = e.code
            self.data["stopped"] = e.why
            self.data["interrupted"] = code == INTERRUPTED
        except KeyboardInterrupt:
            code = INTERRUPTED
            self.data.update(stopped="interrupted", interrupted=True)
        self.data["exit"] = code
        self.data["finished"] = record.now()
        self.save()
        record.write_summary(self.results, self.data)
        return code

    def search(self, line):
        """BAD must FAIL and GOOD must not; then the binary search over line,
        and the checks of the culprit it ends at."""
        why = self.check_bad() or self.check_good()
        if why:
            return self.undecided(why)
        lo, hi = self.narrow(line)
        if hi - lo > 1:
            left = line[lo + 1:hi + 1]
            self.final_confidence(line[hi:])
            return self.undecided(f"skipped commits leave {len(left)} candidates: "
                                  + ", ".join(c[:12] for c in left), left)
        return self.answer(line, hi)

    def check_bad(self):
        """BAD first: it must FAIL, and (--rate measure) it gives the rate.
        Why the search cannot go on, or None."""
        if self.rate_mode == "measure":
            st = self.step("bad", self.bad, repeat=self.calibrate)
            if st["build"] == "ok" and st["fails"]:
                self.rate = Rate(st["fails"], st["trials"], f"measured on BAD {self.bad[:12]}: "
                                 f"{st['fails']}/{st['trials']} in {self.calibrate} guests")
        else:
            self.rate = self.recorded
            st = self.step("bad", self.bad)
        if st["verdict"] != "bad":
            return f"BAD {self.bad[:12]} " + (st["why"] if st["verdict"] == "skip" else
                                              f"did not FAIL in {st['runs']} runs")
        self.data["rate"] = self.rate_record()
        log(f"FAIL rate: {self.rate.source} (rate >= {stats.pct(self.rate.low)} at 95%); a good step "
            f"needs {self.wanted()} clean runs (miss <= {stats.pct_up(self.miss)} each"
            + (", capped by --max-runs)" if self.wanted() == self.max_runs else ")"))
        return None

    def check_good(self):
        """GOOD must not FAIL; one that cannot be judged is taken on the
        user's word. Why the search cannot go on, or None."""
        st = self.step("good", self.good)
        if st["verdict"] == "bad":
            return f"GOOD {self.good[:12]} FAILs too: the bug is older than GOOD"
        if st["verdict"] == "skip":
            self.data["notes"].append(f"GOOD {self.good[:12]} could not be judged ({st['why']}): "
                                      "taken as good on your word, and not counted in the confidence")
        st["confidence"] = self.confidence()
        return None

    def narrow(self, line):
        """The binary search: (lo, hi), the indexes in line of the last good
        commit (-1: GOOD) and the first bad one; hi - lo > 1 when skipped
        commits leave more than one candidate."""
        lo, hi, tried = -1, len(line) - 1, set()
        while hi - lo > 1:
            mid = self.pick(lo, hi, tried)
            if mid is None:
                break
            tried.add(mid)
            st = self.step("bisect", line[mid])
            if st["verdict"] == "bad":
                hi = mid
            elif st["verdict"] == "good":
                lo = mid
            st["confidence"] = self.confidence()
            log(f"step {st['n']}: {st['verdict']}" + (f" ({st['why']})" if st["why"] else "")
                + f"; confidence so far {st['confidence']:.3f}")
        self.data["skipped"] = [{"commit": s["commit"], "why": s["why"]} for s in self.steps
                                if s["verdict"] == "skip" and s["role"] == "bisect"]
        return lo, hi

    def pick(self, lo, hi, tried):
        """The untested commit of (lo, hi) nearest the middle, or None."""
        mid = (lo + hi) // 2
        cands = sorted((i for i in range(lo + 1, hi) if i not in tried), key=lambda i: (abs(i - mid), i))
        return cands[0] if cands else None

    def undecided(self, why, candidates=None):
        self.data["stopped"] = why
        if candidates:
            self.data["candidates"] = candidates
        log(f"no culprit named: {why}")
        return UNDECIDED

    def rate_record(self):
        r = self.rate
        return {"fails": r.fails, "trials": r.trials, "low": r.low, "source": r.source,
                "good_step_runs": self.wanted()}

    def save(self):
        if self.data is not None:
            record.save(self.results, self.data)


class Stop(Exception):
    """A row's run-in-qemu.sh exit that ends the whole bisection: an
    interrupt, or krepro's own usage error."""

    def __init__(self, code, why):
        super().__init__(why)
        self.code, self.why = code, why
