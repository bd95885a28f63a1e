"""A guest as a LAVA job: the job definition, the device configuration for
lava-run on this machine, and the serial console read back from LAVA's log.

LAVA reads only the serial console. The job boots the guest without the
virtio console, so the guest's init sends the reproducer's KTAP there too
(guest-image/init), and the host splits the log back into console.log and
ktap.txt: the same two files a local guest leaves, judged by the same code.
"""
import json
import os
import re
import shlex
import subprocess
import time
import urllib.parse

from ..arches import ARCHES
from .. import guest
from ..backend import Backend, GuestResult, stopped
from ..paths import read
from ..protocol import EXIT_OUTCOME, INIT_DONE, INIT_RUNNING, INIT_STARTED, RESULT_LAVA

# The harness's exit codes as LAVA results (BROKEN: LAVA's "unknown").
FIXUP = {str(code): {"BROKEN": "unknown"}.get(o, o.lower()) for code, o in EXIT_OUTCOME.items()}

# LAVA's own architecture names for its qemu device type.
LAVA_ARCH = {"x86_64": "amd64", "arm": "arm"}


def yaml():
    try:
        import yaml as y
    except ImportError:
        raise RuntimeError("LAVA jobs need PyYAML (Debian: python3-yaml; lava-dispatcher "
                           "and lavacli bring it)")
    return y


def dump(data, path):
    with open(path, "w") as f:
        yaml().safe_dump(data, f, sort_keys=False, width=1000)


def device_config(arch, smp, accel="tcg"):
    """LAVA's qemu device type, rendered for krepro's guest machine: what a
    lab's device dictionary and job context produce server-side, written out
    for lava-run, which has no server to render templates."""
    # The serial console on QEMU's stdout is how LAVA talks to the guest.
    options = guest.machine_args(arch, accel, smp) + ["-serial", "stdio"]
    return {
        "device_type": "qemu",
        "constants": {
            "posix": {"lava_test_sh_cmd": "/bin/sh", "lava_test_results_dir": "/lava-%s",
                      "lava_test_shell_file": "~/.bashrc"},
            "shutdown-message": "The system is going down for reboot NOW",
            "kernel-start-message": "Linux version [0-9]",
            "default-shell-prompt": "lava-test: # ",
            "spawn_maxread": "4092",
            # No retries: a guest that failed to boot is an outcome krepro
            # counts (BROKEN), not something to try again behind its back.
            "failure_retry": 1,
            "boot_retry": 1,
        },
        "parameters": {"pass": None},
        "available_architectures": [LAVA_ARCH[arch]],
        "actions": {
            "deploy": {"connections": {"serial": None}, "methods": {"image": {"parameters": None}}},
            "boot": {"connections": {"serial": None},
                     "methods": {"qemu": {"parameters": {
                         "command": ARCHES[arch]["qemu"],
                         # One string an option, as the device template writes them.
                         "options": [" ".join(shlex.quote(a) for a in pair) for pair in pairs(options)],
                     }}}},
        },
        "timeouts": {"actions": {"boot-qemu-image": {"minutes": 2}},
                     "connections": {}},
    }


def pairs(argv):
    """["-m", "1G", "-nodefaults", ...] -> [["-m", "1G"], ["-nodefaults"], ...]"""
    out = []
    for a in argv:
        if a.startswith("-") or not out:
            out.append([a])
        else:
            out[-1].append(a)
    return out


def lab_context(arch, smp):
    """The job context a lab's qemu device template (lava-server's
    qemu.jinja2) reads: the same machine as a local guest. The template
    adds -nographic, a user-mode NIC and -monitor none; an ARM board and
    CPU come from machine/cpu, the rest from extra_options."""
    a = ARCHES[arch]
    ctx = {"arch": LAVA_ARCH[arch], "memory": 1024, "no_kvm": True}
    smp_arg = f"-smp {smp},sockets={smp},cores=1,threads=1" if arch == "x86_64" else f"-smp {smp}"
    extra = [smp_arg, "-no-reboot"]
    if arch == "x86_64":
        extra.insert(0, f"-cpu {a['cpu']}")
    else:
        ctx.update(machine=a["machine"], cpu=a["cpu"])
    ctx["extra_options"] = extra
    return ctx


def file_url(path):
    # Percent-encoded: a space, '#' or '?' in a path (a kernel of the
    # user's) is then a character of the file's name, not of the URL's syntax.
    return "file://" + urllib.parse.quote(os.path.realpath(path))


