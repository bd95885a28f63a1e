"""The run: kernels, guest image, disks, rows decided by sequential runs, and
run.json written as every guest ends."""
import datetime
import difflib
import hashlib
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time

from . import arches, decode, distro, evidence, guest, lava, rates, render, stats
from .guest import log
from .paths import SCRIPTS, TOP, build, cache, kernels as kernels_dir, read
from .answer import Watch
from .reports import decide, evidence_crash

USAGE = 128      # git bisect run aborts on a status >= 128
UNDECIDED = 125  # git bisect run skips the commit
DEFAULT_MISS = 0.01
# Boots a row may lose to the infrastructure (no init, QEMU died, a kernel
# report before the test's start mark) before it is BROKEN; they are retried
# and never counted as runs.
INFRA_RETRIES = 3
FLAVOURS = ("unpatched", "patched")


class UsageError(Exception):
    pass


class Undecidable(Exception):
    """The commit cannot be judged (a --tree that does not build)."""


def kernels_sh(arch, *args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env_extra=None):
    """scripts/kernels.sh for arch; its output captured unless told not to."""
    env = dict(os.environ, KREPRO_ARCH=arch, **(env_extra or {}))
    return subprocess.run([os.path.join(SCRIPTS, "kernels.sh"), *args], env=env,
                          stdout=stdout, stderr=stderr, text=True)


def flavour_image(arch, flavour):
    return os.path.join(kernels_dir(), f"{arches.image_name(arch)}-{arch}-{flavour}")


def read_stamp(image):
    try:
        with open(image + ".stamp") as f:
            return f.read().strip() or None
    except OSError:
        return None


def unpatched_build(arch):
    """The unpatched flavour's build stamp, when it is built: recorded rates
    are valid for it."""
    return read_stamp(flavour_image(arch, "unpatched"))


def git_commit():
    p = subprocess.run(["git", "-C", TOP, "rev-parse", "--short=12", "HEAD"],
                       capture_output=True, text=True)
    return p.stdout.strip() if p.returncode == 0 else "unknown"


