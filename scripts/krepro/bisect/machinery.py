"""The machinery a bisection step uses: git on the user's tree (read only)
and on a scratch clone under the cache, where every step is checked out; the
build (kernels.sh build-tree, run-in-qemu.sh --tree's build, in one object
directory, so each step after the first is incremental); and the step's row,
run-in-qemu.sh on the image built, a probe row, and what its record says.
Machinery is the build and row interface; the tests give a fake one."""
import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time

from .. import arches, branches
from ..paths import SCRIPTS, TOP, cache, file_sha256
from ..options import UsageError
from ..untrusted import safe_git


def git(repo, *args, check=True):
    p = safe_git(repo, *args)
    if check and p.returncode:
        raise UsageError(f"git {' '.join(args)} in {repo}: {p.stderr.strip() or 'failed'}")
    return p.stdout.strip() if check else p


def first_parent_line(tree, good, bad):
    """GOOD's and BAD's hashes, and the commits to search: the first-parent
    line after GOOD, oldest first (BAD last); raises UsageError."""
    if not os.path.isdir(tree):
        raise UsageError(f"--tree {tree}: not a directory")
    if git(tree, "rev-parse", "--is-inside-work-tree", check=False).returncode and \
            git(tree, "rev-parse", "--git-dir", check=False).returncode:
        raise UsageError(f"--tree {tree}: not a git repository")
    hashes = []
    for what, c in (("--good", good), ("--bad", bad)):
        p = git(tree, "rev-parse", "--verify", "-q", c + "^{commit}", check=False)
        if p.returncode:
            raise UsageError(f"{what} {c}: no such commit in {tree}")
        hashes.append(p.stdout.strip())
    good_hash, bad_hash = hashes
    if good_hash == bad_hash or git(tree, "merge-base", "--is-ancestor", good_hash, bad_hash,
                                    check=False).returncode:
        raise UsageError(f"--good {good} is not an ancestor of --bad {bad}")
    line = git(tree, "rev-list", "--first-parent", "--reverse", bad_hash, "^" + good_hash).split()
    if not line or line[-1] != bad_hash:
        raise UsageError(f"no commit between --good {good} and --bad {bad}")
    return good_hash, bad_hash, line


def subject(tree, commit):
    return git(tree, "log", "-1", "--format=%s", commit)


def is_merge(tree, commit):
    parents = git(tree, "rev-list", "--parents", "-n", "1", commit).split()[1:]
    return len(parents) > 1


def scratch_dir(tree):
    """The scratch clone's place in the cache: one per tree, laid out as the
    flavours' trees are (ROOT/linux-<version>, objects in ROOT/build/<version>/
    <arch>: kernels.sh tree_obj), so that ccache serves the sources the
    flavours share with it and the first step is not a cold build."""
    root = os.path.join(cache(), "bisect",
                        "tree-" + hashlib.sha256(os.path.realpath(tree).encode()).hexdigest()[:12])
    return os.path.join(root, "linux-" + (branches.of_tree(tree) or "tree"))


def built_before(scratch, arch):
    """Whether the scratch clone's object directory holds a build already:
    then the first step rebuilds what changed, not the whole tree. Where
    that directory is, kernels.sh alone says (obj-dir)."""
    env = dict(os.environ, KREPRO_ARCH=arch)
    p = subprocess.run([os.path.join(SCRIPTS, "kernels.sh"), "obj-dir", scratch], env=env,
                       capture_output=True, text=True)
    obj = p.stdout.strip()
    return p.returncode == 0 and bool(obj) and os.path.isfile(os.path.join(obj, "vmlinux"))


def prepare_scratch(scratch, tree):
    """A clone sharing the tree's objects: every commit of the tree is
    there, now and later, and the tree's checkout is never touched."""
    if not os.path.isdir(os.path.join(scratch, ".git")):
        if os.path.exists(scratch):
            shutil.rmtree(scratch)
        os.makedirs(os.path.dirname(scratch), exist_ok=True)
        git(os.path.dirname(scratch), "clone", "-q", "--shared", "--no-checkout",
            os.path.realpath(tree), scratch)


def checkout(scratch, commit):
    git(scratch, "revert", "--quit", check=False)
    git(scratch, "checkout", "-q", "-f", "--detach", commit)
    git(scratch, "clean", "-q", "-f", "-d")


def apply_revert(scratch, commit, merge):
    """Revert commit on the scratch checkout, uncommitted (a merge against
    its first parent): None, or git's last word on why it does not apply."""
    p = git(scratch, "revert", "--no-commit", *(["-m", "1"] if merge else []), commit, check=False)
    if not p.returncode:
        return None
    said = (p.stderr or p.stdout).strip().splitlines() or ["git revert failed"]
    git(scratch, "revert", "--abort", check=False)
    return said[-1]


