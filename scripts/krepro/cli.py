"""run-in-qemu.sh's options, checked before anything is built or booted."""
import argparse
import errno
import datetime
import difflib
import os
import shlex
import shutil
import sys

from . import arches, branches, dry_run, guest, kernels, meta as metamod, runner
from .config import RunConfig
from .kernels import FLAVOURS
from .lava import lab
from .options import UsageError, bounded
from .paths import TOP, build, cache, git_commit
from .protocol import DEFAULT_MISS, TIMEOUT_MARGIN, UNDECIDED, USAGE
from .results import render
from .run_checks import check_miss, check_report, check_repros
from .run_help import HELP
from .run_parser import PROG, parse
from .untrusted import Refused, no_build, say, unwritable

# A disk that fills up or turns read-only under a run (results or cache).
DISK_ERRORS = (errno.ENOSPC, errno.EROFS, errno.EDQUOT, errno.EIO)


def fail(msg, code=USAGE):
    # One line, whatever the input it echoes: controls escaped, long words cut.
    print(f"{PROG}: error: {say(msg)}", file=sys.stderr)
    return code


def report(results, any_report):
    if not os.path.isdir(results):
        return fail(f"--report {results}: no such directory")
    if not os.path.lexists(os.path.join(results, "run.json")):
        return fail(f"--report {results}: no run.json there (not a krepro run directory, "
                    "or one from before run.json existed)")
    return render.render(results, any_report)


def check_options(o):
    """Everything that needs no reproducer table: one line on the first
    problem, or None."""
    if o.arch not in arches.ARCHES:
        return f"--arch is one of: {' '.join(arches.ARCHES)}, not '{o.arch}'"
    err = check_branch(o)
    if err:
        return err
    if o.via not in ("qemu", "lava-run") and not (o.via.startswith("lava:") and len(o.via) > 5):
        return f"--via is qemu, lava-run or lava:IDENTITY, not '{o.via}'"
    if o.via != "qemu" and (o.keep or o.gdb):
        return "--keep and --gdb need a guest on this terminal: --via qemu only"
    try:
        qemu_extra = shlex.split(o.qemu_opts)
    except ValueError as e:
        return f"--qemu-opts: {e}"
    if qemu_extra and o.via != "qemu":
        return ("--qemu-opts is for guests QEMU runs here (--via qemu): a LAVA device "
                "sets its own QEMU options")
    return check_via(o) or check_miss(o) or (
        "--replace goes with --results DIR" if o.replace and not o.results else None)


def check_branch(o):
    """--branch, else KREPRO_BRANCH, else the default: a row of
    scripts/branches.tsv (o.branch set to it)."""
    given, src = (o.branch, "--branch") if o.branch is not None else \
        (os.environ.get("KREPRO_BRANCH") or None, "KREPRO_BRANCH")
    if given is not None and given not in branches.BRANCHES:
        close = difflib.get_close_matches(given[:40], branches.BRANCHES, n=1)
        return (f"{src} is one of: {' '.join(branches.BRANCHES)}, not '{given[:40]}'"
                + (f"; did you mean {close[0]}?" if close else ""))
    o.branch = given or branches.DEFAULT
    return None


def check_via(o):
    tool = {"lava-run": ("lava-run", "lava-dispatcher")}.get(o.via) or (
        ("lavacli", "lavacli") if o.via.startswith("lava:") else None)
    if tool and not shutil.which(tool[0]):
        return f"--via {o.via} needs {tool[0]} (Debian: apt-get install {tool[1]})"
    if o.via == "lava-run" and os.geteuid() != 0 and not os.access("/var/lib/lava/dispatcher", os.W_OK):
        # Where lava-run keeps every job's files; the package makes it root's.
        return ("--via lava-run needs to write /var/lib/lava/dispatcher (lava-run's "
                "job directories): run as root")
    if o.via.startswith("lava:"):
        d, sep, url = (o.artifacts or "").partition("=")
        if not sep or not os.path.isdir(d) or not url:
            return ("--via lava:ID needs --artifacts DIR=URL: a directory of yours that "
                    "the lab downloads from as URL")
        # A lab that is down or an identity that is not there: said once,
        # before any guest, instead of a BROKEN row for every job.
        return lab.check_lab(o.via[5:])
    elif o.artifacts:
        return "--artifacts is for --via lava:ID"
    return None


