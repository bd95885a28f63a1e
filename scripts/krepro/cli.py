"""run-in-qemu.sh's options, checked before anything is built or booted."""
import argparse
import datetime
import os
import shlex
import shutil
import sys

from . import arches, guest, meta as metamod, render, runner
from .paths import TOP
from .runner import USAGE, UNDECIDED

HELP = """\
Run krepro reproducers in QEMU guests and decide each row (one reproducer on
one kernel) by sequential runs at a stated confidence.

usage: run-in-qemu.sh [options] <repro>...
       run-in-qemu.sh --list | --report DIR | --help

  --arch A          guest arch: x86_64 | arm (default x86_64); selects the kernels,
                    the guest image, QEMU and the reproducers (--list too)
  --kernel K        unpatched | patched | PATH to a bzImage (arm: zImage); repeatable
                    (default unpatched). A PATH's config (CONFIG_IKCONFIG) is checked
                    against what the reproducers declare: missing options are warned
                    about, and the reproducer says SKIP naming them
  --tree DIR        build the kernel tree in DIR (yours: a git checkout, any state)
                    with krepro's config fragments (for --arch), objects outside DIR,
                    and run on it; repeatable. Not a kernel tree or no build: exit 125
                    and the build log's path (git bisect skips the commit)
  --miss P          target miss probability of a clean verdict (default 0.01): a row
                    runs until a bug of the reproducer's measured FAIL rate would have
                    shown with probability 1-P, or its first FAIL
  --confidence C    the same as --miss 1-C (--confidence 0.99 = --miss 0.01)
  --max-runs N      cap on guests per row (default 20); a row that reaches it
                    without a decision says "undecided" with its figures
  --repeat N        fixed mode: exactly N guests per row, no sequential stopping
  --expect          judge against the matrix: FAIL on unpatched, PASS on patched;
                    the unpatched row measures the FAIL rate the patched row needs
  --any-report      count a kernel report that is not the bug (OTHER) as a FAIL
                    (for git bisect run: by default OTHER is undecided, 125)
  --timeout SEC     wall-clock limit per guest (default: the reproducer's own limit
                    plus 60 s for boot and power-off under TCG)
  -j, --jobs N      guests at once (default: $KREPRO_JOBS, else the machine's cores
                    divided by the 2 vCPUs a guest takes, at least 1). A row gets
                    another guest only while it is undecided; a race reproducer
                    that declares it (alone) runs with the host to itself
  --via V           what runs each guest: qemu (default: QEMU started here),
                    lava-run (a LAVA job per guest, through Debian's lava-dispatcher
                    on this machine, no server), or lava:ID (a LAVA job per guest
                    submitted with lavacli's identity ID to its lab; needs
                    --artifacts). Same outcomes, same run.json; -j N jobs at once
  --artifacts DIR=URL  with --via lava:ID: kernels, guest image and disks are copied
                    into DIR, which the lab downloads from as URL
  --accel A         tcg | kvm | auto (default tcg; auto uses KVM only after a probe
                    boot proves it works, else TCG; arm guests run under TCG only)
  --results DIR     where the run directory goes (default results/<time>)
  --record-rates    with --kernel unpatched and --repeat N: write the measured FAIL
                    rates to repro/<id>/fail-rate.json (make calibrate)
  --keep            one guest; after the reproducer, keep it up with a shell on this
                    terminal instead of powering off (for triage by hand)
  --append ARGS     extra kernel command line for every guest (after krepro's own
                    and the reproducer's), e.g. --append "ftrace=function"
  --qemu-opts OPTS  extra QEMU options for every guest, split as a shell would,
                    e.g. --qemu-opts "-m 2G" (a later option overrides krepro's)
  --gdb [PORT]      one guest, as --keep, with QEMU's gdbstub on PORT (default 1234),
                    stopped at its first instruction, nokaslr on the kernel command
                    line; prints the gdb command that attaches (with this image's
                    vmlinux where krepro kept it)
  --vmlinux PATH    debug information of the one --kernel PATH: its vmlinux, or
                    Debian's linux-image-*-dbg package (.deb or unpacked). FAIL and
                    OTHER reports are decoded to file:line with it (krepro's own
                    builds keep their vmlinux; without one, reports stay raw)
  --list            the reproducers of the matrix for --arch (all but the sweeps,
                    which declare why they are left out; run those by name)
  --report DIR      re-render a past run's reports from its run.json; boots nothing

A guest run's outcome: PASS; FAIL (the reproducer's own evidence, or a kernel
report matching the bug's declared signature); OTHER (a kernel report after the
start mark that is not this bug: kept and shown, never counted as the bug);
HANG (no result in time); BROKEN (no setup, no init, or a report before the
start mark); SKIP (a prerequisite is missing, named).

Every row's decision and every guest run go to DIR/run.json as they end;
summary.md, results.ktap and junit.xml are rendered from it.

Exit status, as git bisect run reads it: 0 every row clean (PASS), 1 a row
reproduced its bug (with --expect: a row not as expected), 125 undecided
(BROKEN, SKIP, OTHER, HANG, undecided, a --tree that does not build),
128 usage error (an unknown option or reproducer, a missing path, a --tree that
is not a directory): git bisect run stops instead of marking a commit bad.

  git bisect run /path/to/run-in-qemu.sh --tree . <repro>
"""


