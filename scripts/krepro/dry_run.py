"""run-in-qemu.sh --dry-run: what a run would build and boot, and how long it
would take from the recorded times. Reads files only; builds and boots
nothing."""
import os

from . import branches, detectors as evidence, kernels, meta as metamod, rates, stats
from .paths import TOP, build, git_commit
from .scheduler import rate_record, row_role


def timing(image):
    """The last build's seconds of an image (kernels.sh writes <image>.timing)."""
    try:
        with open(image + ".timing") as f:
            fields = dict(w.split("=", 1) for w in f.read().split() if "=" in w)
        return int(fields["seconds"])
    except (OSError, KeyError, ValueError):
        return None


def kernel_line(k):
    """What the run does for kernel k before its rows, and the build seconds
    it may cost (None: nothing to build; "unknown": a build of unknown cost)."""
    if k.flavour:
        img = kernels.flavour_image(k.arch, k.flavour, k.run_branch)
        stamp = kernels.read_stamp(img)
        if not os.path.isfile(img) or not stamp:
            return f"not built: built first ({img})", "unknown"
        if kernels.kernels_sh(k.arch, "stale", k.flavour, branch=k.run_branch).stdout.strip():
            last = timing(img)
            return (f"stale (a patch or fragment changed): rebuilt first; its last build took "
                    f"{last} s" if last is not None else "stale: rebuilt first"), last or "unknown"
        return f"built {stamp[:12]}, current ({img})", None
    if k.tree is not None:
        return (f"the tree {k.tree} (its Makefile: {branches.of_tree(k.tree)}) is built first with "
                f"krepro's {k.run_branch} fragments (objects under the cache)"), "unknown"
    what = f"distribution kernel {k.release}, its modules loaded" if k.release else "as given"
    if k.release and not k.distro_root:
        what += "; the run unpacks the package first (a dry run only reads it)"
    return f"{what} ({k.image})", None


def guest_seconds(repro, arch, branch):
    """The recorded median seconds of one guest of repro on branch, and where
    it is from."""
    rec = rates.repo_record(repro, arch, branch) or {}
    secs = rec.get("seconds") or []
    if len(secs) == 3:
        return secs[1], (f"median of {rec.get('runs', '?')} unpatched guests on {branch}, "
                         f"{rec.get('date', '?')}")
    return None, "no recorded guest time"


def row_guests(config, repro, k, meta):
    """Guests the row needs if every run ends as its role expects, and why.
    meta: the reproducer's --describe, or None before it is built (then its
    detectors are not checked)."""
    r = row_role(config.expect, k)
    sight = evidence.Sight(meta, k.config)
    if sight.all_blind:
        return r, 0, f"not booted (undecided): {sight.note()}; nothing else could show the bug"
    # Under --accel auto the accelerator is known only once a guest boots.
    accel = "tcg" if config.arch != "x86_64" else None if config.accel == "auto" else config.accel
    caveat = ""
    rec, note = rate_record(repro, k, r, sight, accel, config.rate)
    if rec and r == "probe" and accel is None:
        caveat = f"; it applies only if the guests run under {rates.accel_of(rec)}"
    rate = (rec["fails"], rec["runs"], note) if rec else None
    row = stats.Row(r, target=config.miss, cap=config.max_runs, rate=rate, repeat=config.repeat,
                    any_report=config.any_report)
    n = row.expected_remaining()
    if config.repeat:
        why = f"fixed: {config.repeat} runs"
    elif r == "bug":
        why = f"stops at its first FAIL ({note})" if rate else f"measures its FAIL rate ({note})"
    elif rate:
        why = (f"{n} clean runs for {stats.miss_bound(config.miss)} "
               f"(rate {rate[0]}/{rate[1]}, bound ≥ {stats.pct(stats.rate_lower(rate[0], rate[1]))}"
               f"{caveat})")
    elif r == "probe":
        why = (f"no FAIL rate to weigh clean runs ({note}): stops after "
               f"{stats.Row.UNBOUNDED_CLEAN} clean runs, miss not bounded")
    else:
        why = f"no FAIL rate to weigh clean runs: runs to the cap ({note})"
    return r, n, why


def dry_run(config):
    print("krepro: dry run: nothing is built or booted")
    print(f"krepro {git_commit()}, branch {config.branch}, "
          f"arch {config.arch}, accel {config.accel}, via {config.via}, "
          f"{config.jobs} guest(s) at a time")
    builds = print_kernels(config)
    metas = print_built(config)
    print("rows (guests if each run ends as its role expects; time from recorded guest medians):")
    print_estimate(config, *print_rows(config, metas))
    if builds:
        parts = [f"{lbl} ({c} s its last time)" if c != "unknown" else f"{lbl} (time unknown)"
                 for lbl, c in builds]
        print("builds first: " + ", ".join(parts))
        if any(c == "unknown" for _, c in builds):
            print("  (a build with no recorded time here: a cold kernel build is the largest "
                  "cost of a run on 2 cores; docs/performance.md gives the measured figures)")
    print("(guest times are the bug kernel's recorded medians; a clean run can take longer)")
    return 0


def print_kernels(config):
    """Each kernel's line; the builds it costs [(label, seconds or "unknown")]."""
    builds = []
    print("kernels:")
    for k in config.kernels:
        line, cost = kernel_line(k)
        print(f"  {k.label:<12} {line}")
        if cost is not None:
            builds.append((k.label, cost))
    return builds


def print_built(config):
    """Whether the reproducers and the guest image are built; the
    reproducers' --describe ({} before they are built)."""
    built = all(os.path.isfile(os.path.join(build(), "repro", r + ".json")) for r in config.repros)
    try:
        metas = metamod.load_all() if built else {}
    except metamod.MetaError:
        metas = {}
    for k in config.kernels:
        k.load_config()
    sub = "" if config.arch == "x86_64" else config.arch
    initrd = config.initrd or os.path.join(build(), sub, "guest", "initramfs.cpio")
    print("reproducers: " + ("built" if built else "not built: make build first")
          + f"; guest image {os.path.relpath(initrd, TOP) if initrd.startswith(TOP) else initrd}"
          + ("" if os.path.isfile(initrd) else " (not built: built first)"))
    return metas


def print_rows(config, metas):
    """Each row's line: (guests, seconds, reproducers with no recorded time)."""
    total_guests, total_secs, unknown = 0, 0.0, []
    for r in config.repros:
        secs, src = guest_seconds(r, config.arch, config.branch)
        for k in config.kernels:
            rl, n, why = row_guests(config, r, k, metas.get(r))
            total_guests += n
            if secs is None:
                unknown.append(r)
                t = "time unknown"
            else:
                total_secs += n * secs
                t = f"~{n * secs:.0f} s"
            print(f"  {r:<20} {k.label:<12} {rl:<5} {n:>3} guest(s), {t}: {why}")
    return total_guests, total_secs, unknown


def print_estimate(config, total_guests, total_secs, unknown):
    mins = total_secs / 60
    est = f"about {total_secs:.0f} s ({mins:.1f} min) of guests" if total_secs else "no recorded guest times"
    if unknown:
        est += f", plus {len(set(unknown))} reproducer(s) with no recorded time ({' '.join(sorted(set(unknown)))})"
    if config.jobs > 1:
        est += f"; with {config.jobs} at a time, less wall clock"
    print(f"estimate: {total_guests} guests, {est}")
