"""The gate's culprit patch: a row that flipped between BASE and BASE+SERIES
is bisected inside the series, with krepro bisect's search (search.py:
its steps, rate, confidence, re-FAIL and revert checks), and the patch is
named.

The series is already commits in the gate's tree: branch
krepro-x-gate-<name>-series, GOOD = BASE (the commit before the first series
patch), BAD = the series' tip. Each commit is checked against its patch file
(git patch-id) before anything is built, so a named commit is a named patch.

The search runs in the gate's tree itself, not in a clone: the tree is the
gate's own (the cache's, or the gate's clone of a user's tree), and kernels.sh
build-tree builds it in the very object directory the gate built the series
in, so BAD's build finds its objects there and rebuilds nothing it need not.

A regression (PASS->FAIL, PASS->OTHER) is bisect's own question: the first
commit that FAILs (OTHER counted as a FAIL: run-in-qemu.sh --any-report).
A fix (FAIL->PASS) asks for the first commit that PASSes: the same search
on the line read from the tip back to BASE (FixBisect), where the last commit
that still FAILs is the search's "culprit" and the fix is the commit after it.
The search's sure verdict is a FAIL either way and its uncertain one a clean
row, so its confidence (the product over clean verdicts of 1 - miss) means the
same in both directions.

Rows share builds, never verdicts: two rows may have two culprits, so each
row is its own bisection; a commit's kernel does not depend on the row, so
a second bisection that visits the same commits (as it does while the
verdicts agree) reuses their images (SharedBuilds, keyed by the checkout's
content) and only boots guests.
"""
import os
import shutil
import time

from . import culprit_render
from .machinery import Build, Machinery, first_parent_line, git, is_merge
from .record import log
from .search import DEFAULT_CALIBRATE, Bisect
from ..protocol import INTERRUPTED, USAGE
from ..options import UsageError
from ..untrusted import safe_git


def patch_id(text):
    """git patch-id --stable of a patch or a commit's diff: the same for a
    patch file and the commit git am made of it."""
    # No repository: patch-id reads its input only (not one found from here).
    p = safe_git(os.sep, "patch-id", "--stable", input=text)
    return p.stdout.split()[0] if p.returncode == 0 and p.stdout.strip() else None


def series_line(tree, good, bad, patches):
    """[(commit, patch)] of the series as commits GOOD..BAD on the first-parent
    line, oldest first; raises UsageError when they are not the series."""
    _, _, line = first_parent_line(tree, good, bad)
    if len(line) != len(patches):
        raise UsageError(f"{len(line)} commits between GOOD and BAD, but {len(patches)} patches in the series")
    for commit, patch in zip(line, patches):
        try:
            with open(patch, errors="replace") as f:
                want = patch_id(f.read())
        except OSError as e:
            raise UsageError(f"cannot read {patch}: {e.strerror}")
        # git's own diff, whatever an external diff or textconv configured would make of it.
        have = patch_id(git(tree, "show", "--no-ext-diff", "--no-textconv", "--format=", commit) + "\n")
        if want is None or want != have:
            raise UsageError(f"commit {commit[:12]} is not {os.path.basename(patch)} (their patch-ids differ): "
                             "the series branch is not the series")
    return list(zip(line, patches))


class SharedBuilds:
    """A Machinery whose builds are kept by the content of the checkout (its
    index's tree, the revert included): a commit built for one row's
    bisection is not built again for another's."""

    def __init__(self, machinery, images):
        self.m, self.images, self.made = machinery, images, 0

    def key(self, tree):
        if git(tree, "diff", "--quiet", check=False).returncode:
            return None        # the work tree differs from its index: no sound key
        return git(tree, "write-tree", check=False).stdout.strip() or None

    def build(self, tree, image):
        k = self.key(tree)
        if k in self.images:
            done = self.images[k]
            os.makedirs(os.path.dirname(image), exist_ok=True)
            for ext in ("", ".config"):
                if os.path.isfile(done.image + ext) and \
                        os.path.realpath(done.image + ext) != os.path.realpath(image + ext):
                    shutil.copyfile(done.image + ext, image + ext)
            return Build(True, image, 0.0, done.text, why=f"the same tree as {os.path.basename(done.image)}")
        b = self.m.build(tree, image)
        self.made += 1
        if b.ok and k:
            self.images[k] = b
        return b

    def unlink_debug(self, image):
        self.m.unlink_debug(image)

    def row(self, *args, **kw):
        return self.m.row(*args, **kw)


