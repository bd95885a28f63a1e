"""The invocations tests/walk_invocations.py walks: (name, argv, exits
allowed or None for any in the contract, extra environment), built from
classes of odd input crossed with every entry point and option."""
import itertools
import os

X = "xfs-nowait-dio"
P = "{top}/kernel-patches/xfs-nowait-dio"
U = {128}
MAKE_U = {2}
LONG = "x" * 100000
DIGITS = ["\u0663", "\uff11\uff10", "1_0", " 3", "3 ", "+3", "0x3", "3.0", "\u00b2", "1e3"]

RUN_VALUE_OPTS = ["--arch", "--branch", "--rate", "--kernel", "--tree", "--miss", "--confidence",
                  "--max-runs", "--repeat", "--timeout", "--jobs", "--via", "--artifacts", "--accel",
                  "--results", "--append", "--qemu-opts", "--vmlinux", "--report"]
RUN_FLAGS = ["--version", "--dry-run", "--replace", "--expect", "--any-report", "--record-rates", "--keep",
             "--list"]
GATE_OPTS = ["--base", "--repeat", "--miss", "--results", "--repros", "--arch", "--branch", "--no-bisect", "--dry-run"]
BISECT_OPTS = ["--tree", "--good", "--bad", "--arch", "--branch", "--rate", "--calibrate", "--miss",
               "--floor", "--max-runs", "--timeout", "--results"]
BUNDLE_OPTS = ["--kernel", "--arch", "--branch", "--out", "--timeout"]
NUMBER_OPTS = ["--max-runs", "--repeat", "--timeout", "--jobs"]


def typo(opt):
    """opt with two letters of its name swapped (--repeat: --rpeeat)."""
    body = opt[2:]
    # The first two neighbours that differ (--append: --apepnd).
    i = next(i for i in range(len(body) - 1) if body[i] != body[i + 1] and (i or len(body) < 4))
    return "--" + body[:i] + body[i + 1] + body[i] + body[i + 2:]


def entries():
    """Each entry point as (label, argv prefix, how it takes a reproducer's
    run), for the classes that apply to every one."""
    return [("run", ["{run}"]), ("run --dry-run", ["{run}", "--dry-run"]), ("gate.sh", ["{gate}"]),
            ("py run", ["{py}", "-m", "krepro", "run"]), ("py bisect", ["{py}", "-m", "krepro", "bisect"]),
            ("py bundle", ["{py}", "-m", "krepro", "bundle"]), ("py classify", ["{py}", "-m", "krepro", "classify"]),
            ("py report", ["{py}", "-m", "krepro", "report"]), ("py matrix", ["{py}", "-m", "krepro", "matrix"]),
            ("py gate", ["{py}", "-m", "krepro", "gate"])]


def typos():
    out = []
    for opt in RUN_VALUE_OPTS + RUN_FLAGS:
        out.append((f"run typo {typo(opt)}", ["{run}", typo(opt), "x", X], U, None))
    for opt in GATE_OPTS:
        out.append((f"gate.sh typo {typo(opt)}", ["{gate}", typo(opt), "x", P], U, None))
        out.append((f"gate.sh typo {typo(opt)}=x", ["{gate}", typo(opt) + "=x", P], U, None))
    for opt in BISECT_OPTS:
        out.append((f"bisect typo {typo(opt)}", ["{py}", "-m", "krepro", "bisect", typo(opt), "x"], U, None))
    for opt in BUNDLE_OPTS:
        out.append((f"bundle typo {typo(opt)}", ["{py}", "-m", "krepro", "bundle", X, typo(opt), "x"], U, None))
    for cmd in ["tre", "serise", "biuld", "stael", "stmap", "check-patchs", "fetch-debain", "XYZ"]:
        out.append((f"kernels.sh {cmd}", ["{kernels}", cmd], U, None))
    for sub in ["reprot", "clasify", "bundel", "bisct", "matirx", "RUN", "--verison"]:
        out.append((f"py {sub}", ["{py}", "-m", "krepro", sub], U, None))
    for name in ["XFS-NOWAIT-DIO", "xfs-nowait-di0", "xfsnowaitdio", "can-j1939", "-"]:
        out.append((f"run name {name!r}", ["{run}", "--dry-run", name], U, None))
        out.append((f"gate.sh --repros {name!r}", ["{gate}", "--repros", name, P], U, None))
    return out