def compact_disk(raw):
    """A job's disk as qcow2: LAVA copies every image into the job's
    directory, and a raw disk is copied whole (xfs-rmap-keys': 2.5 GiB, of
    which 75 MiB are written). Converted once beside the raw one, again
    when the raw one changes."""
    out = raw + ".qcow2"
    try:
        fresh = os.path.getmtime(out) >= os.path.getmtime(raw)
    except OSError:
        fresh = False
    if not fresh:
        subprocess.run(["qemu-img", "convert", "-O", "qcow2", raw, out + ".tmp"], check=True,
                       stdout=subprocess.DEVNULL)
        os.replace(out + ".tmp", out)
    return out


def job_definition(arch, name, kernel_url, initrd_url, cmdline, limit, disk_url=None, smp=2,
                   sums=None):
    """One guest run as a LAVA job (device type qemu, deploy to tmpfs);
    sums: each image's sha256, which LAVA checks after its download."""
    images = {
        "kernel": {"url": kernel_url,
                   "image_arg": f"-kernel {{kernel}} -append {shlex.quote(cmdline)}"},
        "initrd": {"url": initrd_url, "image_arg": "-initrd {initrd}"},
    }
    if disk_url:
        images["disk"] = {"url": disk_url,
                          "image_arg": " ".join(guest.disk_args(arch, "{disk}", fmt="qcow2"))}
    for key, digest in (sums or {}).items():
        images[key]["sha256sum"] = digest
    # LAVA's time for the whole test: the reproducer's limit; boot and
    # download on top.
    return {
        "device_type": "qemu",
        "job_name": name,
        "timeouts": {"job": {"seconds": limit + 180}, "action": {"seconds": limit + 60},
                     "connection": {"minutes": 2}},
        "priority": "medium",
        "visibility": "public",
        # Read by a lab's qemu template (lava-server); lava-run takes the
        # rendered device configuration instead.
        "context": lab_context(arch, smp),
        "actions": [
            {"deploy": {"to": "tmpfs", "timeout": {"minutes": 2}, "images": images}},
            # The boot ends at the init's first line. Not at LAVA's kernel
            # start message first ("Linux version"): the boot is quiet until
            # /init (loglevel=5), the banner never reaches the console, and
            # LAVA would wait for it until QEMU exits, the job Incomplete.
            {"boot": {"method": "qemu", "media": "tmpfs", "timeout": {"minutes": 3},
                      "parameters": {"kernel-start-message": ""},
                      "prompts": [INIT_STARTED]}},
            {"test": {"timeout": {"seconds": limit},
                      "monitors": [{"name": "krepro", "start": INIT_RUNNING, "end": INIT_DONE,
                                    "pattern": RESULT_LAVA, "fixupdict": FIXUP}]}},
        ],
    }


# --- reading LAVA's log back ---

# A kernel line on the serial console: "[   12.345678] ..." (CONFIG_PRINTK_TIME).
PRINTK = re.compile(r"^\[\s*\d+\.\d{6}\] ")
# The same, cut into a line the reproducer was writing: the kernel prints
# whole records, a process's long line can be split around one.
PRINTK_INSIDE = re.compile(r"\[\s*\d+\.\d{6}\] ")


def log_entries(text):
    """A LAVA job log's entries: lava-run prints one JSON object a line,
    a server's raw log (`lavacli jobs logs --raw`) is a YAML list of the
    same objects, one a line."""
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("- "):
            line = line[2:]
        if not line.startswith("{"):
            continue
        try:
            e = json.loads(line)
        except ValueError:
            try:
                e = yaml().safe_load(line)
            except yaml().YAMLError:
                continue
        if isinstance(e, dict):
            out.append(e)
    return out


def target_lines(entries):
    """The serial console's lines: entries of level "target", and
    "feedback" (what the console printed while LAVA was not reading it for
    an action: the power-off after the test). LAVA escapes every double
    quote in them (lava_dispatcher/shell.py): undone here."""
    return [e["msg"].replace('\\"', '"') for e in entries
            if e.get("lvl") in ("target", "feedback") and isinstance(e.get("msg"), str)]


def lava_results(entries):
    """LAVA's own results, {definition/case: result}: its job result, its
    kernel-messages check, and the monitor's result for the reproducer."""
    return {f"{e['msg'].get('definition')}/{e['msg'].get('case')}": e["msg"].get("result")
            for e in entries if e.get("lvl") == "results" and isinstance(e.get("msg"), dict)}


