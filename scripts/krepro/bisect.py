"""krepro bisect: drive a whole bisection with krepro's rows, and say how
sure its answer is.

The search is krepro's own binary search over `git rev-list --first-parent
GOOD..BAD`, not `git bisect`: no bisect state in the user's repository (its
checkout, refs/bisect and a second bisection of the same repository stay
free), skips are explicit (the untested commit nearest the middle is tried
next), and each step's verdict comes with the runs behind it, which the
confidence needs. First-parent keeps a merge whole: a merge can be the
culprit (flagged), and its branch can be bisected after.

Every checkout happens in a scratch clone under the cache (`git clone
--shared`); bisect_machinery.py builds and runs it.

How sure the answer is: bisect_confidence.py.
"""
import datetime
import json
import math
import os
import sys

from . import arches, bisect_record as record, stats
# The same ranges and words as run-in-qemu.sh's options.
from .cli import bounded, probability
from .paths import TOP
from .protocol import CLEAN, DEFAULT_MISS, INTERRUPTED, REPRODUCED, UNDECIDED, USAGE
from .bisect_confidence import (Rate, confidence_of, contradicted, good_step_runs, measured_on,
                                miss_chance)
from .bisect_machinery import (Machinery, apply_revert, checkout, first_parent_line, git, is_merge,
                               prepare_scratch, scratch_dir, subject)
from .usage import Parser, UsageError

DEFAULT_FLOOR = 0.66
DEFAULT_CALIBRATE = 10
# FAILs the culprit must show again (KernelCI asked three of a culprit).
REFAILS = 3

HELP = """\
usage: python3 -m krepro bisect --good G --bad B [options] REPRO
       make bisect TREE=DIR GOOD=G BAD=B REPRO=R

Find the commit of TREE's first-parent line, between GOOD (the bug is
absent) and BAD (REPRO FAILs), that brought the bug in, with krepro's rows,
and say how sure that answer is. Nothing in TREE is checked out or written:
the steps are built in a scratch clone under the cache ($KREPRO_CACHE/bisect/)
in one object directory, with run-in-qemu.sh --tree's build.

Cost: the first step (BAD) builds the tree from scratch; every later step
rebuilds what its checkout changed. Then BAD's rate runs, GOOD's check, about
log2(commits) steps, and the revert check.

Options:
  --tree DIR        the git tree (default: .)
  --good G          a commit without the bug
  --bad B           a later commit with it; GOOD must be an ancestor of BAD
  --arch A          x86_64 | arm (default x86_64, or $KREPRO_ARCH)
  --rate R          measure (default): the driver runs REPRO --calibrate times
                    on BAD first and weighs every clean run with that FAIL
                    rate's 95% lower bound (the general case: krepro has no
                    record for this history); recorded: the reproducer's
                    recorded rate instead (no guests spent on BAD's rate)
  --calibrate N     guests on BAD for --rate measure, 1-1000 (default {calibrate})
  --miss P          target miss chance of one good verdict, 0<P<1 (default {miss})
  --floor F         name no culprit below this confidence, 0<F<1 (default {floor})
  --max-runs N      cap on guests per step, 1-1000 (default 20); a good step
                    at the cap has a larger miss chance, and the confidence says so
  --any-report      count a kernel report that is not the bug (OTHER) as a FAIL
  --timeout SEC     wall-clock limit per guest (run-in-qemu.sh --timeout)
  --results DIR     where bisect.json, summary.md and each row's run go
                    (default results/bisect-<time>; one holding bisect.json is refused)
  --dry-run         check everything, then say what would be built and booted;
                    builds and boots nothing

The confidence is the chance that no good verdict on the way was a miss:
the product over good steps (GOOD's check included) of 1 - (1 - p)^c, c the
step's clean runs, p the rate's 95% lower bound (so it holds at 95%). A step
that does not build, or whose row is BROKEN, SKIP, HANG, OTHER or undecided
with anything but clean runs, is skipped and listed. The culprit is then
checked: it must FAIL 3 more times within a step's cap (KernelCI asked three),
and BAD with it reverted (git revert --no-commit) must PASS with a good step's
clean runs; a kernel whose .text is identical to
its parent's, and a merge, are flagged. Every run on the commits the answer
calls bad is checked against the rate: too few FAILs for it (under 5% chance)
replace it with what those runs measured, and the confidence is taken again.

Exit status: 0 a culprit named (confidence >= floor) that FAILs 3 times again,
whose revert PASSes and whose text differs from its parent's; 1 a culprit
named, but unverified (fewer FAILs again; the revert does not apply, build or
decide) or its text identical to its parent's; 125 no culprit named: the confidence
is below the floor, BAD does not FAIL or build, GOOD FAILs, the revert still
FAILs, or skipped commits leave more than one candidate (it says where it
stopped and why); 128 usage error (one line on stderr), or krepro's own
reproducers or guest image not building; 130 interrupted. bisect.json and
summary.md are written in every case but a usage error.
"""


