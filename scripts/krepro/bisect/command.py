"""krepro bisect's command line: its options and --help, the checks made
before anything is built, the dry run, and the start of the search
(bisect/search.py)."""
import datetime
import json
import math
import os
import sys

from .. import arches, stats
from .confidence import Rate
from .machinery import Machinery, built_before, scratch_dir
from .record import log
from .search import DEFAULT_CALIBRATE, DEFAULT_FLOOR, Bisect
from ..paths import TOP
from ..protocol import CLEAN, DEFAULT_MISS, USAGE
from ..untrusted import say
# The same ranges and words as run-in-qemu.sh's options.
from ..options import Parser, UsageError, bounded, probability

HELP = """\
usage: python3 -m krepro bisect --good G --bad B [options] REPRO
       make bisect TREE=DIR GOOD=G BAD=B REPRO=R

Find the commit of TREE's first-parent line, between GOOD (the bug is
absent) and BAD (REPRO FAILs), that brought the bug in, with krepro's rows,
and say how sure that answer is. Nothing in TREE is checked out or written:
the steps are built in a scratch clone under $KREPRO_CACHE/bisect/, laid out
as krepro's own trees (ccache serves what it shares with the flavours), in
one object directory, with run-in-qemu.sh --tree's build. Then BAD's rate
runs, GOOD's check, about log2(commits) steps, and the revert check.

Options:
  --tree DIR        the git tree (default: .)
  --good G          a commit without the bug
  --bad B           a later commit with it; GOOD must be an ancestor of BAD
  --arch A          x86_64 | arm (default x86_64, or $KREPRO_ARCH)
  --branch B        with --rate recorded: the stable branch whose record applies
                    (default: the tree's own, from its Makefile; 6.1 | 6.12)
  --rate R          measure (default): run REPRO --calibrate times on BAD and
                    weigh every step's clean runs with that FAIL rate's 95%
                    lower bound (run-in-qemu.sh --rate); recorded: the
                    reproducer's recorded rate of the tree's branch instead
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
checked: it must FAIL 3 more times within a step's cap, and BAD with it
reverted (git revert --no-commit) must PASS with a good step's clean runs; a
kernel whose .text is identical to its parent's, and a merge, are flagged.
Too few FAILs for the rate (under 5% chance) on the commits the answer calls
bad replace it with what those runs measured, and the confidence is retaken.

Exit status: 0 a culprit named (confidence >= floor) that FAILs 3 times again,
whose revert PASSes and whose text differs from its parent's; 1 a culprit
named, but unverified (fewer FAILs again; the revert does not apply, build or
decide) or its text identical to its parent's; 125 no culprit named: the
confidence is below the floor, BAD does not FAIL or build, GOOD FAILs, the
revert still FAILs, or skipped commits leave more than one candidate (it says
where it stopped and why); 128 usage error (one line on stderr), or krepro's
own reproducers or guest image not building; 130 interrupted. bisect.json and
summary.md are written in every case but a usage error.
"""


def parse(argv):
    p = Parser(prog="python3 -m krepro bisect", add_help=False, allow_abbrev=False)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("--tree", default=".")
    p.add_argument("--good")
    p.add_argument("--bad")
    p.add_argument("--arch", default=os.environ.get("KREPRO_ARCH") or "x86_64")
    p.add_argument("--branch")
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


def cost_note(tree, arch):
    """The cold build's and a step's cost, as docs/performance.md records them."""
    if built_before(scratch_dir(tree), arch):
        return ("this tree was built here before: the first step rebuilds what its checkout "
                "changed, as every later step does")
    found = []
    for name, key, what in (
            ("2026-12-03-tree-cold-build.json", "seconds", "a cold build with nothing in ccache"),
            ("2026-12-07-bisect-proof-6.12.json", "first step build",
             "a first step whose sources were mostly the flavours'"),
            ("2026-12-03-bisect-step-build.json", "seconds", "a later step's build")):
        try:
            with open(os.path.join(TOP, "bench", "records", name)) as f:
                rec = json.load(f)
            found.append(f"{what} took {rec['figures'][key]} on {rec['date']}")
        except (OSError, ValueError, KeyError):
            pass
    return ("the first step builds the tree in its own object directory, the largest cost "
            "on 2 cores unless ccache holds its sources" + (
                f" ({'; '.join(found)}: docs/performance.md)" if found else
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
    print(f"cost: {cost_note(b.tree, b.arch)}")
    return CLEAN


def main(argv):
    try:
        o = parse(argv)
        if o.help:
            print(HELP.format(calibrate=DEFAULT_CALIBRATE, miss=DEFAULT_MISS, floor=DEFAULT_FLOOR), end="")
            return CLEAN
        return start(o)
    except UsageError as e:
        print(f"krepro: bisect: {say(e)} (see --help)", file=sys.stderr)
        return USAGE


def record_branch(o):
    """The stable branch whose recorded rate --rate recorded takes: --branch,
    else the tree's own (its Makefile), which must be one krepro records."""
    from .. import branches
    b = o.branch or branches.of_tree(o.tree)
    if b is None:
        raise UsageError(f"--rate recorded: {o.tree}'s stable branch is unknown (no VERSION and "
                         "PATCHLEVEL in its Makefile): give --branch, or use --rate measure")
    if b not in branches.BRANCHES:
        raise UsageError(f"--rate recorded: krepro records no rates for branch {b[:40]} "
                         f"(only {' '.join(branches.BRANCHES)}): use --rate measure")
    return b


def start(o):
    from .. import meta as metamod, rates
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
        branch = record_branch(o)
        rec, note = rates.lookup(o.repro[0], o.arch, branch, None, accel="tcg")
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
    log(cost_note(o.tree, o.arch))
    log(f"results: {results}")
    return b.run(line)
