"""krepro's command line: python3 -m krepro SUBCOMMAND (see HELP)."""
import _signal  # built in: no Python code runs before the handler is in
import sys


def quit_early(signum, frame):
    """A Ctrl-C while the modules load is an interrupt like any other: one
    line and 130, not a traceback from the middle of an import."""
    _signal.signal(_signal.SIGINT, _signal.SIG_IGN)
    print("krepro: interrupted", file=sys.stderr)
    sys.exit(130)


_signal.signal(_signal.SIGINT, quit_early)
# run-in-qemu.sh starts Python with SIGINT blocked: one that came during
# the interpreter's start-up is delivered now, to quit_early.
_signal.pthread_sigmask(_signal.SIG_UNBLOCK, {_signal.SIGINT})

import signal  # noqa: E402
import argparse  # noqa: E402
import os  # noqa: E402

from .results import gate as gatemod, render  # noqa: E402
from .protocol import CLEAN, INTERRUPTED, REPRODUCED, UNDECIDED, USAGE  # noqa: E402
from .untrusted import Refused, say, unwritable  # noqa: E402
from .options import Parser  # noqa: E402

SUBCOMMANDS = ("run", "report", "gate", "classify", "bisect", "fixcheck", "bundle", "matrix")

SYNOPSIS = """\
usage: python3 -m krepro run ARGS...                 run-in-qemu.sh (see: run --help)
       python3 -m krepro report DIR                  re-render a run's reports from its run.json
       python3 -m krepro gate DIR BASE SERIES        compare two kernels' rows of a run
                     [--tree T --good G --bad B]     and name each flipped row's patch
       python3 -m krepro classify [--json] LOG       a pasted log's kernel reports, and krepro's
                                                     reproducer of each (see: help classify)
       python3 -m krepro bisect --good G --bad B REPRO   find the commit that brought a bug in
       python3 -m krepro fixcheck REPRO [--tree DIR] [--fix P]  does the fix hold on this tree
       python3 -m krepro bundle REPRO --kernel K     one row as a tarball that runs with QEMU alone
       python3 -m krepro matrix [--out F] DIR...     one matrix of several runs (branches, arches)
       python3 -m krepro help [SUBCOMMAND]           this, or a subcommand's --help
       python3 -m krepro --version                   krepro's commit and the kernels built here
"""

HELP = SYNOPSIS + """
Exit status, as git bisect run reads it: 0 clean, 1 a bug reproduced or a
kernel report found, 125 undecided, 128 usage error or unreadable input (one
line on stderr says which), 130 interrupted. bisect's 0, 1 and 125 say how
far it got: python3 -m krepro help bisect.
"""

REPORT_HELP = """\
Re-render DIR's summary.md, results.ktap and junit.xml from DIR/run.json
alone (a run of run-in-qemu.sh); boots nothing. The summary goes to stdout.

Exit status: as the run's own. 0 every row PASS (a run with --expect: every
row as expected); 1 a row reproduced its bug (--expect: a row not as
expected); 125 a row undecided, or a run that did not finish (killed, or still
running); 130 a run that was interrupted, whatever it holds; 128 DIR is no run
directory, or its run.json is not a krepro run record.
"""

GATE_HELP = """\
Compare the rows of kernel BASE with those of kernel SERIES in DIR/run.json
(gate.sh's last step: BASE is "base", SERIES "base+series"); writes
DIR/gate.md and shows it.

Exit status: 1 a regression (PASS on BASE, FAIL or another kernel report on
SERIES); 125 a row undecided on either side, or a run that did not finish;
0 otherwise; 128 DIR is no run directory, its run.json is not a run record, or
BASE or SERIES is not a kernel of the run (the message names its kernels):
then nothing is written.

With --tree T --good G --bad B (gate.sh gives them): each flipped row is
bisected with krepro bisect's search over the commits G..B of git tree T
(one a patch of DIR/series.txt), in T and its object directory; gate.md
names each row's patch with its confidence and checks, or why none. The
exit status stays the comparison's, but 130 when the search was interrupted.
  --calibrate N   guests on the FAIL side that measure the rate (default 10)
  --arch A        x86_64 | arm (default x86_64, or $KREPRO_ARCH)
"""

