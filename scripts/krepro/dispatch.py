"""One guest run: its backend (config.via), its limits, its outcome and the
record run.json keeps of it."""
import os
import shlex
import time

from .reports import decode
from . import guest
from .lava import job, lab
from .backend import GuestSpec
from .log import log
from .paths import read
from .early_stop import Watch
from .reports.run_evidence import evidence_crash, window_hits
from .verdict import decide, infrastructure
from .untrusted import fresh_dir


def backend(config):
    """What runs the guests of a run configured so."""
    if config.via == "lava-run":
        return job.LavaRun()
    if config.lab:
        return lab.Lab(config.lab, config.artifacts)
    return guest.Qemu(keep=config.keep, gdb=config.gdb, extra=config.qemu_extra)


def broken(base, evidence):
    """The record of a guest that never ran: BROKEN, with why."""
    return dict(base, outcome="BROKEN", evidence=evidence, seconds=0.0, reports=[], exit=None,
                signature=None, matched_signature=None, broken_cases=[], timed_out=False,
                qemu_status=None)


class Dispatcher:
    """Runs the guests of one run, each in its own directory."""

    def __init__(self, config, accel, initrd):
        self.config, self.accel, self.initrd = config, accel, initrd
        self.backend = backend(config)

    def limit(self, meta):
        return self.config.timeout or meta.time_limit

    def spec(self, kernel, meta, n, rundir, disk):
        c = self.config
        # The reproducer's own command line, then the user's (--append).
        extra = " ".join(x for x in (meta.cmdline, c.append, "nokaslr" if c.gdb else "") if x)
        return GuestSpec(
            name=f"krepro {meta.name} on {kernel.label} run {n}", arch=c.arch, accel=self.accel,
            image=kernel.image, initrd=kernel.initrd or guest.own_image(self.initrd, meta.name),
            cmdline=guest.kernel_cmdline(c.arch, meta.name, extra, c.keep), cpus=meta.cpus,
            rundir=rundir, limit=self.limit(meta), disk=disk, jobs=c.jobs, alone=meta.alone,
            answered=Watch(meta, ktap_path=os.path.join(rundir, "ktap.txt")))

    def run(self, kernel, meta, n, rundir, disk, prep_error):
        """One guest of meta on kernel, the n-th of its row: its record."""
        fresh_dir(rundir, ("console.log", "ktap.txt"))
        d = os.path.basename(rundir)
        base = {"repro": meta.name, "kernel": kernel.label, "build": kernel.build_id, "run": n,
                "dir": d, "log": f"{d}/console.log", "ktap": f"{d}/ktap.txt", "fix_commit": meta.fix_commit,
                "time_limit": self.limit(meta), "accel": self.accel}
        if prep_error:
            return broken(base, prep_error)
        if self.config.gdb:
            log(f"{meta.name} on {kernel.label}: QEMU waits for gdb at its first instruction; "
                f"in another terminal:\n  {gdb_command(kernel, self.config.gdb)}")
        res = self.backend.run(self.spec(kernel, meta, n, rundir, disk))
        if res.refused:
            return broken(dict(base, **res.via), res.refused)
        out = dict(base, **judge(rundir, meta, res, self.config.keep))
        if out["outcome"] in ("FAIL", "OTHER"):
            decode_report(kernel, out, rundir, self.config.arch)
        return out


def judge(rundir, meta, res, keep=False):
    """The outcome of a guest that ran (res: backend.GuestResult), from the
    files it left in rundir, as run.json records it."""
    console = read(os.path.join(rundir, "console.log"))
    ktap = read(os.path.join(rundir, "ktap.txt"))
    v = decide(console, meta, ktap, res.timed_out, res.status)
    if res.stopped_early:
        v["evidence"] += (" ; guest stopped when its answer was complete" if res.answer_complete is not None
                          else f" ; guest stopped {guest.after_report():g} s after the report ended")
    if "lava_job" in res.via:
        # A lab's job has no QEMU exit status here (status is 0 for
        # Complete): LAVA's health says how it ended.
        v["evidence"] = v["evidence"].replace(f"(qemu exit {res.status})",
                                              f"(LAVA health {res.via.get('lava_health')})")
    if v["outcome"] in ("BROKEN", "HANG") and res.via.get("lava_error"):
        v["evidence"] += f" ; LAVA: {res.via['lava_error']}"
    mark = v["mark_line"]
    title = next((r["title"] for r in v["reports"] if r.get("line", 0) >= (mark or 1 << 30)), None)
    infra = infrastructure(v, keep)
    return dict(outcome=v["outcome"], evidence=v["evidence"], seconds=res.seconds,
                boot=guest.boot_seconds(console), infra=infra,
                signature=v["signature"], matched_signature=v["matched_signature"],
                broken_cases=v["broken_cases"], report_title=title, reports=v["reports"][:20],
                exit=v["exit"], timed_out=res.timed_out, stopped_early=res.stopped_early,
                report_seen=res.report_seen, answer_complete=res.answer_complete,
                window_hits=window_hits(ktap), qemu_status=res.status, **res.via)


def decode_report(kernel, run, rundir, arch):
    """The report behind a FAIL or OTHER, each frame decoded to file:line,
    into rundir/report.txt (run["report"]); run["decode_error"] says why not."""
    crash = evidence_crash(run)
    if not crash:
        return
    lines = decode.report_lines(read(os.path.join(rundir, "console.log")), crash)
    vmlinux, modules = kernel.vmlinux()
    t0 = time.monotonic()
    decoded, why = decode.decode(lines, vmlinux, arch, tree=kernel.tree, modules=modules)
    if decoded is None:
        run["decode_error"] = why
        return
    with open(os.path.join(rundir, "report.txt"), "w") as f:
        f.write("\n".join(decoded) + "\n")
    run.update(report=f"{run['dir']}/report.txt", decoded=decode.decoded_frames(decoded),
               decode_seconds=round(time.monotonic() - t0, 1))


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