def opt_equals():
    out = []
    for opt in ["--miss=2", "--confidence=0", "--repeat=0", "--max-runs=1001", "--timeout=0", "--jobs=65",
                "--accel=qemu", "--arch=sparc", "--branch=9.9", "--rate=3/2", "--via=ssh", "--gdb=0",
                "--kernel=", "--tree=", "--results=", "--report=", "--vmlinux=", "--classify="]:
        out.append((f"run {opt}", ["{run}", "--dry-run", opt, X], U, None))
    for opt in ["--dry-run=1", "--list=arm", "--expect=yes", "--help=1"]:
        out.append((f"run flag {opt}", ["{run}", opt, X], U, None))
    for opt in ["--repeat=0", "--miss=1", "--arch=sparc", "--branch=9.9", "--base=", "--repros=", "--results="]:
        out.append((f"gate.sh {opt}", ["{gate}", opt, P], U, None))
    for opt in ["--miss=2", "--floor=0", "--calibrate=0", "--max-runs=0", "--rate=sometimes", "--good="]:
        out.append((f"bisect {opt}", ["{py}", "-m", "krepro", "bisect", opt, "--bad=b", X], U, None))
    for opt in ["--arch=sparc", "--branch=9.9", "--timeout=0", "--kernel=", "--out="]:
        out.append((f"bundle {opt}", ["{py}", "-m", "krepro", "bundle", X, opt], U, None))
    out.append(("run --dry-run --kernel=patched (accepted)", ["{run}", "--dry-run", "--kernel=patched", X], {0},
                None))
    out.append(("gate.sh --help (stdout, 0)", ["{gate}", "--help"], {0}, None))
    out.append(("kernels.sh --help (stdout, 0)", ["{kernels}", "--help"], {0}, None))
    return out


def digits():
    out = []
    for opt, d in itertools.product(NUMBER_OPTS, DIGITS[:6]):
        out.append((f"run {opt} {d!r}", ["{run}", "--dry-run", opt, d, X], U, None))
    for d in DIGITS:
        out.append((f"gate.sh --repeat {d!r}", ["{gate}", "--repeat", d, P], U, None))
    for opt, d in itertools.product(["--calibrate", "--max-runs", "--timeout"], DIGITS[:4]):
        out.append((f"bisect {opt} {d!r}", ["{py}", "-m", "krepro", "bisect", "--good", "a", "--bad", "b",
                                            opt, d, X], U, None))
    for d in DIGITS[:4]:
        out.append((f"bundle --timeout {d!r}", ["{py}", "-m", "krepro", "bundle", X, "--kernel", "patched",
                                                "--timeout", d], U, None))
        out.append((f"KREPRO_JOBS={d!r}", ["{run}", "--dry-run", X], U, {"KREPRO_JOBS": d}))
        out.append((f"KREPRO_AFTER_REPORT={d!r}", ["{run}", "--dry-run", X], U, {"KREPRO_AFTER_REPORT": d}))
    for m in ["\u0660.5", "1e-30", "0.5%", "nan", "inf", "-0.1", "1/2"]:
        out.append((f"run --miss {m!r}", ["{run}", "--dry-run", "--miss", m, X], U, None))
    return out


def names():
    """Huge names and names with newlines, in every slot that takes one."""
    out = []
    bad = {"huge": LONG, "newline": "xfs-nowait-dio\nok 1 forged", "nul-free ctl": "a\x1b[2Jb",
           "bidi": "a\u202eb"}
    for label, v in bad.items():
        out += [(f"run name {label}", ["{run}", "--dry-run", v], U, None),
                (f"run --kernel {label}", ["{run}", "--dry-run", "--kernel", v, X], U, None),
                (f"run --tree {label}", ["{run}", "--dry-run", "--tree", v, X], U, None),
                (f"run --arch {label}", ["{run}", "--dry-run", "--arch", v, X], U, None),
                (f"run --report {label}", ["{run}", "--report", v], U, None),
                (f"run --classify {label}", ["{run}", "--classify", v], U, None),
                (f"gate.sh SERIES {label}", ["{gate}", v], U, None),
                (f"gate.sh --repros {label}", ["{gate}", "--repros", v, P], U, None),
                (f"gate.sh --base {label}", ["{gate}", "--base", v, P], U, None),
                (f"kernels.sh {label}", ["{kernels}", v], U, None),
                (f"kernels.sh build {label}", ["{kernels}", "build", v], U, None),
                (f"py {label}", ["{py}", "-m", "krepro", v], U, None),
                (f"bisect REPRO {label}", ["{py}", "-m", "krepro", "bisect", "--good", "a", "--bad", "b",
                                           "--tree", "{s}/empty", v], U, None),
                (f"bundle REPRO {label}", ["{py}", "-m", "krepro", "bundle", v, "--kernel", "patched"], U, None),
                (f"report DIR {label}", ["{py}", "-m", "krepro", "report", v], U, None),
                (f"KREPRO_BRANCH {label}", ["{run}", "--dry-run", X], U, {"KREPRO_BRANCH": v})]
    return out