class Parser(argparse.ArgumentParser):
    def error(self, message):
        print(f"run-in-qemu.sh: {message} (see --help)", file=sys.stderr)
        sys.exit(USAGE)


def positive(kind):
    def conv(v):
        try:
            x = int(v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"wants a positive number, not '{v}'")
        if x < 1:
            raise argparse.ArgumentTypeError(f"wants a positive number, not '{v}'")
        return x
    return conv


def probability(v):
    try:
        x = float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"wants a probability, not '{v}'")
    if not 0 < x < 1:
        raise argparse.ArgumentTypeError(f"wants a probability between 0 and 1, not '{v}'")
    return x


def parse(argv):
    p = Parser(prog="run-in-qemu.sh", add_help=False, usage=argparse.SUPPRESS)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("--arch", default=os.environ.get("KREPRO_ARCH", "x86_64"))
    p.add_argument("--kernel", action="append", dest="kernels", default=[])
    p.add_argument("--tree", action="append", dest="trees", default=[])
    p.add_argument("--miss", type=probability)
    p.add_argument("--confidence", type=probability)
    p.add_argument("--max-runs", type=positive("--max-runs"), default=20)
    p.add_argument("--repeat", type=positive("--repeat"))
    p.add_argument("--timeout", type=positive("--timeout"))
    p.add_argument("-j", "--jobs", type=positive("--jobs"))
    p.add_argument("--via", default="qemu")
    p.add_argument("--artifacts")
    p.add_argument("--accel", choices=("tcg", "kvm", "auto"), default="tcg")
    p.add_argument("--results")
    p.add_argument("--expect", action="store_true")
    p.add_argument("--any-report", action="store_true")
    p.add_argument("--record-rates", action="store_true")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--append", default="")
    p.add_argument("--qemu-opts", default="")
    p.add_argument("--gdb", nargs="?", const=1234, type=positive("--gdb"))
    p.add_argument("--vmlinux")
    p.add_argument("--list", action="store_true")
    p.add_argument("--report")
    p.add_argument("repros", nargs="*")
    # Kernels keep their command-line order, --tree among --kernel.
    order = []
    for i, a in enumerate(argv):
        if a in ("--kernel", "--tree") and i + 1 < len(argv):
            order.append((a, argv[i + 1]))
        elif a.startswith(("--kernel=", "--tree=")):
            k, _, v = a.partition("=")
            order.append((k, v))
    o = p.parse_args(argv)
    o.kernel_specs = [v if k == "--kernel" else "tree:" + v for k, v in order]
    return o


def fail(msg):
    print(f"run-in-qemu.sh: {msg}", file=sys.stderr)
    return USAGE


def report(results, any_report):
    if not os.path.isdir(results):
        return fail(f"--report {results}: no such directory")
    if not os.path.isfile(os.path.join(results, "run.json")):
        return fail(f"--report {results}: no run.json there (not a krepro run directory, "
                    "or one from before run.json existed)")
    return render.render(results, any_report)