def log(msg):
    print(f"krepro: bisect: {msg}", file=sys.stderr, flush=True)


# --- the search ---

class Bisect:
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
        st = {"n": n, "role": role, "commit": commit, "subject": subject(self.tree, commit),
              "build_seconds": None, "build": None, "text": None, "rows": [], "runs": 0,
              "fails": 0, "trials": 0, "clean": 0, "verdict": "skip", "why": "", "miss": None,
              "confidence": None}
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
        r = self.m.row(image, self.repro, d, **kw)
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

    @staticmethod
    def unjudged(r):
        """Why a row without a FAIL says nothing clean, or None: it ended
        BROKEN, SKIP, HANG or OTHER, or had such runs, or no clean one."""
        other = {o: c for o, c in r["counts"].items() if o != "PASS"}
        if not other and r.get("decision") in ("PASS", "UNDECIDED") and r["counts"].get("PASS"):
            return None
        return (f"row {r.get('decision') or 'not decided'}"
                + (f" ({', '.join(f'{o} {c}' for o, c in other.items())})" if other else "")
                + (f": {r['why']}" if r.get("why") else ""))

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
            st["why"] = self.unjudged(r) or ""
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
                st["why"] = self.unjudged(r) or f"no FAIL in {r.get('runs', 0)} more runs"
                break
        st["verdict"] = "bad" if st["fails"] else "skip"
        if st["fails"] and st["fails"] < REFAILS:
            st["why"] = f"{st['fails']} FAILs in {st['runs']} runs, {REFAILS} wanted" + \
                (f" ({st['why']})" if st["why"] else "")

    # -- the confidence --

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

    # -- the whole bisection --

    def run(self):
        os.makedirs(self.results, exist_ok=True)
        line = self.resolve()
        self.data = {"format": 1, "tree": os.path.realpath(self.tree), "good": self.good, "bad": self.bad,
                     "repro": self.repro, "arch": self.arch, "commits": len(line),
                     "rate_mode": self.rate_mode, "miss": self.miss, "floor": self.floor,
                     "max_runs": self.max_runs, "started": record.now(), "finished": None,
                     "interrupted": False, "rate": None, "steps": self.steps, "skipped": [],
                     "culprit": None, "confidence": None, "stopped": None, "notes": [], "exit": None}
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
    def __init__(self, code, why):
        super().__init__(why)
        self.code, self.why = code, why


# --- the command line ---

def parse(argv):
    p = Parser(prog="python3 -m krepro bisect", add_help=False, allow_abbrev=False)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("--tree", default=".")
    p.add_argument("--good")
    p.add_argument("--bad")
    p.add_argument("--arch", default=os.environ.get("KREPRO_ARCH") or "x86_64")
    p.add_argument("--rate", choices=("measure", "recorded"), default="measure")
    p.add_argument("--calibrate", type=bounded("--repeat"), default=DEFAULT_CALIBRATE)
    p.add_argument("--miss", type=probability, default=DEFAULT_MISS)
    p.add_argument("--floor", type=probability, default=DEFAULT_FLOOR)
    p.add_argument("--max-runs", type=bounded("--max-runs"), default=20)
    p.add_argument("--any-report", action="store_true")
    p.add_argument("--timeout", type=bounded("--timeout"))
    p.add_argument("--results")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("repro", nargs="*")
    return p.parse_args(argv)