class Kernel:
    def __init__(self, spec, arch):
        self.spec, self.arch = spec, arch
        self.flavour = spec if spec in FLAVOURS else None
        self.tree = spec[5:] if spec.startswith("tree:") else None
        self.image = None
        self.release = self.distro_root = None
        self.debug = None     # --vmlinux: (vmlinux, its modules' debug directory)
        self.initrd = None    # the run's guest image, unless this kernel needs its own
        # Its options {CONFIG_X: value}, or None; and where they were read,
        # or why they could not be (kernel_config()).
        self.config = self.config_source = None
        if self.flavour:
            self.label = spec
        elif self.tree:
            self.label = os.path.basename(os.path.realpath(self.tree))
        else:
            self.label = os.path.basename(spec)

    def check(self):
        """Bad input, before anything is built or booted."""
        if self.tree is not None:
            if not os.path.isdir(self.tree):
                raise UsageError(f"--tree {self.tree}: not a directory")
        elif not self.flavour:
            if not os.path.exists(self.spec):
                close = difflib.get_close_matches(self.spec, FLAVOURS, n=1, cutoff=0.6)
                raise UsageError(f"--kernel {self.spec}: no such file, and not a flavour "
                                 f"({' or '.join(FLAVOURS)})"
                                 + (f"; did you mean {close[0]}?" if close else ""))
            try:
                found = distro.resolve(self.spec)
            except distro.DistroError as e:
                raise UsageError(f"--kernel {e}")
            if found:
                # A distribution kernel with its modules.
                self.image, self.release, self.distro_root = found
                self.label = self.release
            if not os.path.isfile(self.image or self.spec) or \
                    not arches.is_kernel_image(self.arch, self.image or self.spec):
                raise UsageError(f"--kernel {self.spec}: not {arches.image_kind(self.arch)}"
                                 + (", a linux-image .deb, or an unpacked one" if self.arch == "x86_64" else ""))
            self.image = os.path.realpath(self.image or self.spec)

    def prepare(self):
        """Build what is missing (flavours, trees); the image path."""
        if self.flavour:
            self.image = flavour_image(self.arch, self.flavour)
            if os.environ.get("KREPRO_NO_BUILD"):
                if not os.path.isfile(self.image):
                    raise Undecidable(f"KREPRO_NO_BUILD is set and there is no {self.image}")
            elif not os.path.isfile(self.image) or kernels_sh(self.arch, "stale", self.flavour).stdout.strip():
                log(f"the {self.flavour} kernel is missing or stale: building it first")
                if kernels_sh(self.arch, "build", self.flavour, stdout=None, stderr=None,
                              env_extra={"KREPRO_DIE_CODE": "125"}).returncode:
                    raise Undecidable(f"building the {self.flavour} kernel failed")
        elif self.tree is not None:
            # kernels.sh prints the image's path; its progress goes to the terminal.
            p = kernels_sh(self.arch, "build-tree", self.tree, stderr=None,
                           env_extra={"KREPRO_DIE_CODE": "125"})
            if p.returncode:
                raise Undecidable(f"--tree {self.tree} was not built")
            self.image = p.stdout.strip().splitlines()[-1]
        self.image = os.path.realpath(self.image)
        return self.image

    def set_debug(self, spec):
        """--vmlinux: a vmlinux with debug information, or Debian's
        linux-image-*-dbg package (.deb or unpacked) holding one."""
        root = distro.unpack_deb(spec) if spec.endswith(".deb") and os.path.isfile(spec) else spec
        if os.path.isdir(root):
            found = distro.debug_vmlinux(root, self.release)
            if not found:
                raise UsageError(f"--vmlinux {spec}: no usr/lib/debug/boot/vmlinux-"
                                 f"{self.release or '*'} in it")
            self.debug = found
        elif os.path.isfile(spec):
            self.debug = (os.path.realpath(spec), None)
        else:
            raise UsageError(f"--vmlinux {spec}: no such file")

    def vmlinux(self):
        """(vmlinux, modules' debug directory) for this kernel, or (None, None):
        --vmlinux's; the one kernels.sh keeps beside each image it builds; a
        distribution's -dbg package installed on this host."""
        if self.debug:
            return self.debug
        cands = [self.image + ".vmlinux", os.path.join(os.path.dirname(self.image), "vmlinux")] \
            if self.image else []
        found = next((c for c in cands if os.path.isfile(c)), None)
        if found:
            return found, None
        if self.release:
            return distro.debug_vmlinux("/", self.release) or (None, None)
        return None, None

    @property
    def build_id(self):
        return read_stamp(self.image) if self.flavour else None

    def record(self):
        return {"label": self.label, "spec": self.spec, "image": self.image,
                "build": self.build_id, "modules": self.release, "initrd": self.initrd,
                "config": self.config_source if self.config is not None else None}

    def load_config(self):
        self.config, self.config_source = kernel_config(self)
        return self.config

    def guest_image(self, base, repros, metas):
        """A distribution kernel's guest image: krepro's with the modules its
        reproducers need (scripts/krepro/distro.py)."""
        tree = os.path.join(cache(), "linux-6.1")
        if not os.path.isdir(tree) and kernels_sh(self.arch, "tree", stdout=None, stderr=None).returncode:
            raise Undecidable("the kernel tree (scripts/kernels.sh tree) is needed to map options to modules")
        plan = distro.Plan(self.arch, self.release, self.distro_root, tree, metas, repros)
        for r in repros:
            for why in plan.missing[r]:
                log(f"warning: {self.label}: {why} ({r})")
            log(f"{self.label}: {r} gets {len(plan.load[r])} modules loaded before it starts"
                + (f" ({' '.join(plan.names(r))})" if plan.load[r] else ""))
        self.initrd = distro.guest_image(plan, base, self.arch)
        return self.initrd


def kernel_config(kernel):
    """(options {CONFIG_X: value}, where they were read), or (None, why not):
    a distribution kernel's boot/config-<release>; the .config kernels.sh
    keeps beside each image it installs (<image>.config; a kernel of the
    user's may have one there too) or in a --tree build's object directory;
    else the config the image carries (CONFIG_IKCONFIG)."""
    if kernel.distro_root:
        path = os.path.join(kernel.distro_root, "boot", f"config-{kernel.release}")
        if os.path.isfile(path):
            return distro.read_config(path), path
    image = kernel.image or (flavour_image(kernel.arch, kernel.flavour) if kernel.flavour else None)
    if not image or not os.path.isfile(image):
        return None, "no image yet"
    cands = [image + ".config"]
    in_obj = arches.ARCHES[kernel.arch]["image"]
    if kernel.tree is not None and image.endswith("/" + in_obj):
        cands.append(os.path.join(image[:-len(in_obj)], ".config"))
    found = next((c for c in cands if os.path.isfile(c)), None)
    if found:
        return distro.read_config(found), found
    return ikconfig(kernel, image)