def check_env(o):
    """The variables a run reads, checked before any work (and again where
    each is used)."""
    env = os.environ.get("KREPRO_JOBS")
    if o.jobs is None and env:
        try:
            bounded("KREPRO_JOBS")(env)
        except argparse.ArgumentTypeError as e:
            return f"KREPRO_JOBS {e}"
    try:
        guest.after_report()
        cache()
        no_build()
    except Refused as e:
        return str(e)
    initrd = os.environ.get("KREPRO_INITRD")
    if initrd and not os.path.isfile(initrd):
        return f"KREPRO_INITRD={initrd}: no such file (a guest image, a cpio)"
    return None


def make_kernels(o):
    """The kernels the run boots, checked: (kernels, None) or (None, why not)."""
    specs = o.kernel_specs or ["unpatched"]
    ks = tuple(kernels.Kernel(s, o.arch, o.branch) for s in specs)
    try:
        for k in ks:
            k.check(dry=o.dry_run)
    except UsageError as e:
        return None, str(e)
    if o.vmlinux:
        paths = [k for k in ks if not k.flavour and not k.tree]
        if len(paths) != 1:
            return None, ("--vmlinux belongs to one --kernel PATH: give exactly one "
                          "(krepro's flavours and --tree builds keep their own)")
        try:
            paths[0].set_debug(o.vmlinux, dry=o.dry_run)
        except UsageError as e:
            return None, str(e)
    return ks, check_kernels(o, specs, ks)


def check_kernels(o, specs, ks):
    labels = [k.label for k in ks]
    if len(set(labels)) != len(labels):
        return f"two kernels share the label {labels!r}: give files distinct names"
    probes = [k.spec for k in ks if not k.flavour]
    if o.expect and probes:
        return (f"--expect judges krepro's flavours (unpatched, patched); {probes[0]} "
                "has no expected verdict: drop --expect (then 0 clean, 1 the bug, 125 undecided)")
    if (o.keep or o.gdb) and (len(o.repros) != 1 or len(ks) != 1):
        return (f"--{'gdb' if o.gdb else 'keep'} holds one guest on this terminal: give one "
                f"reproducer and one kernel, not {len(o.repros)} and {len(ks)}")
    if o.rate and o.expect:
        return ("--rate weighs the clean rows of kernels under test; --expect's rows have "
                "their branch's records: give one")
    if o.record_rates and (specs != ["unpatched"] or not o.repeat):
        return "--record-rates measures the bug kernel: --kernel unpatched --repeat N only"
    return None