class FixBisect(Bisect):
    """The first commit that PASSes, as bisect's search on the reversed
    line: its GOOD is the series' tip (PASS), its BAD is BASE (FAIL, where
    the rate is measured), its culprit the last commit that still FAILs."""

    def resolve(self):
        base, tip, line = first_parent_line(self.tree, self.good_arg, self.bad_arg)
        self.good, self.bad = tip, base
        return ([base] + line[:-1])[::-1]

    def search(self, line):
        self.data["direction"] = "fix"
        return super().search(line)

    def check_culprit(self, culprit, parent):
        # parent: the search's last clean commit, the commit after the culprit
        # on the series: the fix.
        self.fix = parent
        super().check_culprit(culprit, parent)
        c = self.data["culprit"]
        c["fix"] = {"commit": parent, "subject": git(self.tree, "log", "-1", "--format=%s", parent)}
        c["flags"] = [f for f in c["flags"] if "merge" not in f]
        if is_merge(self.tree, parent):
            c["flags"].append("the fix is a merge: the cure came with the merged branch")

    def revert_check(self, culprit, merge):
        """The tip with the fix reverted must FAIL again. The returned
        verdict is the check's, in the regression's words (PASS: checked),
        and "row" is what the reverted kernel's row said."""
        st = self.reverted_step(self.good, self.fix, is_merge(self.tree, self.fix),
                                "the fix does not revert cleanly on the series' tip")
        if st.get("verdict") == "not applied":
            return st
        if st["verdict"] == "bad":
            return {"verdict": "PASS", "row": "FAIL", "step": st["n"],
                    "why": f"the series' tip with the fix reverted FAILs again ({st['fails']} in {st['runs']} runs)"}
        if st["verdict"] == "good":
            return {"verdict": "FAIL", "row": "PASS", "step": st["n"],
                    "why": f"the series' tip with the fix reverted still PASSes ({st['clean']} clean runs): "
                    "the series cures it elsewhere too"}
        return {"verdict": "undecided", "step": st["n"], "why": f"the revert could not be judged ({st['why']})"}


def one_row(tree, good, bad, row, machinery, results, arch, calibrate):
    """Bisect one flipped row: a dict for gate.md (culprit_render) with the
    bisection's exit status."""
    kind = FixBisect if row["change"] == "fix" else Bisect
    d = os.path.join(results, "culprit", row["repro"])
    b = kind(tree, good, bad, row["repro"], machinery, d, arch=arch, rate_mode="measure",
             calibrate=calibrate, scratch=tree)
    t0 = time.monotonic()
    try:
        line = b.resolve()
        if os.path.exists(os.path.join(d, "bisect.json")):
            raise UsageError(f"{d} holds a bisection already")
        code = b.run(line)
    except UsageError as e:
        return dict(row, code=USAGE, stopped=str(e), dir=None)
    data = b.data
    return dict(row, code=code, dir=os.path.relpath(d, results), data=data,
                seconds=round(time.monotonic() - t0), guests=sum(s["runs"] for s in data["steps"]),
                builds=getattr(machinery, "made", None))


def find(results, flipped, tree, good, bad, patches, arch, calibrate=DEFAULT_CALIBRATE, machinery=None):
    """Bisect each flipped row ({"repro", "change", "series_decision"}):
    (section lines for gate.md, interrupted?). machinery: a function of
    "OTHER counts as a FAIL" giving the build and row interface (the tests'
    fake), else machinery.Machinery."""
    try:
        line = series_line(tree, good, bad, patches)
    except UsageError as e:
        return culprit_render.not_searched(str(e), flipped), False
    # The rate: measured on the FAIL side with `calibrate` guests in a row of
    # fixed count (krepro bisect --rate measure). Not the gate row's FAILs:
    # that row stopped at its first FAIL (1/1 bounds the rate at >= 5%, which
    # would ask 90 clean runs a step) and it is the very row that made the
    # gate bisect, a sample chosen by its outcome; a recorded rate is keyed by
    # a build the series is not.
    images, out, interrupted = {}, [], False
    for row in flipped:
        # A new kernel report (OTHER) is the regression: it counts as a FAIL.
        other = row["series_decision"] == "OTHER"
        m = SharedBuilds(machinery(other) if machinery else
                         Machinery(arch, ["--any-report"] if other else []), images)
        log(f"{row['repro']}: {row['change']} on the series: bisecting its {len(line)} patches")
        r = one_row(tree, good, bad, row, m, results, arch, calibrate)
        out.append(r)
        if r["code"] == INTERRUPTED:
            interrupted = True
            break
    return culprit_render.section(out, line, results), interrupted