def ikconfig(kernel, image):
    """The config an image carries, read by kbuild's scripts/extract-ikconfig
    (the --tree's own, else the cache tree's): (options, "CONFIG_IKCONFIG")
    or (None, why not)."""
    cands = [os.path.join(cache(), "linux-6.1", "scripts", "extract-ikconfig")]
    if kernel.tree:
        cands.insert(0, os.path.join(kernel.tree, "scripts", "extract-ikconfig"))
    x = next((c for c in cands if os.access(c, os.X_OK)), None)
    if not x:
        return None, "no scripts/extract-ikconfig (kernels.sh tree installs one)"
    p = subprocess.run([x, image], capture_output=True, text=True)
    cfg = dict(line.split("=", 1) for line in p.stdout.splitlines()
               if line.startswith("CONFIG_") and "=" in line) if p.returncode == 0 else {}
    if not cfg:
        return None, "it carries no config (CONFIG_IKCONFIG)"
    return cfg, "CONFIG_IKCONFIG"


def check_kconfig(kernel, repros, metas):
    """A kernel of the user's: warn about options a reproducer needs and its
    config lacks (in the guest the harness says SKIP), and about evidence it
    cannot show (the rows say so too)."""
    cfg = kernel.config
    if cfg is None:
        log(f"warning: {kernel.label}'s options not checked, nor the detectors the "
            f"reproducers' evidence needs: {kernel.config_source}")
        return
    if kernel.config_source == "CONFIG_IKCONFIG" and cfg.get("CONFIG_IKCONFIG_PROC") != "y":
        log(f"warning: {kernel.label} lacks CONFIG_IKCONFIG_PROC=y: in the guest the harness "
            "cannot check options either")
    for r in repros:
        missing = evidence.lacks(cfg, metas[r].get("kconfig", []))
        if missing:
            log(f"warning: {kernel.label} lacks {' '.join(missing)}, which {r} needs: it will SKIP")
        blind = evidence.Sight(metas[r], cfg).note()
        if blind:
            log(f"warning: {kernel.label}: {r}: {blind}")


def row_role(expect, kernel):
    """A row's role: with --expect, krepro's flavours are the bug and the fix;
    any other kernel (and every kernel without --expect) is a probe."""
    if expect and kernel.flavour == "unpatched":
        return "bug"
    if expect and kernel.flavour == "patched":
        return "fixed"
    return "probe"


def rate_record(repro, arch, role, sight, accel):
    """(record or None, what the records said) a row of role is weighed with:
    a bug or fixed row's is its unpatched build's; a probe row's must have
    been measured where the row runs (probe_record)."""
    if role != "probe":
        return rates.lookup(repro, arch, unpatched_build(arch))
    return probe_record(repro, arch, sight, accel)


def probe_record(repro, arch, sight, accel):
    """(record, source) for a probe row, or (None, why none applies): one
    measured on a kernel that shows every path the reproducer declares, as
    krepro's do (sight: evidence.Sight of this kernel), under accel (None:
    not checked)."""
    if not sight.full:
        return None, sight.note()
    rec, note = rates.lookup(repro, arch, None, accel=accel)
    if rec is None and note.startswith("no recorded rate"):
        note = "no recorded FAIL rate"
    return rec, note


class PlanRow:
    """A row of the plan and its state while the run decides it."""

    def __init__(self, index, repro, kernel, role):
        self.index, self.repro, self.kernel, self.role = index, repro, kernel, role
        self.after = None      # the bug row whose runs give this row its rate
        self.row = None        # stats.Row, opened when the row may start
        self.rate = self.note = None
        self.sight = None      # evidence.Sight: what the kernel can show of the bug
        self.unbounded = None  # why a clean verdict of the row cannot be bounded
        self.alone = False
        self.n = 0             # guests started
        self.inflight = 0
        self.infra = 0         # boots that never reached the test
        self.done = False