@dataclasses.dataclass
class Build:
    ok: bool
    image: str = None
    seconds: float = 0.0
    text: str = None      # sha256 of the kernel's .text, or None when unknown
    why: str = ""


def text_sha256(vmlinux, arch="x86_64"):
    """sha256 of vmlinux's .text section, or None when it cannot be read."""
    cross = arches.ARCHES[arch]["cross"] if arch in arches.ARCHES else ""
    objcopy = (cross + "objcopy") if cross and shutil.which(cross + "objcopy") else "objcopy"
    if not os.path.isfile(vmlinux) or not shutil.which(objcopy):
        return None
    with tempfile.NamedTemporaryFile() as out:
        p = subprocess.run([objcopy, "-O", "binary", "--only-section=.text", vmlinux, out.name],
                           capture_output=True)
        return None if p.returncode else file_sha256(out.name)


class Machinery:
    """Builds with run-in-qemu.sh --tree's build (kernels.sh build-tree) and
    runs probe rows with run-in-qemu.sh on the image built."""

    def __init__(self, arch, run_args=()):
        self.arch, self.run_args = arch, list(run_args)

    def build(self, tree, image):
        """Build tree; install its image as `image` with its .config beside it
        (run-in-qemu.sh reads the detectors there) and its vmlinux linked
        (reports decoded; unlink_debug() drops the link once the step's rows
        are done, since the next build rewrites the object directory)."""
        env = dict(os.environ, KREPRO_ARCH=self.arch, KREPRO_DIE_CODE="125")
        t0 = time.monotonic()
        p = subprocess.run([os.path.join(SCRIPTS, "kernels.sh"), "build-tree", tree], env=env,
                           stdout=subprocess.PIPE, text=True)
        secs = round(time.monotonic() - t0, 1)
        if p.returncode:
            return Build(False, seconds=secs, why=f"kernels.sh build-tree exited {p.returncode}"
                         " (its build log is named above)")
        built = p.stdout.strip().splitlines()[-1]
        obj = built[:-len(arches.ARCHES[self.arch]["image"])]
        os.makedirs(os.path.dirname(image), exist_ok=True)
        shutil.copyfile(built, image)
        if os.path.isfile(os.path.join(obj, ".config")):
            shutil.copyfile(os.path.join(obj, ".config"), image + ".config")
        vmlinux = os.path.join(obj, "vmlinux")
        if os.path.isfile(vmlinux):
            if os.path.lexists(image + ".vmlinux"):
                os.unlink(image + ".vmlinux")
            os.symlink(vmlinux, image + ".vmlinux")
        return Build(True, image, secs, text_sha256(vmlinux, self.arch))

    def unlink_debug(self, image):
        if image and os.path.islink(image + ".vmlinux"):
            os.unlink(image + ".vmlinux")

    def row(self, image, repro, results, max_runs=None, repeat=None, rate=None):
        """One probe row of repro on image: run.json's row record, with
        run-in-qemu.sh's exit status as "code" (None for the row when it
        wrote none). rate: the bisection's (bisect_confidence.Rate), which
        the row's clean runs are weighed with, not a record of run-in-qemu.sh's."""
        cmd = [os.path.join(TOP, "run-in-qemu.sh"), "--arch", self.arch, "--kernel", image,
               "--results", results, *self.run_args]
        if rate is not None and rate.fails > 0 and not repeat:
            cmd += ["--rate", f"{rate.fails}/{rate.trials}"]
        cmd += ["--repeat", str(repeat)] if repeat else ["--max-runs", str(max_runs)]
        p = subprocess.run(cmd + [repro])
        try:
            with open(os.path.join(results, "run.json")) as f:
                rows = json.load(f).get("rows") or []
        except (OSError, ValueError):
            rows = []
        rec = dict(rows[0]) if rows else {"decision": None, "counts": {}, "runs": 0,
                                          "fails": 0, "trials": 0}
        rec["code"] = p.returncode
        return rec


def unjudged(r):
    """Why a row record without a FAIL says nothing clean, or None: it ended
    BROKEN, SKIP, HANG or OTHER, or had such runs, or no clean one."""
    other = {o: c for o, c in r["counts"].items() if o != "PASS"}
    if not other and r.get("decision") in ("PASS", "UNDECIDED") and r["counts"].get("PASS"):
        return None
    return (f"row {r.get('decision') or 'not decided'}"
            + (f" ({', '.join(f'{o} {c}' for o, c in other.items())})" if other else "")
            + (f": {r['why']}" if r.get("why") else ""))
