#!/usr/bin/env python3
"""Check what every reproducer declares (build/repro/<id>.json, written by the
native build from its --describe) against the rest of the repository: the
kernel config fragments its arches' kernels are built from (the options it
needs and the detectors its evidence needs), its fix patch, the kernel report
table its signatures name, its source (own evidence, and at most
MAX_SOURCE_LINES lines), and its directory; and that the
kinds the signature comment in repro/lib/krepro.h and
docs/adding-a-reproducer.md list are the table's.

usage: test-metadata.py BUILD/repro
Each failed check prints the reproducer and what; exit 1 if any failed.
"""
import glob
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import arches, meta as metamod  # noqa: E402
from krepro.reports import console  # noqa: E402

CONFIG = os.path.join(TOP, "kernel-patches", "config")
# The guest arches krepro builds kernels and guests for (scripts/arches.tsv).
ARCHES = set(arches.ARCHES)
# Report kinds that only a debug option prints: a signature of the kind must
# declare it among its detectors, or a kernel without it would be taken to
# see the bug (kernel-reports.tsv; lib/list_debug.c, mm/kasan/, ...).
KIND_DETECTORS = {"KASAN": "CONFIG_KASAN", "KFENCE": "CONFIG_KFENCE", "KCSAN": "CONFIG_KCSAN",
                  "UBSAN": "CONFIG_UBSAN", "FORTIFY": "CONFIG_FORTIFY_SOURCE",
                  "LIST": "CONFIG_DEBUG_LIST", "ODEBUG": "CONFIG_DEBUG_OBJECTS",
                  "MEMLEAK": "CONFIG_DEBUG_KMEMLEAK", "LOCKDEP": "CONFIG_LOCKDEP",
                  "HUNG": "CONFIG_DETECT_HUNG_TASK"}
LIB = os.path.join(TOP, "repro", "lib")
# Reproducers without a kernel-patches/<id>/ of their own, and whose series
# builds the kernels they are proven against. xfs-rmap-fuzz is the xfs/371-style
# sweep over the same bug (seed 003) and fix (its revert, seed 011) as
# xfs-rmap-keys (both READMEs say so; both declare the same fix and
# introducing commit): it runs on xfs-rmap-keys's kernels.
SHARED_PATCHES = {"xfs-rmap-fuzz": "xfs-rmap-keys"}
# A reproducer's C file holds its bug's steps and evidence, which a reviewer
# reads whole; what is not about its bug is written once in repro/lib/.
MAX_SOURCE_LINES = 450

# Options a reproducer needs that no fragment names because 6.1's Kconfig
# turns them on by itself: option -> the options it depends on. Each is a
# promptless or EXPERT-only "default y", so it is y when its dependencies are
# and no fragment says "is not set" (merge_config.sh -n starts from
# allnoconfig, which keeps defaults of symbols a user cannot set).
#   fs/sysfs/Kconfig:  config SYSFS bool "..." if EXPERT, default y
KCONFIG_DEFAULT_Y = {"CONFIG_SYSFS": []}

failures = []


def fail(repro, what):
    failures.append(f"{repro}: {what}")
    print(f"FAIL {repro}: {what}")


def fragment_arches(path):
    """A fragment's "# krepro-arches:" line; none means x86_64 (kernels.sh)."""
    with open(path) as f:
        for line in f:
            if line.startswith("# krepro-arches:"):
                return line.split(":", 1)[1].split()
    return ["x86_64"]


def fragments(arch):
    """scripts/kernels.sh config_fragments(): base.config, the arch's own
    fragment, then every other fragment (not base, not an arch's) whose
    krepro-arches line names this arch, in file-name order."""
    out = [os.path.join(CONFIG, "base.config"), os.path.join(CONFIG, f"{arch}.config")]
    for path in sorted(glob.glob(os.path.join(CONFIG, "*.config"))):
        name = os.path.basename(path)[:-len(".config")]
        if name == "base" or name in ARCHES:
            continue
        if arch in fragment_arches(path):
            out.append(path)
    return out