class Run:
    """One invocation: the rows it decides and run.json."""

    def __init__(self, opts, metas):
        self.o, self.metas = opts, metas
        self.jobs = opts.jobs
        self.arch = opts.arch
        self.results = opts.results
        self.record = {
            "format": 1, "command": sys.argv[1:], "arch": self.arch, "accel": None,
            "started": now(), "finished": None, "interrupted": False, "krepro": git_commit(),
            "mode": ({"kind": "fixed", "repeat": opts.repeat} if opts.repeat else
                     {"kind": "sequential", "miss": opts.miss, "cap": opts.max_runs}),
            "expect": opts.expect, "any_report": opts.any_report, "jobs": opts.jobs,
            "via": opts.via,
            "kernels": [], "runs": [], "rows": [], "prepare": [], "infra_boots": 0,
        }

    # --- run.json: rewritten whole after every guest, atomically ---
    def save(self):
        path = os.path.join(self.results, "run.json")
        with open(path + ".tmp", "w") as f:
            json.dump(self.record, f, indent=1)
        os.replace(path + ".tmp", path)
        if self.o.record_rates and self.record["runs"]:
            record_rates(self.o, self.record)

    def rate_for(self, pr):
        """((fails, runs, source) or None, what the records said): rate_record()."""
        rec, note = rate_record(pr.repro, self.arch, pr.role, pr.sight, self.record["accel"])
        return ((rec["fails"], rec["runs"], note) if rec else None), note

    def execute(self, kernels, repros, disks, prep_errors):
        """Decide every row, up to `jobs` guests at a time. A row gets another
        guest only while undecided, and no more at once than its expected
        outcome would still need; a fixed row waits for its bug row, whose
        runs give it its rate; a guest that needs the host to itself runs
        alone, in plan order."""
        plan = [PlanRow(i, r, k, row_role(self.o.expect, k)) for i, (r, k) in
                enumerate(((r, k) for r in repros for k in kernels), 1)]
        for pr in plan:
            if pr.role == "fixed":
                pr.after = next((q for q in plan if q.repro == pr.repro and q.role == "bug"), None)
        self.record["kernels"] = [k.record() for k in kernels]
        self.save()
        self.started = time.monotonic()
        self.guests = 0
        cond = threading.Condition()
        running = []          # (PlanRow, thread)
        live = {}             # guest number -> the guest's record if the run is cut off
        errors = []

        def worker(pr, n, gi, rundir):
            try:
                res = self.one(pr.kernel, pr.repro, n, rundir, disks.get(pr.repro),
                               prep_errors.get(pr.repro))
                with cond:
                    if not self.stopping:
                        self.finish_guest(pr, n, gi, len(plan), res, rundir)
            except BaseException as e:  # noqa: B902 -- handed to the main thread
                with cond:
                    errors.append(e)
            finally:
                with cond:
                    pr.inflight -= 1
                    live.pop(gi, None)
                    cond.notify_all()

        self.stopping = False
        try:
            with cond:
                while True:
                    if errors:
                        raise errors[0]
                    running = [(pr, t) for pr, t in running if t.is_alive()]
                    busy = sum(pr.inflight for pr in plan)
                    alone_busy = any(pr.inflight and pr.alone for pr in plan)
                    while busy < self.jobs and not alone_busy:
                        pr = self.next_guest(plan, busy)
                        if pr is None:
                            break
                        pr.n += 1
                        pr.inflight += 1
                        self.guests += 1
                        busy += 1
                        alone_busy = pr.alone
                        el = int(time.monotonic() - self.started)
                        print(f"[row {pr.index}/{len(plan)} guest {self.guests}] {pr.repro:<20} "
                              f"{pr.kernel.label:<10} run {pr.n:<3} booting ({el // 60}m{el % 60:02d}s elapsed)",
                              file=sys.stderr, flush=True)
                        name = f"{pr.repro}.{pr.kernel.label}.{pr.n}"
                        # Logs relative to the results, as a finished run's are.
                        live[self.guests] = {"repro": pr.repro, "kernel": pr.kernel.label, "run": pr.n,
                                             "log": f"{name}/console.log"}
                        t = threading.Thread(target=worker, daemon=True,
                                             args=(pr, pr.n, self.guests, os.path.join(self.results, name)))
                        running.append((pr, t))
                        t.start()
                    if all(pr.done for pr in plan) and not busy:
                        break
                    cond.wait(timeout=1.0)
        except BaseException:
            # Ctrl-C or a kill: stop every guest; what finished stays recorded.
            with cond:
                self.stopping = True
                # The guests the stop cuts off: named in the report, not lost.
                self.record["cut_off"] = [live[g] for g in sorted(live)]
            guest.stop_all()
            for _, t in running:
                t.join(timeout=30)
            raise
        self.record["finished"] = now()
        self.save()

    def next_guest(self, plan, busy):
        """The first row, in plan order, that may take another guest now."""
        for pr in plan:
            if pr.done:
                continue
            if pr.row is None:
                if pr.after is not None and not pr.after.done:
                    continue
                self.open_row(pr)
                if pr.done:
                    continue
            if pr.inflight >= pr.row.expected_remaining():
                continue
            if pr.alone and busy:
                # Wait for the machine to empty rather than run anything past it.
                return None
            return pr
        return None

    def open_row(self, pr):
        m = self.metas[pr.repro]
        pr.alone = bool(m.get("alone")) and self.jobs > 1
        pr.sight = evidence.Sight(m, pr.kernel.config)
        pr.rate, pr.note = self.rate_for(pr)
        if pr.role != "bug" and pr.rate is None:
            pr.unbounded = pr.note if pr.role == "probe" else "no FAIL rate"
        pr.row = stats.Row(pr.role, target=self.o.miss, cap=self.o.max_runs, rate=pr.rate,
                           repeat=self.o.repeat, any_report=self.o.any_report)
        if pr.sight.all_blind:
            # Nothing the guest could print would be this bug: a boot can
            # only come back clean, which says nothing.
            pr.row.decision = "UNDECIDED"
            pr.row.why = "every evidence path is blind on this kernel"
            log(f"{pr.repro} on {pr.kernel.label}: not booted, undecided: {pr.sight.note()}; "
                "nothing else could show the bug")
            self.close_row(pr)
        elif pr.role == "probe" and pr.rate is None and not self.o.repeat:
            log(f"{pr.repro} on {pr.kernel.label}: {pr.unbounded}: a clean verdict cannot be "
                f"bounded; runs up to {self.o.max_runs}")

    def finish_guest(self, pr, n, gi, nrows, res, rundir):
        """A guest ended: record it, and the row when that decides it."""
        late = pr.row.decision is not None
        if late:
            res["after_decision"] = True
        infra = bool(res.get("infra")) and not late
        retry = ""
        if infra:
            # The boot never reached the test: it says nothing about the bug.
            pr.infra += 1
            self.record["infra_boots"] = self.record.get("infra_boots", 0) + 1
            if pr.infra < INFRA_RETRIES:
                retry = f" (infrastructure: not counted; boot again, {pr.infra} of {INFRA_RETRIES})"
            else:
                pr.row.outcomes.append("BROKEN")
                pr.row.decision = "BROKEN"
                pr.row.why = (f"{pr.infra} boots never reached the test (infrastructure, "
                              "not the bug): see their logs")
                retry = " (infrastructure: the row gives up)"
        self.record["runs"].append(res)
        if not late and not infra:
            pr.row.add(res["outcome"])
        self.save()
        print(f"[row {pr.index}/{nrows} guest {gi}] {pr.repro:<20} {pr.kernel.label:<10} run {n:<3}"
              f" {res['outcome']:<6} {res['seconds']:6.1f}s  {res['evidence']}"
              + (" (row already decided: recorded, not counted)" if late else "") + retry
              + ("" if res["outcome"] == "PASS" else f"\n       log: {rundir}/console.log")
              + (f"\n       report decoded to file:line: {rundir}/report.txt" if res.get("report") else "")
              + (f"\n       report not decoded: {res['decode_error']}" if res.get("decode_error") else ""),
              file=sys.stderr, flush=True)
        if late or pr.row.decision is None:
            return
        row = pr.row
        if pr.role == "bug":
            rates.add_runs(pr.repro, self.arch, unpatched_build(self.arch), row.fails, row.trials,
                           self.record["accel"])
        self.close_row(pr)

    def close_row(self, pr):
        """A decided row: its record in run.json, and its cell said."""
        k = pr.kernel
        ev = pr.sight.record()
        if pr.role != "probe" and not pr.sight.blind:
            # Its rate is its own build's: an unknown config changes nothing
            # the cell claims.
            ev["note"] = None
        rec = render.row_record(pr.repro, k.label, pr.role, pr.row, self.metas[pr.repro],
                                self.o.expect, pr.note, index=pr.index, unbounded=pr.unbounded,
                                evidence=ev,
                                kernel_config=k.config_source if k.config is not None else None)
        self.record["rows"].append(rec)
        self.record["rows"].sort(key=lambda r: r.get("index", 0))
        self.save()
        pr.done = True
        print(f"=> {pr.repro} on {pr.kernel.label}: {rec['cell']}", file=sys.stderr, flush=True)

    def one(self, kernel, repro, n, rundir, disk, prep_error):
        m = self.metas[repro]
        os.makedirs(rundir, exist_ok=True)
        for f in ("console.log", "ktap.txt"):
            open(os.path.join(rundir, f), "w").close()
        limit = self.o.timeout or (int(m.get("timeout") or 60) + 60)
        base = {"repro": repro, "kernel": kernel.label, "build": kernel.build_id, "run": n,
                "dir": os.path.basename(rundir), "log": f"{os.path.basename(rundir)}/console.log",
                "ktap": f"{os.path.basename(rundir)}/ktap.txt", "fix": m.get("fix", ""),
                "timeout": limit, "accel": self.record["accel"]}
        if prep_error:
            return dict(base, outcome="BROKEN", evidence=prep_error, seconds=0.0, reports=[],
                        exit=None, signature=None, timed_out=False, qemu_status=None)
        smp = max(guest.GUEST_CPUS, int(m.get("min_cpus") or 1))
        # The reproducer's own command line, then the user's (--append).
        extra = " ".join(x for x in (m.get("cmdline", ""), self.o.append,
                                     "nokaslr" if self.o.gdb else "") if x)
        cmdline = guest.kernel_cmdline(self.arch, repro, extra, self.o.keep)
        via = {"via": self.o.via}
        if self.o.via == "qemu":
            argv = guest.qemu_argv(self.arch, self.record["accel"], kernel.image,
                                   kernel.initrd or guest.own_image(self.o.initrd, repro), cmdline, smp,
                                   os.path.join(rundir, "ktap.txt"), disk)
            if self.o.gdb:
                argv += ["-gdb", f"tcp::{self.o.gdb}", "-S"]
                log(f"{repro} on {kernel.label}: QEMU waits for gdb at its first instruction; "
                    f"in another terminal:\n  {gdb_command(kernel, self.o.gdb)}")
            argv += self.o.qemu_extra
            status, timed_out, secs, stop = guest.boot(
                argv, rundir, limit, self.o.keep,
                answered=Watch(m, os.path.join(rundir, "console.log"), os.path.join(rundir, "ktap.txt")),
                jobs=self.jobs, alone=bool(m.get("alone")))
        else:
            local = self.o.via == "lava-run"
            url = lava.file_url if local else (lambda f: lava.publish(f, self.o.artifacts))
            job = lava.job_definition(self.arch, f"krepro {repro} on {kernel.label} run {n}",
                                      url(kernel.image), url(kernel.initrd or guest.own_image(self.o.initrd, repro)), cmdline, limit,
                                      disk and url(lava.compact_disk(disk)), smp)
            if local:
                status, timed_out, secs, stop, via = lava.run_local(
                    self.arch, self.record["accel"], smp, job, rundir, limit,
                    answered=Watch(m), jobs=self.jobs,
                    alone=bool(m.get("alone")))
            else:
                try:
                    status, timed_out, secs, stop, via = lava.run_lab(
                        self.o.via[5:], job, rundir, answered=Watch(m))
                except lava.LabError as e:
                    return dict(base, outcome="BROKEN", evidence=f"the lab did not take the job: {e}",
                                seconds=0.0, reports=[], exit=None, signature=None, timed_out=False,
                                qemu_status=None, via=self.o.via)
        console = read(os.path.join(rundir, "console.log"))
        res = decide(console, m, read(os.path.join(rundir, "ktap.txt")), timed_out, status)
        if stop["early"]:
            res["evidence"] += (" ; guest stopped when its answer was complete" if stop["complete"] is not None
                                else f" ; guest stopped {guest.AFTER_REPORT:g} s after the report ended")
        if res["outcome"] in ("BROKEN", "HANG") and via.get("lava_error"):
            res["evidence"] += f" ; LAVA: {via['lava_error']}"
        title = next((r["title"] for r in res["reports"] if r.get("line", 0) >= (res["mark_line"] or 1 << 30)), None)
        # BROKEN with no init, no start of the reproducer and no result of its,
        # or a kernel report before its start mark: the boot failed, not the test.
        mark = res["mark_line"]
        infra = res["outcome"] == "BROKEN" and not self.o.keep and (
            res["init_line"] is None or (mark is None and res["exit"] is None)
            or any(mark is not None and r["line"] < mark for r in res["reports"]))
        out = dict(base, outcome=res["outcome"], evidence=res["evidence"], seconds=secs,
                   boot=guest.boot_seconds(console), infra=infra,
                   signature=res["signature"], report_title=title, reports=res["reports"][:20],
                   exit=res["exit"], timed_out=timed_out, stopped_early=stop["early"],
                   report_seen=stop["report"], answer_complete=stop["complete"], qemu_status=status,
                   **via)
        if out["outcome"] in ("FAIL", "OTHER"):
            self.decode_report(kernel, out, rundir)
        return out

    def decode_report(self, kernel, run, rundir):
        """The report behind a FAIL or OTHER, each frame decoded to file:line,
        into rundir/report.txt (run["report"]); run["decode_error"] says why not."""
        crash = evidence_crash(run)
        if not crash:
            return
        lines = decode.report_lines(read(os.path.join(rundir, "console.log")), crash)
        vmlinux, modules = kernel.vmlinux()
        t0 = time.monotonic()
        decoded, why = decode.decode(lines, vmlinux, self.arch, tree=kernel.tree, modules=modules)
        if decoded is None:
            run["decode_error"] = why
            return
        with open(os.path.join(rundir, "report.txt"), "w") as f:
            f.write("\n".join(decoded) + "\n")
        run.update(report=f"{run['dir']}/report.txt", decoded=decode.decoded_frames(decoded),
                   decode_seconds=round(time.monotonic() - t0, 1))

    def prepare_disk(self, repro):
        """A reproducer's disk: a blank one for the run, or one written once by
        the patched (correct) kernel and cached. Returns (path or None, error)."""
        m = self.metas[repro]
        mib = int(m.get("disk_mib") or 0)
        if mib <= 0:
            return None, None
        if not m.get("prepare"):
            d = os.path.join(self.results, "disks")
            os.makedirs(d, exist_ok=True)
            path = os.path.join(d, f"{repro}.img")
            with open(path, "wb") as f:
                f.truncate(mib << 20)
            return path, None
        patched = flavour_image(self.arch, "patched")  # built before the lock
        h = hashlib.sha256((read_stamp(patched) or "").encode())
        with open(os.path.join(build(), "repro", repro), "rb") as f:
            h.update(f.read())
        stamp = h.hexdigest()
        img = os.path.join(cache(), "images", f"{repro}.img")
        if os.path.isfile(img) and read(img + ".stamp").strip() == stamp:
            return img, None
        log(f"preparing {repro}'s disk on the patched kernel")
        os.makedirs(os.path.dirname(img), exist_ok=True)
        tmp = img + ".tmp"
        with open(tmp, "wb") as f:
            f.truncate(mib << 20)
        rundir = os.path.join(self.results, "prepare", repro)
        os.makedirs(rundir, exist_ok=True)
        cmdline = guest.kernel_cmdline(self.arch, repro, m.get("cmdline", ""), prepare=True)
        argv = guest.qemu_argv(self.arch, self.record["accel"], patched,
                               guest.own_image(self.o.initrd, repro), cmdline, max(2, int(m.get("min_cpus") or 1)), os.path.join(rundir, "ktap.txt"),
                               tmp, prepare=True)
        status, timed_out, secs, _ = guest.boot(argv, rundir, int(m.get("timeout") or 60) + 60,
                                                jobs=self.jobs)
        console = read(os.path.join(rundir, "console.log"))
        res = decide(console, m, read(os.path.join(rundir, "ktap.txt")), timed_out, status)
        self.record["prepare"].append({"repro": repro, "outcome": res["outcome"],
                                       "evidence": res["evidence"], "seconds": secs,
                                       "log": f"prepare/{repro}/console.log"})
        if res["outcome"] != "PASS":
            return None, (f"disk preparation on the patched kernel was {res['outcome']}: "
                          f"{res['evidence']} (log: {rundir}/console.log)")
        os.replace(tmp, img)
        with open(img + ".stamp", "w") as f:
            f.write(stamp + "\n")
        return img, None


