"""A reproducer's disk (.disk_mib): blank for each run, or written once by
the patched (correct) kernel (.prepare) and cached, keyed by that kernel's
build and the reproducer's binary."""
import hashlib
import os

from . import guest
from .backend import GuestSpec
from .log import log
from .kernels import flavour_image, read_stamp
from .paths import build, cache, read
from .verdict import decide


def blank(results, meta):
    """A new sparse disk of meta's size in the run directory."""
    d = os.path.join(results, "disks")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, f"{meta.name}.img")
    with open(path, "wb") as f:
        f.truncate(meta.disk_mib << 20)
    return path


def prepared_stamp(arch, branch, meta):
    """What a prepared disk is valid for: the branch's patched kernel (built
    before the machine lock) and the reproducer's binary."""
    h = hashlib.sha256((read_stamp(flavour_image(arch, "patched", branch)) or "").encode())
    with open(os.path.join(build(), "repro", meta.name), "rb") as f:
        h.update(f.read())
    return h.hexdigest()


def prepare(config, accel, initrd, meta, record):
    """meta's disk for its runs: (path or None, error). initrd: the guest
    image; record: run.json's "prepare" list, which a preparation's boot is
    added to."""
    if meta.disk_mib <= 0:
        return None, None
    if not meta.prepare:
        return blank(config.results, meta), None
    branch = config.branch
    stamp = prepared_stamp(config.arch, branch, meta)
    img = os.path.join(cache(), "images", branch, f"{meta.name}.img")
    if os.path.isfile(img) and read(img + ".stamp").strip() == stamp:
        return img, None
    log(f"preparing {meta.name}'s disk on the {branch} patched kernel")
    os.makedirs(os.path.dirname(img), exist_ok=True)
    # Its own scratch file: two runs on one machine (two checkouts) may
    # prepare the same disk at once; each replaces the image atomically.
    tmp = f"{img}.{os.getpid()}.tmp"
    with open(tmp, "wb") as f:
        f.truncate(meta.disk_mib << 20)
    rundir = os.path.join(config.results, "prepare", meta.name)
    os.makedirs(rundir, exist_ok=True)
    spec = GuestSpec(
        name=f"{meta.name}'s disk", arch=config.arch, accel=accel,
        image=flavour_image(config.arch, "patched", branch), initrd=guest.own_image(initrd, meta.name),
        cmdline=guest.kernel_cmdline(config.arch, meta.name, meta.cmdline, prepare=True),
        cpus=meta.cpus, rundir=rundir, limit=meta.time_limit, disk=tmp, jobs=config.jobs)
    res = guest.Qemu(prepare=True).run(spec)
    v = decide(read(os.path.join(rundir, "console.log")), meta,
               read(os.path.join(rundir, "ktap.txt")), res.timed_out, res.status)
    record.append({"repro": meta.name, "outcome": v["outcome"], "evidence": v["evidence"],
                   "seconds": res.seconds, "log": f"prepare/{meta.name}/console.log"})
    if v["outcome"] != "PASS":
        os.remove(tmp)
        return None, (f"disk preparation on the patched kernel was {v['outcome']}: "
                      f"{v['evidence']} (log: {rundir}/console.log)")
    os.replace(tmp, img)
    with open(img + ".stamp", "w") as f:
        f.write(stamp + "\n")
    return img, None