def cost_note():
    """The cold build's and a step's cost, as docs/performance.md records them."""
    found = []
    for name, what in (("2026-12-03-tree-cold-build.json", "a cold --tree build"),
                       ("2026-12-03-bisect-step-build.json", "a bisect step's build")):
        try:
            with open(os.path.join(TOP, "bench", "records", name)) as f:
                rec = json.load(f)
            found.append(f"{what} took {rec['figures']['seconds']} on {rec['date']}")
        except (OSError, ValueError, KeyError):
            pass
    return ("the first step builds the tree from scratch in its own object directory, the "
            "largest cost on 2 cores" + (f" ({'; '.join(found)}: docs/performance.md)" if found else
                                         " (docs/performance.md has the measured figures)"))


def dry_run(b, line):
    """What the bisection would build and boot; builds and boots nothing."""
    steps = math.ceil(math.log2(len(line) + 1))
    print("krepro: bisect: dry run: nothing is built or booted")
    print(f"{len(line)} commits on the first-parent line of {os.path.realpath(b.tree)} from "
          f"{b.good[:12]} (good) to {b.bad[:12]} (bad)")
    print(f"builds: BAD, GOOD, about {steps} search steps (more where commits are skipped), "
          f"the culprit again and BAD with it reverted: about {steps + 4}, in {b.scratch}")
    if b.rate_mode == "measure":
        print(f"rate: measured on BAD first with {b.calibrate} guests; a good step's clean runs "
              f"follow from it (at most {b.max_runs})")
    else:
        b.rate = b.recorded
        print(f"rate: {b.recorded.source} (rate >= {stats.pct(b.recorded.low)} at 95%): a good step "
              f"needs {b.wanted()} clean runs, a bad one stops at its first FAIL")
    print(f"cost: {cost_note()}")
    return CLEAN


def main(argv):
    try:
        o = parse(argv)
        if o.help:
            print(HELP.format(calibrate=DEFAULT_CALIBRATE, miss=DEFAULT_MISS, floor=DEFAULT_FLOOR), end="")
            return CLEAN
        return start(o)
    except UsageError as e:
        print(f"krepro: bisect: {e} (see --help)", file=sys.stderr)
        return USAGE


def start(o):
    from . import meta as metamod, rates
    if not o.good or not o.bad:
        raise UsageError("--good and --bad are both needed")
    if len(o.repro) != 1:
        raise UsageError(f"one reproducer, not {len(o.repro)}")
    if o.arch not in arches.ARCHES:
        raise UsageError(f"--arch is one of: {' '.join(arches.ARCHES)}, not '{o.arch}'")
    err = metamod.check_names(metamod.sources(), o.arch, o.repro)
    if err:
        raise UsageError(err)
    recorded = None
    if o.rate == "recorded":
        rec, note = rates.lookup(o.repro[0], o.arch, None, accel="tcg")
        if rec is None:
            raise UsageError(f"--rate recorded: {note}; use --rate measure")
        recorded = Rate(rec["fails"], rec["runs"], rates.describe(rec))
    results = os.path.realpath(o.results) if o.results else os.path.join(
        TOP, "results", "bisect-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    if os.path.exists(os.path.join(results, "bisect.json")):
        raise UsageError(f"--results {results} holds a bisection already (bisect.json): give a new directory")
    run_args = ["--any-report"] if o.any_report else []
    if o.timeout:
        run_args += ["--timeout", str(o.timeout)]
    b = Bisect(o.tree, o.good, o.bad, o.repro[0], Machinery(o.arch, run_args), results,
               arch=o.arch, rate_mode=o.rate, calibrate=o.calibrate, miss=o.miss, floor=o.floor,
               max_runs=o.max_runs, recorded=recorded)
    line = b.resolve()     # bad input before anything is built
    if o.dry_run:
        return dry_run(b, line)
    log(cost_note())
    log(f"results: {results}")
    return b.run()