BUNDLE_HELP = """\
Make REPRO on kernel K into a directory and a tarball that reproduce it on
a machine with QEMU alone: the kernel and its config, REPRO's guest image,
its disk if it needs one, run.sh (it prints PASS or FAIL and exits with the
reproducer's status), a README and SHA256SUMS, in OUT/<REPRO>-<kernel>-<build>/
and its .tar.gz, sizes printed. Builds what is missing, as run-in-qemu.sh does.

  --kernel K      unpatched | patched | PATH to a bzImage (arm: zImage), a
                  linux-image .deb or an unpacked one (its modules go in the
                  guest image)
  --arch A        x86_64 | arm (default x86_64, or $KREPRO_ARCH)
  --branch B      stable branch of the flavours K names: 6.1 | 6.12 (default
                  6.1, or $KREPRO_BRANCH)
  --out DIR       where the bundle goes (default: the current directory)
  --timeout SEC   run.sh's time limit (default: the reproducer's limit plus
                  the boot's margin, as run-in-qemu.sh)

Exit status: 0 made; 125 the kernel could not be built or had; 128 usage
error or unreadable input, or the bundle cannot be made (one line says why).
"""


def parser(name, args, text):
    return Parser(prog=f"python3 -m krepro {name}", usage=f"python3 -m krepro {name} {args}",
                  description=text, allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter)


def report(argv):
    p = parser("report", "DIR", REPORT_HELP)
    p.add_argument("dir", metavar="DIR", help="a run directory (run-in-qemu.sh --results DIR)")
    o = p.parse_args(argv)
    return render.render(o.dir, None)


def gate(argv):
    p = parser("gate", "DIR BASE SERIES", GATE_HELP)
    p.add_argument("dir", metavar="DIR", help="a run directory with both kernels' rows")
    p.add_argument("base", metavar="BASE", help="the kernel label without the series")
    p.add_argument("series", metavar="SERIES", help="the kernel label with it")
    p.add_argument("--tree", help="the git tree whose commits GOOD..BAD are the series")
    p.add_argument("--good", help="BASE's commit in --tree")
    p.add_argument("--bad", help="the series' tip in --tree")
    p.add_argument("--calibrate", type=int, default=10)
    p.add_argument("--arch", default=os.environ.get("KREPRO_ARCH") or "x86_64")
    o = p.parse_args(argv)
    culprits = None
    if o.tree or o.good or o.bad:
        culprits, err = culprit_args(o)
        if err:
            return fail("gate", err)
    return gatemod.gate(o.dir, o.base, o.series, culprits=culprits)


def culprit_args(o):
    """gate's culprit search arguments, or a usage error's words."""
    from . import arches
    if not (o.tree and o.good and o.bad):
        return None, "--tree, --good and --bad go together"
    if not os.path.isdir(o.tree):
        return None, f"--tree {o.tree}: not a directory"
    if o.arch not in arches.ARCHES:
        return None, f"--arch is one of: {' '.join(arches.ARCHES)}, not '{o.arch}'"
    if not 1 <= o.calibrate <= 1000:
        return None, f"--calibrate wants 1-1000, not {o.calibrate}"
    try:
        with open(os.path.join(o.dir, "series.txt")) as f:
            patches = [line.rstrip("\n") for line in f if line.strip()][:10000]
    except OSError as e:
        return None, f"{o.dir}/series.txt: {e.strerror} (gate.sh writes the series there)"
    return {"tree": o.tree, "good": o.good, "bad": o.bad, "patches": patches, "arch": o.arch,
            "calibrate": o.calibrate}, None


def classify(argv):
    from .reports import classify as classifymod
    return classifymod.main(argv)


def bisect(argv):
    # Imported here only: the others need nothing of it.
    from .bisect import command as bisectmod
    return bisectmod.main(argv)


def fixcheck(argv):
    from .fixcheck import command as fixcheck_cli
    return fixcheck_cli.main(argv)


def bundle(argv):
    p = parser("bundle", "REPRO --kernel K [--arch A] [--branch B] [--out DIR] [--timeout SEC]",
               BUNDLE_HELP)
    p.add_argument("repro", metavar="REPRO")
    p.add_argument("--kernel", required=True)
    p.add_argument("--arch", default=os.environ.get("KREPRO_ARCH") or "x86_64")
    p.add_argument("--branch", default=os.environ.get("KREPRO_BRANCH") or None)
    p.add_argument("--out", default=".")
    from .options import UsageError, bounded
    p.add_argument("--timeout", type=bounded("--timeout"))
    o = p.parse_args(argv)
    from . import arches, branches
    from .bundle import make as bundlemod
    from . import kernels, meta as metamod
    if o.arch not in arches.ARCHES:
        return fail("bundle", f"--arch is one of: {' '.join(arches.ARCHES)}, not '{o.arch}'")
    if o.branch is not None and o.branch not in branches.BRANCHES:
        return fail("bundle", f"--branch is one of: {' '.join(branches.BRANCHES)}, not '{o.branch[:40]}'")
    if os.path.exists(o.out) and not os.path.isdir(o.out):
        return fail("bundle", f"--out {o.out}: not a directory")
    if unwritable(o.out):
        return fail("bundle", f"--out {o.out}: {unwritable(o.out)}")
    try:
        d, tarball = bundlemod.make(o.repro, o.kernel, o.arch, o.out, o.timeout, o.branch)
    except (UsageError, bundlemod.BundleError, metamod.MetaError) as e:
        return fail("bundle", str(e))
    except kernels.Undecidable as e:
        print(f"krepro: bundle: {e}", file=sys.stderr)
        return UNDECIDED
    print(bundlemod.summary(d, tarball))
    return CLEAN