def results_dir(o):
    if o.results:
        return os.path.realpath(o.results)
    d = os.path.join(TOP, "results", datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
    return d + f"-{os.getpid()}" if os.path.exists(d) else d


def settle(o, ks):
    """The run's configuration, from checked options: the one place that
    turns options into what the run does (check_options() passed)."""
    keep = bool(o.keep or o.gdb)
    env_jobs = os.environ.get("KREPRO_JOBS")
    d, _, url = (o.artifacts or "").partition("=")
    return RunConfig(
        arch=o.arch, kernels=ks, repros=tuple(o.repros), results=results_dir(o),
        miss=o.miss or (1 - o.confidence if o.confidence else DEFAULT_MISS),
        max_runs=o.max_runs, repeat=1 if keep else o.repeat, timeout=o.timeout,
        jobs=o.jobs or (bounded("KREPRO_JOBS")(env_jobs) if env_jobs else guest.default_jobs()),
        via=o.via, artifacts=(d, url) if o.via.startswith("lava:") else None, accel=o.accel,
        initrd=os.environ.get("KREPRO_INITRD"), expect=o.expect, any_report=o.any_report,
        record_rates=o.record_rates, keep=keep, gdb=o.gdb, append=o.append,
        qemu_extra=tuple(shlex.split(o.qemu_opts)), branch=o.branch, rate=o.rate)


def check_results(o):
    if not o.results:
        return None
    run_json = os.path.join(o.results, "run.json")
    if os.path.exists(o.results) and not os.path.isdir(o.results):
        return f"--results {o.results}: not a directory"
    place = unwritable(o.results)
    if place:
        return f"--results {o.results}: {place}"
    if os.path.exists(run_json) and not o.replace:
        return (f"--results {o.results} holds a past run (run.json): give a new directory, "
                "or add --replace to overwrite it")
    if os.path.isdir(o.results) and not os.path.lexists(run_json) and os.listdir(o.results) \
            and not o.replace:
        # /etc, or a home directory: a run would write its files among the others'.
        return (f"--results {o.results} holds files and no run.json (not a krepro run "
                "directory): give a new or empty directory, or add --replace to write into it")
    return None


def version(o):
    """krepro's commit and, for each branch (or --branch's), each arch's
    flavours as built here."""
    print(f"krepro {git_commit()} ({TOP})")
    err = check_branch(o) if o.branch is not None else None
    if err:
        return fail(err)
    for b in ([o.branch] if o.branch else branches.BRANCHES):
        src = branches.installed_version(b)
        print(f"branch {b}: {branches.BRANCHES[b]['package']} "
              + (src if src else "not installed (make kernels installs it)"))
        for arch in arches.ARCHES:
            for f in FLAVOURS:
                img = kernels.flavour_image(arch, f, b)
                stamp = kernels.read_stamp(img)
                print(f"  {arch} {f}: " + (f"build {stamp[:12]}, {img}" if stamp and os.path.isfile(img)
                                           else f"not built ({img}; make kernels builds it)"))
    return 0


def main(argv):
    o = parse(argv)
    if o.help:
        print(HELP.format(miss=DEFAULT_MISS, margin=TIMEOUT_MARGIN), end="")
        return 0
    if o.version:
        return version(o)
    err = check_options(o)
    if err:
        return fail(err)
    if o.report:
        err = check_report(o, argv)
        return fail(err) if err else report(o.report, o.any_report or None)
    # Names and arches from the source tree: a typo costs no build.
    table = metamod.sources()
    if o.list:
        for r in metamod.source_names(table, o.arch, matrix_only=True):
            print(r)
        return 0
    if not o.repros:
        return fail("no reproducer given (run-in-qemu.sh --list names them; --help for more)")
    ks, err = None, check_env(o) or check_repros(o.repros) or metamod.check_names(table, o.arch, o.repros)
    if not err:
        ks, err = make_kernels(o)
    err = err or check_results(o)
    if err:
        return fail(err)
    # A --tree that is no kernel tree: what its build would say, said first.
    skip = next(filter(None, (k.tree_problem() for k in ks)), None)
    if skip:
        return fail(skip, UNDECIDED)
    config = settle(o, ks)
    if o.dry_run:
        return dry_run.dry_run(config)
    return run(config)


def run(config):
    """Build the reproducers, then the run."""
    try:
        if not no_build():
            metamod.ensure_built()
        metas = metamod.load_all()
    except metamod.MetaError as e:
        return fail(str(e))
    missing = [r for r in config.repros if r not in metas]
    if missing:
        return fail(f"{' '.join(missing)}: in the source tree but not built "
                    f"(no {os.path.join(build(), 'repro', missing[0] + '.json')}): run make build")
    try:
        os.makedirs(config.results, exist_ok=True)
    except OSError as e:
        return fail(f"cannot create {config.results}: {e}")
    try:
        code = runner.main_run(config, metas)
    except OSError as e:
        if e.errno not in DISK_ERRORS:
            raise
        # run.json is replaced whole after every guest: what it held before
        # the failed write (every row decided by then) is still there.
        return fail(f"cannot write {e.filename or 'a file'}: {e.strerror}; the run stopped, and "
                    f"{os.path.join(config.results, 'run.json')} keeps every row decided before",
                    UNDECIDED)
    # With --record-rates the run recorded its rates after every guest and
    # at its end (runner.RunRecord.record_rates).
    return code