def main(argv):
    o = parse(argv)
    if o.help:
        print(HELP, end="")
        return 0
    if o.arch not in arches.ARCHES:
        return fail(f"--arch is one of: {' '.join(arches.ARCHES)}")
    if o.report:
        return report(o.report, o.any_report or None)
    if o.via not in ("qemu", "lava-run") and not (o.via.startswith("lava:") and len(o.via) > 5):
        return fail(f"--via is qemu, lava-run or lava:IDENTITY, not '{o.via}'")
    if o.gdb:
        o.keep = True
    if o.via != "qemu" and o.keep:
        return fail("--keep and --gdb need a guest on this terminal: --via qemu only")
    try:
        o.qemu_extra = shlex.split(o.qemu_opts)
    except ValueError as e:
        return fail(f"--qemu-opts: {e}")
    if o.qemu_extra and o.via != "qemu":
        return fail("--qemu-opts is for guests QEMU runs here (--via qemu): a LAVA device "
                    "sets its own QEMU options")
    tool = {"lava-run": ("lava-run", "lava-dispatcher")}.get(o.via) or (
        ("lavacli", "lavacli") if o.via.startswith("lava:") else None)
    if tool and not shutil.which(tool[0]):
        return fail(f"--via {o.via} needs {tool[0]} (Debian: apt-get install {tool[1]})")
    if o.via == "lava-run" and os.geteuid() != 0 and not os.access("/var/lib/lava/dispatcher", os.W_OK):
        # Where lava-run keeps every job's files; the package makes it root's.
        return fail("--via lava-run needs to write /var/lib/lava/dispatcher (lava-run's "
                    "job directories): run as root")
    if o.via.startswith("lava:"):
        d, sep, url = (o.artifacts or "").partition("=")
        if not sep or not os.path.isdir(d) or not url:
            return fail("--via lava:ID needs --artifacts DIR=URL: a directory of yours that "
                        "the lab downloads from as URL")
        o.artifacts = (d, url)
    elif o.artifacts:
        return fail("--artifacts is for --via lava:ID")
    if o.jobs is None:
        env = os.environ.get("KREPRO_JOBS")
        if env:
            try:
                o.jobs = positive("KREPRO_JOBS")(env)
            except argparse.ArgumentTypeError as e:
                return fail(f"KREPRO_JOBS {e}")
        else:
            o.jobs = guest.default_jobs()
    if o.miss and o.confidence:
        return fail("--miss and --confidence say the same thing: give one")
    o.miss = o.miss or (1 - o.confidence if o.confidence else 0.01)
    if o.keep:
        o.repeat = 1
    try:
        if not os.environ.get("KREPRO_NO_BUILD"):
            metamod.ensure_built()
        metas = metamod.load_all()
    except metamod.MetaError as e:
        print(f"krepro: error: {e}", file=sys.stderr)
        return USAGE
    if o.list:
        for r in metamod.for_arch(metas, o.arch, matrix_only=True):
            print(r)
        return 0
    if not o.repros:
        print(HELP, end="", file=sys.stderr)
        return USAGE
    known = metamod.for_arch(metas, o.arch)
    for r in o.repros:
        if r not in known:
            return fail(f"unknown reproducer '{r}' for {o.arch}; known ones:\n"
                        + "\n".join("  " + k for k in known))
    specs = o.kernel_specs or ["unpatched"]
    o.kernel_objs = [runner.Kernel(s, o.arch) for s in specs]
    try:
        for k in o.kernel_objs:
            k.check()
    except runner.UsageError as e:
        return fail(str(e))
    if o.vmlinux:
        paths = [k for k in o.kernel_objs if not k.flavour and not k.tree]
        if len(paths) != 1:
            return fail("--vmlinux belongs to one --kernel PATH: give exactly one "
                        "(krepro's flavours and --tree builds keep their own)")
        try:
            paths[0].set_debug(o.vmlinux)
        except runner.UsageError as e:
            return fail(str(e))
    labels = [k.label for k in o.kernel_objs]
    if len(set(labels)) != len(labels):
        return fail(f"two kernels share the label {labels!r}: give files distinct names")
    if o.record_rates and (specs != ["unpatched"] or not o.repeat):
        return fail("--record-rates measures the bug kernel: --kernel unpatched --repeat N only")
    o.metas = metas
    o.initrd = os.environ.get("KREPRO_INITRD")
    if o.results:
        o.results = os.path.realpath(o.results)
    else:
        o.results = os.path.join(TOP, "results", datetime.datetime.now().strftime("%Y%m%d-%H%M%S"))
        if os.path.exists(o.results):
            o.results += f"-{os.getpid()}"
    try:
        os.makedirs(o.results, exist_ok=True)
    except OSError as e:
        return fail(f"cannot create {o.results}: {e}")
    code = runner.main_run(o)
    if o.record_rates and code in (0, 1):
        runner.record_rates(o)
    return code