def gdb_command(kernel, port):
    """The gdb line that attaches to a --gdb guest, with the image's own
    vmlinux where one is known (kernels.sh keeps one beside each image it
    builds; a kernel of the user's may have one beside it)."""
    vmlinux = kernel.vmlinux()[0]
    line = f"gdb {shlex.quote(vmlinux) if vmlinux else 'vmlinux'} -ex 'target remote :{port}'"
    if not vmlinux:
        line += (f"\n  (no vmlinux beside {kernel.image}: give gdb the vmlinux of that build;"
                 " without one gdb has no symbols)")
    return line


def now():
    return datetime.datetime.now().astimezone().isoformat(timespec="seconds")


def build_guest(arch):
    sub = "" if arch == "x86_64" else arch
    image = os.path.join(build(), sub, "guest", "initramfs.cpio")
    if os.environ.get("KREPRO_NO_BUILD"):
        if not os.path.isfile(image):
            raise RuntimeError(f"KREPRO_NO_BUILD is set and there is no guest image {image}")
        return image
    target = "guest" if arch == "x86_64" else f"guest-{arch}"
    p = subprocess.run(["make", "-C", TOP, "--no-print-directory", "-s", f"BUILD={build()}", target],
                       capture_output=True, text=True)
    out = (p.stdout or "") + (p.stderr or "")
    if p.returncode:
        sys.stderr.write(out)
        raise RuntimeError("building the reproducers or the guest image failed (output above)")
    for line in out.splitlines():
        if "guest image:" in line:
            print(line, file=sys.stderr)
    return image


def interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def prepare_kernels(kernels):
    """Build what is missing, then read each kernel's config (the rows need
    it to know what each kernel can show). False when a kernel cannot be had
    (logged)."""
    for k in kernels:
        try:
            k.prepare()
        except Undecidable as e:
            log(str(e))
            return False
        k.load_config()
    return True


def pick_accel(o, kernel):
    if o.arch != "x86_64":
        return "tcg"
    if o.accel == "auto":
        return "kvm" if guest.kvm_works(kernel.image, o.initrd) else "tcg"
    return o.accel


def main_run(o):
    """run-in-qemu.sh's work after its arguments were checked."""
    # Ctrl-C, and a kill or hangup too, end the run the same way: the guest
    # is stopped, run.json keeps what finished, the locks go with the process.
    # (A shell's background job starts with SIGINT ignored: take it back.)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, interrupt)
    metas = o.metas
    kernels = list(o.kernel_objs)
    # Builds before the machine lock: kernels.sh takes it exclusively. A
    # prepared disk is written by the patched kernel, so that one too.
    if any(metas[r].get("prepare") for r in o.repros):
        kernels.append(Kernel("patched", o.arch))
    if not prepare_kernels(kernels):
        return UNDECIDED
    kernels = o.kernel_objs
    # Shared between invocations, never with a kernel build (kernels.sh takes
    # it exclusively): guests stall beside a build.
    with guest.flocked("machine.lock", False, "waiting for a kernel build to finish"):
        if not o.initrd:
            try:
                o.initrd = build_guest(o.arch)
            except RuntimeError as e:
                log(f"error: {e}")
                return USAGE
        for k in kernels:
            if k.distro_root:
                try:
                    k.guest_image(o.initrd, o.repros, metas)
                except (distro.DistroError, Undecidable) as e:
                    log(f"{k.label}: {e}")
                    return UNDECIDED
            if not k.flavour:
                check_kconfig(k, o.repros, metas)
        accel = pick_accel(o, kernels[0])
        os.makedirs(o.results, exist_ok=True)
        run = Run(o, metas)
        run.record["accel"] = accel
        log(f"accelerator: {accel}; results: {o.results}")
        disks, prep_errors = {}, {}
        for r in o.repros:
            disks[r], err = run.prepare_disk(r)
            if err:
                prep_errors[r] = err
                log(f"{r}: {err}")
        try:
            run.execute(kernels, o.repros, disks, prep_errors)
        except KeyboardInterrupt:
            run.record["interrupted"] = True
            run.save()
            log(f"interrupted: the finished guests are in {o.results}/run.json; "
                f"make report DIR={o.results} renders them")
            render.render(o.results, quiet=True)
            return render.INTERRUPTED
    return render.render(o.results, any_report=o.any_report)


def record_rates(o, rec=None):
    """make calibrate: the bug rows run so far become the committed records.
    Called after every guest (a calibration cut short keeps what it
    measured) and once at the end."""
    if rec is None:
        with open(os.path.join(o.results, "run.json")) as f:
            rec = json.load(f)
    build_id = unpatched_build(o.arch)
    for r in o.repros:
        runs = [x for x in rec["runs"] if x["repro"] == r and x["kernel"] == "unpatched"]
        trials = [x for x in runs if x["outcome"] in ("FAIL", "PASS", "OTHER")]
        if not trials:
            continue
        fails = sum(1 for x in trials if x["outcome"] == "FAIL")
        if rates.record(r, o.arch, build_id, fails, len(trials), [x["seconds"] for x in runs],
                        rec["krepro"], rec["accel"], planned=o.repeat) and len(trials) >= o.repeat:
            log(f"{r}: FAIL {fails}/{len(trials)} recorded in {os.path.relpath(rates.repo_path(r), TOP)}")
