"""Does the fix hold here: for one reproducer and one kernel tree (a user's,
or a branch's unpatched flavour), three answers, each with its evidence:

  1. does the tree have the bug: its row as it is, a fixed count of guests
     (--calibrate) so that its FAILs are a fair sample of the FAIL rate;
  2. does the fix apply: the seed's fix patch(es) for the tree's branch
     (kernel-patches/<id>/[<branch dir>/]fix*.patch, as kernels.sh series
     takes them), or the user's --fix, applied in a scratch index; one that
     does not apply but applies in reverse is already in the tree;
  3. does the reproducer PASS with it: a sequential row weighed with the
     rate row 1 measured (run-in-qemu.sh --rate), so its cell carries the
     miss bound.

A user's tree is never written to: its HEAD (a git tree) or its files (a
snapshot into a git repository under the cache, the tree as work tree) are
cloned under the cache, and both rows are run-in-qemu.sh --tree on that
clone, one object directory: the second build recompiles what the fix
touches. A flavour's rows are the unpatched kernel and kernels.sh
build-series of unpatched + the fix, in the flavours' object directory.
"""
import hashlib
import os
import subprocess

from .. import branches
from ..paths import TOP, cache
from ..protocol import CLEAN, INTERRUPTED, REPRODUCED, UNDECIDED, USAGE
from ..options import UsageError
from ..untrusted import safe_git


class Tools:
    """The scripts a check calls: kernels.sh and run-in-qemu.sh (the tests
    give a fake)."""

    def __init__(self, arch, branch):
        self.env = dict(os.environ, KREPRO_ARCH=arch, KREPRO_BRANCH=branch)

    def kernels(self, *args, env=None):
        return subprocess.run([os.path.join(TOP, "scripts", "kernels.sh"), *args], text=True,
                              capture_output=True, env=dict(self.env, **(env or {})))

    def run(self, args, results):
        """run-in-qemu.sh's exit status and the row it wrote (None without one)."""
        import json
        p = subprocess.run([os.path.join(TOP, "run-in-qemu.sh"), "--results", results, *args], env=self.env)
        try:
            with open(os.path.join(results, "run.json")) as f:
                rows = json.load(f).get("rows") or []
        except (OSError, ValueError):
            rows = []
        return p.returncode, (rows[0] if rows else None)


def git(repo, *args, check=True, env=None):
    p = safe_git(repo, *args, env=env)
    if check and p.returncode:
        raise UsageError(f"git {args[0]} in {repo}: {(p.stderr.strip().splitlines() or ['failed'])[-1]}")
    return p


def fix_patches(repro, branch, given):
    """The fix's patch files: the user's, else the seed's for the branch."""
    if given:
        for g in given:
            if not os.path.isfile(g):
                raise UsageError(f"--fix {g}: no such patch file")
        return [os.path.realpath(g) for g in given]
    sub = branches.BRANCHES[branch]["patches"]
    d = os.path.join(TOP, "kernel-patches", repro, sub) if sub else os.path.join(TOP, "kernel-patches", repro)
    found = sorted(f for f in (os.listdir(d) if os.path.isdir(d) else ())
                   if f.startswith("fix") and f.endswith(".patch"))
    if not found:
        raise UsageError(f"no fix patch for {repro} on branch {branch} in "
                         f"{os.path.relpath(d, TOP)}: give one with --fix")
    return [os.path.join(d, f) for f in found]


