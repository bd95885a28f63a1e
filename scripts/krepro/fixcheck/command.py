"""python3 -m krepro fixcheck: its options, --help, the checks made before
anything is built, the dry run, and fixcheck.md / fixcheck.json
(check.py does the work)."""
import datetime
import json
import os
import sys

from .. import arches, branches
from . import check
from ..paths import TOP
from ..protocol import CLEAN, INTERRUPTED, USAGE
from ..untrusted import clean, md_cell, say
from ..options import Parser, UsageError

HELP = """\
usage: python3 -m krepro fixcheck REPRO [--tree DIR | --branch B] [--fix PATCH]... [options]
       make fixcheck REPRO=R [TREE=DIR] [FIX=PATCH] [BRANCH=B]

Does the fix hold here? For REPRO and one kernel tree, three answers:
  1. does the tree have the bug: REPRO's row on the tree as it is, --calibrate
     guests (FAIL with its rate's bound, or no FAIL seen);
  2. does the fix apply: the seed's fix for the tree's branch
     (kernel-patches/<id>/fix*.patch, or <id>/<branch dir>/ as branches.tsv
     says), or --fix PATCH; a fix that applies in reverse is in the tree already;
  3. does REPRO PASS with it: a sequential row weighed with the rate of 1
     (run-in-qemu.sh --rate), so it says its miss bound.
Written to RESULTS/fixcheck.md and fixcheck.json, each row's run beside them.
The second is asked first, of the tree's git objects (nothing of the tree
is written; a tree that is no git repository is snapshotted first): a fix
that does not apply ends the check before anything is cloned or built.

  --tree DIR      a kernel tree of yours: its HEAD commit (a git tree), or its
                  files (any other tree, committed into a repository under the
                  cache); cloned under $KREPRO_CACHE/fixcheck/, never written to.
                  Both rows are run-in-qemu.sh --tree builds in one object
                  directory: the second recompiles what the fix touches
  --branch B      6.1 | 6.12: without --tree, the branch's unpatched flavour is
                  the tree (krepro's kernel with the bugs re-created), and the
                  fix is built on it with kernels.sh build-series; with --tree,
                  the branch whose fix patches are taken (default: the tree's
                  own, from its Makefile)
  --fix PATCH     the fix to check instead of the seed's (repeatable, in order)
  --arch A        x86_64 | arm (default x86_64, or $KREPRO_ARCH)
  --calibrate N   guests on the tree as it is, 1-1000 (default 10)
  --max-runs N    cap on guests of the row with the fix, 1-1000 (default 20)
  --miss P        target miss chance of a clean row (default run-in-qemu.sh's)
  --results DIR   where it goes (default results/fixcheck-<repro>-<time>)
  --dry-run       check the options and, where the tree is there to ask (a
                  git tree, the flavours' tree unpacked), whether the fix
                  applies; say what would be built and run; build, boot,
                  unpack, clone and snapshot nothing

Exit status: 0 the fix holds (FAIL as it is, the fix applies, PASS with it);
1 REPRO still FAILs with the fix; 125 undecided: no FAIL on the tree as it
is, the fix does not apply (or is in already), a build fails, a row is
undecided; 128 usage error (one line); 130 interrupted.
"""


def parse(argv):
    p = Parser(prog="python3 -m krepro fixcheck", add_help=False, allow_abbrev=False)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("--tree")
    p.add_argument("--branch", default=None)
    p.add_argument("--fix", action="append", default=[])
    p.add_argument("--arch", default=os.environ.get("KREPRO_ARCH") or "x86_64")
    p.add_argument("--calibrate", type=int, default=10)
    p.add_argument("--max-runs", type=int, default=20)
    p.add_argument("--miss", type=float)
    p.add_argument("--results")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("repro", nargs="*")
    return p.parse_args(argv)


def checked(o):
    """The record to fill, after every check that needs no build; raises UsageError."""
    from .. import meta
    if len(o.repro) != 1:
        raise UsageError(f"one reproducer, not {len(o.repro)}")
    if o.arch not in arches.ARCHES:
        raise UsageError(f"--arch is one of: {' '.join(arches.ARCHES)}, not '{o.arch}'")
    err = meta.check_names(meta.sources(), o.arch, o.repro)
    if err:
        raise UsageError(err)
    for name, v in (("--calibrate", o.calibrate), ("--max-runs", o.max_runs)):
        if not 1 <= v <= 1000:
            raise UsageError(f"{name} wants 1-1000, not {v}")
    if o.miss is not None and not 0 < o.miss < 1:
        raise UsageError(f"--miss wants 0<P<1, not {o.miss}")
    if o.tree and not os.path.isdir(o.tree):
        raise UsageError(f"--tree {o.tree}: not a directory")
    branch = o.branch or os.environ.get("KREPRO_BRANCH") or \
        (branches.of_tree(o.tree) if o.tree else None) or branches.DEFAULT
    if branch not in branches.BRANCHES and not (o.tree and o.fix and not o.branch):
        raise UsageError(f"--branch is one of: {' '.join(branches.BRANCHES)}, not '{branch[:40]}'"
                         + (" (give --fix for a tree of another branch)" if o.tree else ""))
    fixes = check.fix_patches(o.repro[0], branch, o.fix)
    return {"repro": o.repro[0], "arch": o.arch, "branch": branch,
            "tree": os.path.realpath(o.tree) if o.tree else f"{branch} unpatched flavour",
            "fix": [os.path.relpath(f, TOP) if f.startswith(TOP + os.sep) else f for f in fixes],
            "notes": [], "as_is": None, "applies": None, "with_fix": None, "stopped": None,
            "exit": None}, fixes