def config_of(arch):
    """The options the arch's fragments set: name -> value, the last fragment
    that sets one winning (merge_config.sh); "is not set" unsets it. Then the
    KCONFIG_DEFAULT_Y options whose dependencies are set."""
    opts, unset = {}, set()
    for path in fragments(arch):
        if not os.path.isfile(path):
            fail(arch, f"missing config fragment {os.path.relpath(path, TOP)}")
            continue
        with open(path) as f:
            for line in f:
                line = line.strip()
                m = re.match(r"^(CONFIG_[A-Za-z0-9_]+)=(.*)$", line)
                if m:
                    opts[m.group(1)] = m.group(2)
                    unset.discard(m.group(1))
                    continue
                m = re.match(r"^# (CONFIG_[A-Za-z0-9_]+) is not set$", line)
                if m:
                    opts.pop(m.group(1), None)
                    unset.add(m.group(1))
    for opt, deps in KCONFIG_DEFAULT_Y.items():  # in dependency order
        if opt not in opts and opt not in unset and \
                all(opts.get(d) in ("y", "m") for d in deps):
            opts[opt] = "y"
    return opts


def report_kinds():
    return {kind for kind, _, _, _ in console.load_patterns()}


# Where the kinds are listed for reproducer authors: "kernel-reports.tsv (KASAN,
# ...)" in each file, its line breaks and comment stars aside.
KIND_LISTS = {os.path.join("repro", "lib", "krepro.h"): r"kernel-reports\.tsv \(([A-Z, ]+)\)",
              os.path.join("docs", "adding-a-reproducer.md"): r"kernel-reports\.tsv` \(([A-Z, ]+)\)"}


def check_kind_lists(kinds):
    for rel, pattern in KIND_LISTS.items():
        with open(os.path.join(TOP, rel)) as f:
            text = re.sub(r"\s*\n\s*\*?\s*", " ", f.read())
        m = re.search(pattern, text)
        listed = {k.strip() for k in m.group(1).split(",")} if m else set()
        if listed != kinds:
            fail("(all)", f"{rel} lists kinds {sorted(listed)}, kernel-reports.tsv has {sorted(kinds)}")


def fix_patch_headers(patch_dir):
    """Each fix-*.patch's header: the mail up to its diffstat or first diff."""
    out = {}
    for path in sorted(glob.glob(os.path.join(patch_dir, "fix-*.patch"))):
        head = []
        with open(path, errors="replace") as f:
            for line in f:
                if line.rstrip("\n") == "---" or line.startswith("diff --git "):
                    break
                head.append(line)
        out[path] = "".join(head)
    return out


def check_fields(name, raw):
    """The JSON itself, as --describe wrote it (raw), against meta.py's
    Reproducer."""
    for why in metamod.json_problems(raw):
        fail(name, why)
    if raw.get("arches") == []:
        fail(name, "arches is empty")
    if isinstance(raw.get("min_cpus"), int) and raw["min_cpus"] < 1:
        fail(name, f"min_cpus {raw['min_cpus']} < 1")
    if isinstance(raw.get("timeout"), int) and raw["timeout"] < 1:
        fail(name, f"timeout {raw['timeout']} < 1")


def check_arches(name, meta):
    unknown = set(meta.arches) - ARCHES
    if unknown:
        fail(name, f"arches {sorted(unknown)} not in {sorted(ARCHES)}")


def check_kconfig(name, meta, configs):
    for arch in set(meta.arches) & ARCHES:
        if arch not in configs:
            configs[arch] = config_of(arch)
        opts = configs[arch]
        for need in meta.needs_kconfigs:
            opt, eq, want = need.partition("=")
            have = opts.get(opt)
            if eq and have != want:
                fail(name, f"{need}: the {arch} fragments set {opt}={have}" if have else
                     f"{need}: not set by the {arch} config fragments")
            elif not eq and have not in ("y", "m"):
                fail(name, f"{need}: not =y or =m in the {arch} config fragments"
                     + (f" (it is {have})" if have else ""))