# What a slot is given in the file classes: (label, path).
# The devices are copies in the scratch directory when the walk runs as root
# (walk_invocations.prepare()): an output refused wrongly must not replace
# the machine's own /dev/null.
SPECIAL = [("FIFO", "{s}/fifo"), ("/dev/zero", "{zero}"), ("/dev/null", "{null}"),
           ("a file", "{s}/file"), ("an empty dir", "{s}/empty"), ("a 5 GiB file", "{s}/huge"),
           ("a missing path", "{s}/missing/x"), ("/proc (read-only)", "/proc/1/krepro"),
           ("a FIFO .deb", "{s}/fifo.deb"), ("a junk .deb", "{s}/junk.deb"), ("a 5 GiB .deb", "{s}/huge.deb")]


def file_slots():
    """Every option or argument that takes a path, as argv for a path v."""
    return {
        "run --kernel": lambda v: ["{run}", "--dry-run", "--kernel", v, X],
        "run --vmlinux": lambda v: ["{run}", "--dry-run", "--kernel", "{s}/a/bzImage", "--vmlinux", v, X],
        "run --tree": lambda v: ["{run}", "--dry-run", "--tree", v, X],
        "run --results": lambda v: ["{run}", "--dry-run", "--results", v, X],
        "run --report": lambda v: ["{run}", "--report", v],
        "run --classify": lambda v: ["{run}", "--classify", v],
        "classify --vmlinux": lambda v: ["{py}", "-m", "krepro", "classify", "--vmlinux", v, "{s}/quiet.log"],
        "gate.sh SERIES": lambda v: ["{gate}", "--repros", X, v],
        "gate.sh --base": lambda v: ["{gate}", "--base", v, P],
        "gate.sh --results": lambda v: ["{gate}", "--results", v, P],
        "report DIR": lambda v: ["{py}", "-m", "krepro", "report", v],
        "gate DIR": lambda v: ["{py}", "-m", "krepro", "gate", v, "a", "b"],
        "matrix DIR": lambda v: ["{py}", "-m", "krepro", "matrix", v],
        "matrix --out": lambda v: ["{py}", "-m", "krepro", "matrix", "--out", v, "{s}/gated"],
        "bisect --tree": lambda v: ["{py}", "-m", "krepro", "bisect", "--dry-run", "--tree", v, "--good", "a",
                                    "--bad", "b", X],
        "bisect --results": lambda v: ["{py}", "-m", "krepro", "bisect", "--dry-run", "--tree", "{s}/empty",
                                       "--results", v, "--good", "a", "--bad", "b", X],
        "bundle --kernel": lambda v: ["{py}", "-m", "krepro", "bundle", X, "--kernel", v, "--out", "{s}/../out"],
        "bundle --out": lambda v: ["{py}", "-m", "krepro", "bundle", X, "--kernel", "{s}/a/bzImage", "--out", v],
        "KREPRO_INITRD": lambda v: ["{run}", "--dry-run", X],
        "KREPRO_CACHE": lambda v: ["{run}", "--dry-run", X],
    }


# Slot and path pairs that are fine: a directory where one is wanted, a
# new path for a run to make, a file where a file is wanted.
FINE = {("run --results", "an empty dir"), ("run --results", "a missing path"),
        ("gate.sh --results", "an empty dir"), ("gate.sh --results", "a missing path"),
        ("matrix --out", "a file"), ("matrix --out", "a missing path"), ("bundle --out", "an empty dir"),
        ("bundle --out", "a missing path"), ("run --classify", "a file"), ("run --classify", "/dev/null"),
        ("KREPRO_CACHE", "an empty dir"), ("KREPRO_CACHE", "a missing path"), ("KREPRO_INITRD", "a file"),
        ("KREPRO_INITRD", "a 5 GiB file"), ("run --classify", "a 5 GiB file"),
        ("run --classify", "a junk .deb"), ("run --classify", "a 5 GiB .deb")}