def answers(rec):
    """The three rows of the answer table."""
    a, ap, f = rec["as_is"], rec["applies"], rec["with_fix"]
    q1 = "-" if not a else {"FAIL": "yes", "PASS": "no FAIL seen"}.get(a["decision"], "undecided") + f": {a['cell']}"
    q2 = "-" if not ap else ("yes" if ap["ok"] else f"no: {ap['why']}")
    q3 = "-" if not f else {"PASS": "yes", "FAIL": "no"}.get(f["decision"], "undecided") + f": {f['cell']}"
    return [("does the tree have the bug?", q1, "as-is/summary.md" if a else ""),
            (f"does the fix apply? ({', '.join(os.path.basename(x) for x in rec['fix'])})", q2, ""),
            (f"does {rec['repro']} PASS with it?", q3, "with-fix/summary.md" if f else "")]


def render(rec, why):
    md = [clean(f"# krepro fixcheck: {rec['repro']} on {rec['tree']} (branch {rec['branch']}, {rec['arch']})"),
          "", "| question | answer | evidence |", "|---|---|---|"]
    md += ["| " + " | ".join(md_cell(x) for x in r) + " |" for r in answers(rec)]
    md += ["", clean(f"**{why[0].upper() + why[1:]}** (exit {rec['exit']}).")]
    md += [clean(f"- note: {n}") for n in rec["notes"]]
    return "\n".join(md) + "\n"


def finish(rec, results):
    code, why = check.verdict(rec)
    if rec.get("interrupted"):
        code, why = INTERRUPTED, "interrupted: " + why
    rec["exit"] = code
    os.makedirs(results, exist_ok=True)
    with open(os.path.join(results, "fixcheck.json"), "w") as f:
        json.dump(rec, f, indent=1)
    text = render(rec, why)
    with open(os.path.join(results, "fixcheck.md"), "w") as f:
        f.write(text)
    print(text + f"written: {clean(results)}/fixcheck.md, fixcheck.json")
    return code


def main(argv, tools=None):
    try:
        o = parse(argv)
        if o.help:
            print(HELP, end="")
            return CLEAN
        rec, fixes = checked(o)
        results = os.path.realpath(o.results) if o.results else os.path.join(
            TOP, "results", f"fixcheck-{rec['repro']}-" + datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
        if os.path.exists(os.path.join(results, "fixcheck.json")):
            raise UsageError(f"--results {results} holds a check already (fixcheck.json): give a new directory")
        env_branch = rec["branch"] if rec["branch"] in branches.BRANCHES else branches.DEFAULT
        tools = tools or check.Tools(rec["arch"], env_branch)
        if o.dry_run:
            return dry_run(rec, fixes, o, tools)
        return run(rec, fixes, results, o, tools)
    except UsageError as e:
        print(f"krepro: fixcheck: {say(e)} (see --help)", file=sys.stderr)
        return USAGE


def run(rec, fixes, results, o, tools):
    try:
        check.check(rec, tools, fixes, results, o)
    except check.Undecided as e:
        rec["stopped"] = str(e)
    except check.Stop as e:
        if e.code == USAGE:
            print("krepro: fixcheck: run-in-qemu.sh refused its arguments (see above)", file=sys.stderr)
            return USAGE
        rec["interrupted"] = True
    except KeyboardInterrupt:
        rec["interrupted"] = True
    return finish(rec, results)


def dry_run(rec, fixes, o, tools):
    print("krepro: fixcheck: dry run: nothing is built, booted, unpacked or cloned")
    print(f"tree: {rec['tree']}" + (" (cloned under the cache; its HEAD, or a snapshot of its files)" if o.tree else ""))
    print(f"fix: {' '.join(rec['fix'])}")
    found = check.dry_applies(tools, rec, o, fixes)
    if found is None:
        print("applies: not checked yet: " + (
            "the tree is no git tree; a run snapshots it, then checks the fix before anything is built"
            if o.tree else f"no {rec['branch']} tree in the cache; a run unpacks it once, then checks the "
            "fix before anything is built"))
    elif not found[0]:
        print(clean(f"applies: no: {found[1]}; a run stops there, undecided (125), building nothing"))
    else:
        print("applies: yes")
    print(f"rows: {rec['repro']} as it is, {o.calibrate} guests; then, if the fix applies, with the fix, "
          f"at most {o.max_runs} guests")
    print("builds: " + ("the tree, then the tree with the fix in the same object directory" if o.tree else
                        "the unpatched flavour (if stale), then unpatched + the fix (kernels.sh build-series)"))
    return CLEAN