def check_fix(name, meta, metas):
    sha = meta.fix_commit.split(" ", 1)[0]
    if not re.fullmatch(r"[0-9a-f]{12,40}", sha):
        fail(name, f"fix_commit {meta.fix_commit!r} does not start with a commit id")
        return
    owner = name
    if not os.path.isdir(os.path.join(TOP, "kernel-patches", name)):
        owner = SHARED_PATCHES.get(name)
        if not owner:
            fail(name, "no kernel-patches/" + name + "/ and no SHARED_PATCHES entry "
                 "saying whose series builds its kernels")
            return
        other = metas.get(owner)
        if other and (other.fix_commit, other.bug_commit) != (meta.fix_commit, meta.bug_commit):
            fail(name, f"shares {owner}'s patches but declares another fix or "
                 f"introducing commit ({meta.fix_commit!r} vs {other.fix_commit!r})")
    headers = fix_patch_headers(os.path.join(TOP, "kernel-patches", owner))
    if not headers:
        fail(name, f"no kernel-patches/{owner}/fix-*.patch")
    elif not any(re.search(r"\b" + sha, h) for h in headers.values()):
        fail(name, f"fix commit {sha} is not named in the header of "
             + ", ".join(os.path.relpath(p, TOP) for p in headers))


def check_signatures(name, meta, kinds):
    for i, sig in enumerate(meta.signatures):
        where = f"signature {i + 1}"
        if not sig.is_hang and sig.kind not in kinds:
            fail(name, f"{where}: kind {sig.kind!r} is neither HANG nor a kind of "
                 "repro/lib/kernel-reports.tsv")
        need = KIND_DETECTORS.get(sig.kind)
        if need and need not in [d.partition("=")[0] for d in sig.detectors]:
            fail(name, f"{where}: a {sig.kind} report is printed only with {need}: "
                 "declare it in its detectors")
        for key in ("title", "frame"):
            if getattr(sig, key) is None:
                continue
            try:
                re.compile(getattr(sig, key))
            except (re.error, TypeError) as e:
                fail(name, f"{where}: {key} {getattr(sig, key)!r} is not a Python regex: {e}")


def detector_lists(meta):
    """(where, detectors) of each evidence path the reproducer declares."""
    out = [(f"signature {i + 1}", sig.detectors) for i, sig in enumerate(meta.signatures)]
    return out + [("own_detectors", meta.own_detectors)]


def check_detectors(name, meta, configs):
    """Every detector is on in the kernels krepro builds for the reproducer's
    arches: its recorded rate was measured with them all, so a krepro
    kernel is never blind to a path the record counted."""
    for where, dets in detector_lists(meta):
        for det in dets:
            if not isinstance(det, str) or not re.fullmatch(r"CONFIG_[A-Za-z0-9_]+(=\S+)?", det):
                fail(name, f"{where}: detector {det!r} is not CONFIG_X or CONFIG_X=v")
                continue
            opt, eq, want = det.partition("=")
            for arch in sorted(set(meta.arches) & ARCHES):
                have = configs.setdefault(arch, config_of(arch)).get(opt)
                if (have != want) if eq else (have not in ("y", "m")):
                    fail(name, f"{where}: detector {det} is not set by the {arch} config "
                         f"fragments (it is {have or 'unset'})")
    if meta.own_detectors and not meta.own_evidence:
        fail(name, "own_detectors without own_evidence")


def failing_functions():
    """The library's functions a case may call that FAIL it: each top-level
    definition of repro/lib/*.c whose body calls krepro_fail() or another
    of them (the harness, which defines krepro_fail, aside)."""
    bodies = {}
    for path in sorted(glob.glob(os.path.join(LIB, "*.c"))):
        if os.path.basename(path) == "harness.c":
            continue
        with open(path) as f:
            text = f.read()
        for m in re.finditer(r"^[A-Za-z][^;{}]*?\b(\w+)\([^;{}]*\)\s*\n\{\n(.*?)^\}", text, re.M | re.S):
            bodies[m.group(1)] = m.group(2)
    failing = {"krepro_fail"}
    while True:
        more = {n for n, b in bodies.items() if n not in failing and
                any(re.search(r"\b" + re.escape(f) + r"\(", b) for f in failing)}
        if not more:
            return failing
        failing |= more