# Pairs refused otherwise than as a usage error: an empty --tree is no
# kernel tree, which its build would say with 125 (git bisect's skip).
WANT = {("run --tree", "an empty dir"): {125}}
# Fine, and then the gate's work begins (the tree unpacked): not walked.
# matrix --out a file: written where told, rightly.
WORK = {("gate.sh --results", "an empty dir"), ("gate.sh --results", "a missing path"),
        ("matrix --out", "a file"), ("matrix --out", "a 5 GiB file")}


def files():
    out = []
    for (slot, argv), (label, path) in itertools.product(file_slots().items(), SPECIAL):
        env = {slot: path} if slot.startswith("KREPRO_") else None
        want = WANT.get((slot, label)) or (None if (slot, label) in FINE else U)
        if slot.startswith("KREPRO_") and label.endswith(".deb") or (slot, label) in WORK:
            continue
        out.append((f"{slot} {label}", argv(path), want, env))
    return out


def series():
    """A series handed over: links out, FIFOs, things that are no patch."""
    return [("gate.sh SERIES dir with a FIFO", ["{gate}", "--repros", X, "{s}/series-fifo"], U, None),
            ("gate.sh SERIES dir with a link out", ["{gate}", "--repros", X, "{s}/series-link"], U, None),
            ("gate.sh SERIES no patch", ["{gate}", "--repros", X, "{s}/quiet.log"], U, None),
            ("gate.sh SERIES - ", ["{gate}", "--repros", X, "-"], U, None),
            ("gate.sh SERIES after --", ["{gate}", "--repros", X, "--", "--help"], U, None)]


def packages():
    """A .deb or an unpacked package handed over, in every slot that takes one."""
    slots = {"run --kernel": lambda v: ["{run}", "--dry-run", "--kernel", v, X],
             "run --vmlinux": lambda v: ["{run}", "--dry-run", "--kernel", "{s}/a/bzImage", "--vmlinux", v, X],
             "bundle --kernel": lambda v: ["{py}", "-m", "krepro", "bundle", X, "--kernel", v, "--out",
                                           "{s}/../out"]}
    debs = ["abs-link", "up-link", "dotdot", "abs-name", "fifo-member", "hard-link-out"]
    out = [(f"{slot} {deb}.deb", argv("{s}/debs/" + deb + ".deb"), U, None)
           for (slot, argv), deb in itertools.product(slots.items(), debs)]
    out.append(("run --kernel an unpacked package with a link out",
                ["{run}", "--dry-run", "--kernel", "{s}/debs/unpacked-link-out", X], U, None))
    # Good packages: a dry run reads them and writes nothing (no distro/ in the cache).
    good, dbg = "{s}/debs/good.deb", "{s}/debs/dbg.deb"
    out += [("run --kernel a good .deb (dry run: read, not unpacked)", ["{run}", "--dry-run", "--kernel", good, X],
             {0}, None),
            ("run --kernel=a good .deb (dry run: read, not unpacked)", ["{run}", "--dry-run", "--kernel=" + good, X],
             {0}, None),
            ("run --vmlinux a good -dbg .deb (dry run: read, not unpacked)",
             ["{run}", "--dry-run", "--kernel", good, "--vmlinux", dbg, X], {0}, None),
            ("run --vmlinux a good -dbg .deb, --kernel the package unpacked",
             ["{run}", "--dry-run", "--kernel", "{s}/debs/good", "--vmlinux", dbg, X], {0}, None),
            ("run --kernel a -dbg .deb (no image)", ["{run}", "--dry-run", "--kernel", dbg, X], U, None),
            ("run --vmlinux a linux-image .deb (no vmlinux)",
             ["{run}", "--dry-run", "--kernel", good, "--vmlinux", good, X], U, None)]
    return out


def trees():
    """--tree: kernel trees as kernels.sh build-tree wants them, of the
    run's branch and another (a dry run plans them); trees it refuses (125,
    as the build would, before any work, dry run or not)."""
    out = [(f"run --dry-run --tree {t}", ["{run}", "--dry-run", "--tree", "{s}/" + t, X], {0}, None)
           for t in ("tree-6.1", "tree-5.10")]
    out += [(f"run --dry-run --tree {t}", ["{run}", "--dry-run", "--tree", "{s}/" + t, X], {125}, None)
            for t in ("tree-no-version", "tree-no-arch", "empty")]
    out += [("run --tree an empty dir (a real run)", ["{run}", "--tree", "{s}/empty", X], {125}, None),
            ("run --tree=an empty dir, --kernel patched", ["{run}", "--dry-run", "--kernel", "patched",
                                                           "--tree={s}/empty", X], {125}, None),
            ("run --tree a kernel tree, --arch arm (no arch/arm)", ["{run}", "--dry-run", "--arch", "arm", "--tree",
                                                                    "{s}/tree-6.1", "arm-kprobe-fortify"], {125},
             None)]
    return out


