"""krepro bisect's checks of the commit a search ends at: the culprit FAILs
again, BAD with it reverted PASSes, its kernel text against its parent's, a
merge; and the confidence once the runs on the commits the answer calls
bad were weighed against the rate (bisect/search.py runs the search)."""
from .. import stats
from .confidence import contradicted, measured_on, miss_chance
from .machinery import apply_revert, checkout, git, is_merge, subject
from .record import log
from ..protocol import CLEAN, REPRODUCED

# FAILs the culprit must show again (KernelCI asked three of a culprit).
REFAILS = 3


class CulpritCheck:
    """The part of a Bisect (bisect/search.py) that judges its answer: it
    uses the bisection's steps, rate, data and step()."""

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

    def reverted_step(self, on, commit, merge, cannot):
        """A step on commit `on` with `commit` reverted: the step, or a
        "not applied" check saying `cannot` (and why) when it does not revert."""
        checkout(self.scratch, on)
        said = apply_revert(self.scratch, commit, merge)
        if said:
            return {"verdict": "not applied", "step": None, "why": f"{cannot} ({said})"}
        st = self.step("revert", on, label=f"{on[:12]}-revert-{commit[:12]}", prepared=True)
        git(self.scratch, "revert", "--quit", check=False)
        return st

    def revert_check(self, culprit, merge):
        """BAD with the culprit reverted must PASS at the bisection's miss
        target; the culprit itself FAILed in the search (or is BAD)."""
        st = self.reverted_step(self.bad, culprit, merge, "the culprit does not revert cleanly on BAD")
        if st.get("verdict") == "not applied":
            return st
        if st["verdict"] == "good":
            miss = miss_chance(self.rate, st["clean"])
            return {"verdict": "PASS", "why": f"BAD with the culprit reverted: {st['clean']} clean runs "
                    f"(miss <= {stats.pct_up(miss)} at 95%)", "step": st["n"]}
        if st["verdict"] == "bad":
            return {"verdict": "FAIL", "why": "BAD with the culprit reverted still FAILs: the culprit "
                    "is not the whole cause (or not the cause)", "step": st["n"]}
        return {"verdict": "undecided", "why": f"the revert could not be judged ({st['why']})",
                "step": st["n"]}