def matrix(argv):
    p = parser("matrix", "[--out FILE] DIR...", "One matrix, reproducer x branch x flavour, of "
               "the runs in the run directories DIR (make repro-all makes one a branch and "
               "arch). Exit status: 0 every row as expected, 1 one not, 125 a row undecided, "
               "128 a run directory that cannot be read.")
    p.add_argument("dirs", metavar="DIR", nargs="+")
    p.add_argument("--out")
    o = p.parse_args(argv)
    from .results import matrix as matrixmod
    if o.out and os.path.lexists(o.out):
        # Checked before the runs are read: a device is never renamed over.
        from .untrusted import replaceable
        try:
            replaceable(o.out)
        except OSError as e:
            return fail("matrix", f"--out {o.out}: {e.strerror}")
    if o.out and unwritable(o.out):
        return fail("matrix", f"--out {o.out}: {unwritable(o.out)}")
    return matrixmod.main(o.dirs, o.out)


def fail(sub, msg):
    print(f"krepro: {sub}: {say(msg)}", file=sys.stderr)
    return USAGE


def main(argv):
    if not argv:
        print(SYNOPSIS + "krepro: a subcommand is needed (see --help)", file=sys.stderr)
        return USAGE
    sub, rest = argv[0], argv[1:]
    if sub == "--version" and not rest:
        # The same answer as run-in-qemu.sh --version: one contract, every entry.
        from . import cli
        return cli.main(["--version"])
    if sub in ("-h", "--help", "help"):
        if sub == "help" and rest == ["help"]:
            rest = []
        if sub == "help" and rest:
            if rest[0] not in SUBCOMMANDS or len(rest) > 1:
                return fail("help", f"no subcommand {' '.join(rest)!r}: one of {', '.join(SUBCOMMANDS)}")
            return main([rest[0], "--help"])
        print(HELP, end="")
        return 0
    if sub == "run":
        # run-in-qemu.sh's own options, untouched. Imported here only: report,
        # gate and classify need nothing of it.
        from . import cli
        return cli.main(rest)
    handler = {"report": report, "gate": gate, "classify": classify, "bisect": bisect,
               "fixcheck": fixcheck, "bundle": bundle, "matrix": matrix}.get(sub)
    if handler is None:
        what = f"unknown option {sub!r}" if sub.startswith("-") else f"unknown subcommand {sub!r}"
        print(f"krepro: {say(what)}: the subcommands are {', '.join(SUBCOMMANDS)} (see --help)", file=sys.stderr)
        return USAGE
    # A closed stdout (| head) ends these quietly, as it ends cat; a kill
    # (TERM) is an interrupt, as Ctrl-C is; a character the terminal's
    # encoding lacks is escaped, not fatal.
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    sys.stdout.reconfigure(errors="backslashreplace")
    signal.signal(signal.SIGTERM, interrupted)
    return handler(rest)


def interrupted(signum, frame):
    raise KeyboardInterrupt


def entry(argv):
    sub = argv[0] if argv and argv[0] in SUBCOMMANDS else None
    # From here a Ctrl-C is KeyboardInterrupt: the runner keeps a partial run.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return main(argv)
    except KeyboardInterrupt:
        # A second Ctrl-C must not interrupt the line that says so.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        print(f"krepro: {sub + ': ' if sub else ''}interrupted", file=sys.stderr)
        return INTERRUPTED
    except Refused as e:
        # An input refused where it is used (a variable, a file): one line.
        print(f"krepro: {sub + ': ' if sub else ''}{say(e)}", file=sys.stderr)
        return USAGE
    except BrokenPipeError:
        # A closed stdout (run --dry-run | head) ends it quietly, as it ends
        # cat and the other subcommands (SIGPIPE), not with a traceback.
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
        return UNDECIDED


try:
    status = entry(sys.argv[1:])
    signal.signal(signal.SIGINT, signal.SIG_IGN)
except KeyboardInterrupt:
    # Between main()'s end and the exit: still an interrupt.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("krepro: interrupted", file=sys.stderr)
    status = INTERRUPTED
if status == INTERRUPTED:
    # An interpreter that caught a KeyboardInterrupt can still end itself by
    # SIGINT at exit (seen as -2, not 130): the files are written, so go now.
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except OSError:
            pass
    os._exit(status)
sys.exit(status)