def check_own_evidence(name, meta, failing):
    """own_evidence says whether the reproducer's cases can FAIL by
    themselves: its source calls krepro_fail() or a library function that
    does, or names one as a case's function."""
    text = ""
    for path in glob.glob(os.path.join(TOP, "repro", name, "*.c")):
        with open(path, errors="replace") as f:
            text += f.read()
    calls = sorted(f for f in failing if re.search(r"\b" + re.escape(f) + r"\b", text))
    if meta.own_evidence and not calls:
        fail(name, "own_evidence is true, but its source calls neither krepro_fail() nor "
             "a library function that FAILs a case")
    elif not meta.own_evidence and calls:
        fail(name, f"own_evidence is false, but its source calls {', '.join(calls)}")


def check_each(metas):
    """Each reproducer's declaration against the rest of the repository."""
    kinds = report_kinds()
    check_kind_lists(kinds)
    configs = {}
    failing = failing_functions()
    for name, meta in sorted(metas.items()):
        check_arches(name, meta)
        check_kconfig(name, meta, configs)
        check_fix(name, meta, metas)
        check_signatures(name, meta, kinds)
        check_detectors(name, meta, configs)
        check_own_evidence(name, meta, failing)


def read_built(bindir):
    """{name: Reproducer} of the built descriptions, each JSON checked as
    written (check_fields) before meta.py reads it."""
    metas = {}
    for path in sorted(glob.glob(os.path.join(bindir, "*.json"))):
        stem = os.path.basename(path)[:-len(".json")]
        try:
            raw = metamod.read(path)
        except metamod.MetaError as e:
            fail(stem, str(e))
            continue
        if raw["name"] != stem:
            fail(stem, f"{path} names {raw['name']!r}")
        if os.stat(path).st_mode & 0o111:
            fail(stem, f"{path} is executable: the guest image would take it for a reproducer")
        check_fields(stem, raw)
        metas[stem] = metamod.Reproducer.from_json(raw)
    if not metas:
        fail("(all)", f"no reproducer metadata (*.json) in {bindir}")
    return metas


def check_tree(metas, bindir):
    """The tree's side: every reproducer directory has its README and C
    files of at most MAX_SOURCE_LINES lines, and the native build described
    every one of them; every bug's patch series has its reproducer."""
    for src in sorted(glob.glob(os.path.join(TOP, "repro", "*", "*.c"))):
        d = os.path.dirname(src)
        repro = os.path.basename(d)
        if repro == "lib":
            continue
        if not os.path.isfile(os.path.join(d, "README.md")):
            fail(repro, f"repro/{repro}/ has C source but no README.md")
        with open(src, errors="replace") as f:
            lines = sum(1 for _ in f)
        if lines > MAX_SOURCE_LINES:
            fail(repro, f"{os.path.relpath(src, TOP)} has {lines} lines, more than "
                 f"{MAX_SOURCE_LINES}: move what is not about its bug to repro/lib/")
        if repro not in metas:
            fail(repro, f"no {os.path.join(bindir, repro + '.json')}: not built by the "
                 "native build (no repro/" + repro + "/CMakeLists.txt?)")
    for d in sorted(glob.glob(os.path.join(TOP, "kernel-patches", "*", ""))):
        repro = os.path.basename(os.path.dirname(d))
        if repro != "config" and repro not in metas:
            fail(repro, f"kernel-patches/{repro}/ has no reproducer of that name")


def check_sources(metas):
    """run-in-qemu.sh checks names, arches and --list before anything is
    built, from the source tree: it must say what the built metadata says."""
    table = metamod.sources(os.path.join(TOP, "repro"))
    for name, meta in sorted(metas.items()):
        src = table.get(name)
        if src is None:
            fail(name, "built, but not in the source tree's table (meta.sources())")
        elif src["arches"] != list(meta.arches) or src["in_matrix"] != meta.in_matrix:
            fail(name, f"the source tree says {src}, the built --describe says arches "
                 f"{list(meta.arches)}, not_in_matrix {not meta.in_matrix}")
    for name in sorted(set(table) - set(metas)):
        fail(name, "in the source tree's table but not built")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    metas = read_built(sys.argv[1])
    check_tree(metas, sys.argv[1])
    check_sources(metas)
    check_each(metas)
    print(f"{len(metas)} reproducers checked, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