def split_console(lines):
    """(console.log, ktap.txt) texts from the serial lines. Kernel lines and
    the init's own go to the console; what the reproducer printed (its KTAP
    and diagnostics) to ktap.txt. QEMU and firmware lines before the kernel
    are console. A kernel line cut into the reproducer's goes to the
    console, and the two halves of the reproducer's line are joined again."""
    con, ktap = [], []
    started = False
    cut = None  # the first half of a reproducer's line a kernel line cut
    for l in lines:
        m = PRINTK_INSIDE.search(l)
        if started and m and m.start() > 0:
            cut = (cut or "") + l[:m.start()]
            l = l[m.start():]
        if PRINTK.match(l):
            started = started or INIT_STARTED in l
            con.append(l)
        elif started:
            ktap.append((cut or "") + l)
            cut = None
        else:
            con.append(l)
    if cut:
        ktap.append(cut)
    return "".join(x + "\n" for x in con), "".join(x + "\n" for x in ktap)


# --- running one guest as a LAVA job ---

def timed_out(entries):
    """LAVA stopped the job at a timeout (the test monitor's, the boot's or
    the job's): krepro's HANG."""
    for e in entries:
        msg = e.get("msg")
        text = msg.get("error_msg", "") if isinstance(msg, dict) else msg
        if e.get("lvl") in ("error", "results") and isinstance(text, str) and "timed out" in text:
            return True
    return False


def first_error(entries):
    """LAVA's reason a job did not get to a verdict (its configuration, a
    download, a timeout): the job result's error_msg, which names the
    cause, else its first error line."""
    for e in entries:
        msg = e.get("msg")
        if e.get("lvl") == "results" and isinstance(msg, dict) and msg.get("definition") == "lava" \
                and msg.get("case") == "job" and msg.get("error_msg"):
            return " ".join(str(msg["error_msg"]).split())
    for e in entries:
        if e.get("lvl") == "error" and isinstance(e.get("msg"), str):
            return e["msg"]
    return None


def read_back(text, rundir):
    """Write console.log and ktap.txt from a job's log; LAVA's results."""
    entries = log_entries(text)
    con, ktap = split_console(target_lines(entries))
    for name, data in (("console.log", con), ("ktap.txt", ktap)):
        with open(os.path.join(rundir, name), "w") as f:
            f.write(data)
    return entries


def console_text(log_path):
    return split_console(target_lines(log_entries(read(log_path))))[0]


def job_id():
    # lava-run keeps its files in /var/lib/lava/dispatcher/tmp/<job id>:
    # one of its own per guest, also beside another invocation's.
    job_id.n += 1
    return f"{os.getpid()}{job_id.n:05d}"


job_id.n = 0


class LavaRun(Backend):
    """A guest as a LAVA job, through lava-run on this machine."""

    def run(self, spec):
        job = job_definition(spec.arch, spec.name, file_url(spec.image), file_url(spec.initrd),
                             spec.cmdline, spec.limit, spec.disk and file_url(compact_disk(spec.disk)),
                             spec.cpus)
        return run_local(spec.arch, spec.accel, spec.cpus, job, spec.rundir, spec.answered,
                         spec.jobs, spec.alone)


def run_local(arch, accel, smp, job, rundir, answered=None, jobs=1, alone=False):
    """One job through lava-run on this machine, in a guest slot of its own."""
    d = os.path.join(rundir, "lava")
    os.makedirs(d, exist_ok=True)
    dump(device_config(arch, smp, accel), os.path.join(d, "device.yaml"))
    dump(job, os.path.join(d, "job.yaml"))
    log = os.path.join(d, "lava-run.log")
    argv = ["lava-run", "--job-id", job_id(), "--output-dir", os.path.join(d, "output"),
            "--device", os.path.join(d, "device.yaml"), os.path.join(d, "job.yaml")]
    with open(os.path.join(d, "command"), "w") as f:
        f.write(" ".join(shlex.quote(a) for a in argv) + "\n")
    with guest.guest_slot(jobs, alone):
        t0 = time.monotonic()
        with open(log, "w") as out:
            # LAVA has its own timeouts (the job's); krepro's limit is the
            # backstop, with time for LAVA's own steps.
            status, krepro_timeout, stop = guest.supervise(
                argv, out, job["timeouts"]["job"]["seconds"] + 60,
                answered=(lambda: answered(console_text(log))) if answered else None, grace=20)
        secs = round(time.monotonic() - t0, 1)
    entries = read_back(read(log), rundir)
    rec = {"via": "lava-run", "job": os.path.relpath(os.path.join(d, "job.yaml"), os.path.dirname(rundir)),
           "lava_log": os.path.relpath(log, os.path.dirname(rundir)), "lava_results": lava_results(entries),
           "lava_error": first_error(entries)}
    return GuestResult(status, krepro_timeout or timed_out(entries), secs, via=rec, **stopped(stop))