BAD_ENV = {"KREPRO_NO_BUILD": ["yes", "2", "true", " 1"], "KREPRO_JOBS": ["0", "abc", "65"],
           "KREPRO_AFTER_REPORT": ["abc", "-1", "99999"], "KREPRO_ARCH": ["sparc", "x86_64 "],
           "KREPRO_BRANCH": ["9.9", "6.1\n"], "KREPRO_CACHE": ["relative/dir"]}


def env_vars():
    """Bad variables against each entry point that reads them: refused where
    read; help and metadata that do not read them unaffected."""
    out = []
    points = {"run --dry-run": (["{run}", "--dry-run", X], U),
              "run --help": (["{run}", "--help"], {0}),
              "classify": (["{py}", "-m", "krepro", "classify", "{s}/quiet.log"], None),
              "gate.sh": (["{gate}", "--repros", X, "--results", "{s}/file", P], U),
              "kernels.sh series": (["{kernels}", "series", "patched"], None),
              "bundle": (["{py}", "-m", "krepro", "bundle", X, "--kernel", "{s}/file"], U)}
    for (var, values), (point, (argv, want)) in itertools.product(BAD_ENV.items(), points.items()):
        for v in values[:2]:
            out.append((f"{var}={v!r} {point}", argv, want, {var: v}))
    return out


def scripts(top):
    """Every script under scripts/ and bench/ (and run-in-qemu.sh), as argv:
    --help and -h are usage on stdout and 0, doing nothing else; an unknown
    option is 128."""
    out = []
    for sub in ("scripts", "bench"):
        for name in sorted(os.listdir(os.path.join(top, sub))):
            path = os.path.join(top, sub, name)
            # A library is sourced (common.sh) or imported (a .py named as a
            # module, proof_records.py), not run; scripts are named with hyphens.
            if not os.path.isfile(path) or name == "common.sh" or \
                    name.endswith(".py") and name[:-3].isidentifier() or \
                    not (name.endswith((".sh", ".py")) or os.access(path, os.X_OK)):
                continue
            argv = ["{py}", path] if name.endswith(".py") else [path]
            label = f"{sub}/{name}"
            out += [(f"{label} --help", argv + ["--help"], {0}, None),
                    (f"{label} -h", argv + ["-h"], {0}, None),
                    (f"{label} unknown option", argv + ["--no-such-option"], U, None)]
    return out + [("run --help", ["{run}", "--help"], {0}, None), ("run -h", ["{run}", "-h"], {0}, None)]


def make():
    m = ["make", "-s", "-C", "{top}"]
    return [(f"make {' '.join(a)}", m + a, MAKE_U, None) for a in (
        ["repro-all", "REPROS=XFS-NOWAIT-DIO"], ["repro-all", "MISS=1e-30x"], ["repro-all", "REPEAT=\u0663"],
        ["repro-all", "MAX_RUNS=0"], ["repro-all", "BRANCH=9.9"], ["sweeps", "SWEEPS="],
        ["sweeps", "SWEEPS=xfs-rmap-fuz"], ["calibrate", "CALIBRATE_RUNS=1_0"], ["kernels", "BRANCH=6.1;true"],
        ["gate", "SERIES={s}/missing"], ["gate", "SERIES={s}/file", "REPEAT=0"], ["gate", "SERIES=" + P,
                                                                                   "BASE=/etc"],
        ["gate", "SERIES=" + P, "REPROS=typo"], ["gate", "SERIES={s}/series-fifo"],
        ["report", "DIR={s}/fifo-run"], ["report", "DIR=my \"run"], ["report", "DIR=$(touch pwned)"],
        ["report", "DIR={s}/file"], ["bisect", "TREE={s}/file", "GOOD=a", "BAD=b", "REPRO=" + X],
        ["bisect", "TREE={s}/empty", "GOOD=a", "BAD=b", "REPRO=typo"],
        ["bundle", "REPRO=" + X, "KERNEL={s}/fifo"], ["bundle", "REPRO=" + X, "KERNEL=patched",
                                                     "BUNDLES={s}/file"],
        ["bundle", "REPRO=typo", "KERNEL=patched"], ["check-patches", "BRANCH=7"])]


def table(subst):
    return scripts(subst["top"]) + typos() + opt_equals() + digits() + names() + files() + series() + packages() + trees() + env_vars() + make()
