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

How sure the answer is: bisect/confidence.py.
"""
import math
import os
import sys

from .. import arches
from . import record
from .. import stats
from .confidence import (Rate, confidence_of, contradicted, good_step_runs, measured_on, miss_chance)
from .machinery import (apply_revert, checkout, first_parent_line, git, is_merge, prepare_scratch,
                        scratch_dir, subject, unjudged)
from ..protocol import CLEAN, DEFAULT_MISS, INTERRUPTED, REPRODUCED, UNDECIDED, USAGE

DEFAULT_FLOOR = 0.66
DEFAULT_CALIBRATE = 10
# FAILs the culprit must show again (KernelCI asked three of a culprit).
REFAILS = 3


def log(msg):
    print(f"krepro: bisect: {msg}", file=sys.stderr, flush=True)


class Bisect:
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

    def cross_check(self, bad_commits):
        """Every run on a commit the answer calls bad (the culprit and the
        commits after it on the line; the revert is another tree) against
        the rate in use. Returns a note when they contradict it; the rate is
        then what those runs measure (kept up to date with later runs)."""
        measured = measured_on(self.steps, bad_commits)
        if self.replaced:
            self.rate = measured
            return None
        if not contradicted(self.rate.low, measured.fails, measured.trials):
            return None
        was, self.rate, self.replaced = self.rate, measured, True
        return (f"the rate used ({was.source}, rate >= {stats.pct(was.low)}) is contradicted by the "
                f"runs on the commits the answer calls bad ({measured.fails} FAILs in {measured.trials} "
                "runs): the "
                f"confidence is recomputed with rate >= {stats.pct(self.rate.low)}")

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

    def answer(self, line, hi):
        """line[hi] is the culprit if the confidence reaches the floor, and
        again once its checks are done and their runs weighed."""
        culprit = line[hi]
        parent = line[hi - 1] if hi > 0 else self.good
        conf = self.final_confidence(line[hi:])
        if conf < self.floor:
            return self.below_floor(conf, culprit, parent)
        self.check_culprit(culprit, parent)
        # The culprit's second row is evidence about the rate too.
        conf = self.final_confidence(line[hi:])
        self.data["culprit"]["confidence"] = conf
        if self.data["culprit"]["revert"]["verdict"] == "FAIL":
            # One commit brought the bug in (the search's model), so this
            # is not it: a good verdict on the way was a miss, or the bug
            # has another cause too.
            self.data["candidate"], self.data["culprit"] = self.data["culprit"], None
            return self.undecided(f"BAD with {culprit[:12]} reverted still FAILs: it is not the commit "
                                  "that brought the bug in, so a good verdict on the way was a miss "
                                  "(or the bug has a second cause); the search ended there", [culprit])
        if conf < self.floor:
            self.data["candidate"], self.data["culprit"] = self.data["culprit"], None
            return self.below_floor(conf, culprit, parent)
        return self.verdict()

    def final_confidence(self, bad_commits):
        """The confidence over every good verdict, once the runs on the
        commits the answer calls bad were checked against the rate."""
        note = self.cross_check(set(bad_commits))
        if note:
            self.data["notes"].append(note)
            log(note)
        if self.replaced:
            self.data["rate"] = self.rate_record()
        conf = self.confidence()
        self.data["confidence"] = conf
        return conf

    def below_floor(self, conf, culprit, parent):
        worst = max((s for s in self.steps if s.get("miss") is not None and s["verdict"] == "good"
                     and s["role"] in ("good", "bisect")), key=lambda s: s["miss"], default=None)
        return self.undecided(
            f"confidence {conf:.3f} is below the floor {self.floor}: the search ended at "
            f"{culprit[:12]} (last good {parent[:12]}), but a good verdict may have been a miss"
            + (f" (the weakest: step {worst['n']}, {worst['clean']} clean runs, miss "
               f"{worst['miss']:.2f} at rate >= {stats.pct(self.rate.low)})" if worst else "")
            + "; raise --max-runs, or measure the rate with more guests (--calibrate)",
            [culprit])

    def pick(self, lo, hi, tried):
        """The untested commit of (lo, hi) nearest the middle, or None."""
        mid = (lo + hi) // 2
        cands = sorted((i for i in range(lo + 1, hi) if i not in tried), key=lambda i: (abs(i - mid), i))
        return cands[0] if cands else None

    def check_culprit(self, culprit, parent):
        """The culprit FAILs REFAILS times again, BAD with it reverted PASSes; its kernel
        text against its parent's; a merge."""
        c = {"commit": culprit, "subject": subject(self.tree, culprit), "parent": parent,
             "confidence": None, "merge": False, "same_text": None, "refail": None,
             "revert": None, "verified": False}
        self.data["culprit"] = c
        c["merge"] = is_merge(self.tree, culprit)
        texts = {s["commit"]: s["text"] for s in self.steps if s["text"]}
        if culprit in texts and parent in texts:
            c["same_text"] = texts[culprit] == texts[parent]
        st = self.step("culprit", culprit, again=True)
        c["refail"] = {"fails": st["fails"], "runs": st["runs"], "step": st["n"],
                       "verdict": "FAIL" if st["fails"] >= REFAILS else "not enough FAILs"}
        c["revert"] = self.revert_check(culprit, c["merge"])
        c["verified"] = st["fails"] >= REFAILS and c["revert"]["verdict"] == "PASS"
        flags = []
        if c["same_text"]:
            flags.append("its kernel .text is identical to its parent's: the change may not be in "
                         "the code that runs (a config, data or build change), or a verdict was luck")
        if c["merge"]:
            flags.append("it is a merge: the bug came with the merged branch; bisect that branch next")
        if st["fails"] < REFAILS:
            flags.append(f"unverified: the culprit FAILed {st['fails']} times in {st['runs']} runs "
                         f"of its check, {REFAILS} wanted" + (f" ({st['why']})" if st["why"] else ""))
        if c["revert"]["verdict"] != "PASS":
            flags.append(f"unverified: {c['revert']['why']}")
        c["flags"] = flags
        self.save()

    def verdict(self):
        c = self.data["culprit"]
        ok = c["verified"] and not c["same_text"]
        self.data["stopped"] = "culprit named" + ("" if ok else ", with doubts (its flags)")
        log(f"culprit {c['commit'][:12]} (\"{c['subject']}\"), confidence {c['confidence']:.3f}"
            + "".join(f"; {f}" for f in c["flags"]))
        return CLEAN if ok else REPRODUCED

    def revert_check(self, culprit, merge):
        """BAD with the culprit reverted must PASS at the bisection's miss
        target; the culprit itself FAILed in the search (or is BAD)."""
        checkout(self.scratch, self.bad)
        said = apply_revert(self.scratch, culprit, merge)
        if said:
            return {"verdict": "not applied", "step": None,
                    "why": f"the culprit does not revert cleanly on BAD ({said})"}
        st = self.step("revert", self.bad, label=f"{self.bad[:12]}-revert-{culprit[:12]}", prepared=True)
        git(self.scratch, "revert", "--quit", check=False)
        if st["verdict"] == "good":
            miss = miss_chance(self.rate, st["clean"])
            return {"verdict": "PASS", "why": f"BAD with the culprit reverted: {st['clean']} clean runs "
                    f"(miss <= {stats.pct_up(miss)} at 95%)", "step": st["n"]}
        if st["verdict"] == "bad":
            return {"verdict": "FAIL", "why": "BAD with the culprit reverted still FAILs: the culprit "
                    "is not the whole cause (or not the cause)", "step": st["n"]}
        return {"verdict": "undecided", "why": f"the revert could not be judged ({st['why']})",
                "step": st["n"]}

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