def git_head(tree):
    """(the tree, its HEAD commit, a note) when tree is the top of a git
    work tree with a commit, else None: read only, nothing written."""
    src = os.path.realpath(tree)
    if git(src, "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False).returncode or \
            git(src, "rev-parse", "--show-toplevel", check=False).stdout.strip() != src:
        return None
    ref = git(src, "rev-parse", "HEAD").stdout.strip()
    note = ""
    if git(src, "status", "--porcelain", "--untracked-files=no").stdout.strip():
        note = f"{src} has uncommitted changes: its HEAD commit is checked, not them"
    return src, ref, note


def tree_key(tree):
    return hashlib.sha256((os.path.realpath(tree) + "\n").encode()).hexdigest()[:12]


def source_of(tree):
    """The commit that is the user's tree, and the repository it is in:
    (repository, commit, note). Its HEAD for a git tree; a tree that is no
    git repository is committed first into a repository of the cache's,
    the tree itself its work tree."""
    found = git_head(tree)
    if found:
        return found
    src, ref = snapshot(os.path.realpath(tree), os.path.join(cache(), "fixcheck", "snapshots", tree_key(tree)))
    return src, ref, f"{tree} is no git tree: its files were committed into {src} (nothing written into it)"


def clone_of(tree, src, ref):
    """A clone under the cache of commit ref of src (source_of()'s), for
    the user's tree: the clone's path."""
    # Laid out as the flavours' trees are (ROOT/linux-<version>, objects in
    # ROOT/build/<version>/<arch>: kernels.sh tree_obj), so that ccache
    # serves the sources the tree shares with them.
    clone = os.path.join(cache(), "fixcheck", "clones", tree_key(tree), "linux-" + (branches.of_tree(src) or "tree"))
    if not os.path.isdir(os.path.join(clone, ".git")):
        os.makedirs(os.path.dirname(clone), exist_ok=True)
        git(os.path.dirname(clone), "clone", "-q", "--shared", "--no-checkout", src, clone)
    git(clone, "fetch", "-q", src, ref)
    return clone


def snapshot(src, repo):
    """src's files as one commit of the git repository repo (src is its work
    tree for `git add` only): (repo, commit)."""
    if not os.path.isdir(repo):
        os.makedirs(repo)
        git(repo, "init", "-q")
        git(repo, "config", "gc.auto", "0")
    env = dict(os.environ, GIT_DIR=os.path.join(repo, ".git"), GIT_WORK_TREE=src)
    for args in (["add", "-A", "-f", "."], ["commit", "-q", "--allow-empty", "-m", f"snapshot of {src}"]):
        p = git(src, *args, check=False, env=env)
        if p.returncode:
            raise UsageError(f"cannot snapshot {src}: {(p.stderr.strip().splitlines() or ['git failed'])[-1]}")
    return repo, git(repo, "rev-parse", "HEAD").stdout.strip()


def applies(tools, tree, base, patches):
    """(True, "") when patches apply in order on commit base of tree; else
    (False, why): kernels.sh check-series's words, or that they are in
    already (they apply in reverse). Nothing of the tree is written."""
    p = tools.kernels("check-series", tree, base, *patches)
    if p.returncode == 0:
        return True, ""
    said = [line.strip() for line in p.stderr.splitlines() if "does not apply" in line]
    why = said[-1] if said else (p.stderr.strip().splitlines() or ["check-series failed"])[-1]
    why = why.removeprefix("krepro: error: ")
    if p.returncode not in (1, 128):
        return False, why
    if tools.kernels("check-series", "-R", tree, base, *patches).returncode == 0:
        return False, "it is in the tree already (it applies in reverse): " + why
    return False, why


def flavour_base(tools, branch, unpack=True):
    """The unpatched flavour as (tree, commit, its patches), the tree
    unpacked first when the cache lacks it; None then if not unpack."""
    tree = branches.tree_path(cache(), branch)
    if git(tree, "rev-parse", "-q", "--verify", "refs/tags/pristine", check=False).returncode:
        if not unpack:
            return None
        p = tools.kernels("tree")
        if p.returncode:
            raise Undecided(f"the {branch} kernel tree could not be unpacked (kernels.sh tree exited {p.returncode})")
    series = tools.kernels("series", "unpatched").stdout.split()
    return tree, "pristine", series


def with_fix(tools, repro, c, fixes):
    """run-in-qemu.sh's kernel arguments for the tree with the fix applied."""
    if c["clone"]:
        git(c["tree"], "checkout", "-q", "-f", "-B", "krepro-fixcheck-fix", c["base"])
        for q in fixes:
            if git(c["tree"], "am", "-q", "--no-3way", q, check=False).returncode:
                git(c["tree"], "am", "--abort", check=False)
                raise Undecided(f"{os.path.basename(q)} did not apply with git am (it did in the check)")
        return ["--tree", c["tree"]]
    kdir = os.path.join(cache(), "fixcheck", "kernels")
    name = f"fixcheck-{repro}"
    p = tools.kernels("build-series", name, c["tree"], c["base"], *c["pre"], *fixes, env={"KREPRO_KERNELS": kdir})
    if p.returncode:
        raise Undecided(f"the kernel with the fix does not build (kernels.sh build-series exited {p.returncode}): "
                        + ((p.stderr.strip().splitlines() or [""])[-1]))
    from .. import arches
    return ["--kernel", os.path.join(kdir, f"{arches.image_name(c['arch'])}-{c['branch']}-{c['arch']}-{name}")]


class Undecided(Exception):
    """A step that leaves the answer undecided (a build, an unpack)."""


def row_record(code, row):
    if code in (USAGE, INTERRUPTED):
        raise Stop(code)
    if row is None:
        return {"decision": None, "cell": f"no row (run-in-qemu.sh exited {code})", "fails": 0, "trials": 0,
                "code": code}
    return {"decision": row.get("decision"), "cell": row.get("cell"), "fails": row.get("fails", 0),
            "trials": row.get("trials", 0), "runs": row.get("runs", 0), "code": code}


class Stop(Exception):
    def __init__(self, code):
        super().__init__(code)
        self.code = code


def check(rec, tools, fixes, results, o):
    """Fills rec's three answers; the rows go under results. Whether the
    fix applies is asked first, before anything is cloned or built (the
    flavours' tree is unpacked first when the cache lacks it)."""
    if o.tree:
        src, ref, note = source_of(o.tree)
        if note:
            rec["notes"].append(note)
        tree, base, pre = src, ref, []
    else:
        tree, base, pre = flavour_base(tools, rec["branch"])
    ok, why = applies(tools, tree, base, pre + fixes)
    rec["applies"] = {"ok": ok, "why": why}
    if not ok:
        return
    if o.tree:
        clone = clone_of(o.tree, src, ref)
        git(clone, "checkout", "-q", "-f", "-B", "krepro-fixcheck", ref)
        c = {"clone": True, "tree": clone, "base": ref, "pre": []}
        as_is = ["--tree", clone]
    else:
        c = {"clone": False, "tree": tree, "base": base, "pre": pre}
        as_is = ["--kernel", "unpatched"]
    c.update(arch=rec["arch"], branch=rec["branch"])
    common = ["--arch", rec["arch"]] + (["--miss", str(o.miss)] if o.miss else [])
    rec["as_is"] = row_record(*tools.run(common + as_is + ["--repeat", str(o.calibrate), rec["repro"]],
                                         os.path.join(results, "as-is")))
    kernel = with_fix(tools, rec["repro"], c, fixes)
    a = rec["as_is"]
    rate = ["--rate", f"{a['fails']}/{a['trials']}"] if a["fails"] else []
    rec["with_fix"] = row_record(*tools.run(common + kernel + rate + ["--max-runs", str(o.max_runs), rec["repro"]],
                                            os.path.join(results, "with-fix")))


def dry_applies(tools, rec, o, fixes):
    """A dry run's answer to "does the fix apply", where the tree is there
    to ask it of without writing anything (a git tree's HEAD, the flavours'
    tree unpacked): (ok, why), or None when it cannot be asked yet."""
    if o.tree:
        found = git_head(o.tree)
        found = found and (found[0], found[1], [])
    else:
        found = flavour_base(tools, rec["branch"], unpack=False)
    if not found:
        return None
    tree, base, pre = found
    return applies(tools, tree, base, pre + fixes)


def verdict(rec):
    """The exit status and its sentence."""
    a, f = rec["as_is"], rec["with_fix"]
    if f and f["decision"] == "FAIL":
        return REPRODUCED, "the fix does not hold: the reproducer still FAILs with it"
    if rec.get("stopped"):
        return UNDECIDED, f"undecided: {rec['stopped']}"
    if rec["applies"] and not rec["applies"]["ok"]:
        return UNDECIDED, (f"undecided: the fix does not apply: {rec['applies']['why']} "
                           "(nothing was built or run)")
    if not a or a["decision"] != "FAIL":
        return UNDECIDED, ("undecided: the tree as it is showed no FAIL, so a PASS with the fix says "
                           "nothing about the fix")
    if f is None:
        return UNDECIDED, "undecided: the row with the fix did not finish"
    if f["decision"] == "PASS":
        return CLEAN, "the fix holds: the tree has the bug, the fix applies, and the reproducer PASSes with it"
    return UNDECIDED, f"undecided: the row with the fix is {f['cell']}"
