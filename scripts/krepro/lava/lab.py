"""A guest as a job in a LAVA lab (--via lava:ID): its files published
where the lab downloads them, the job submitted and its log followed with
lavacli, the lab watched while it runs (a worker that goes offline, a
server that stops answering), LAVA's health, times and results read back.

lavacli submits and follows, as a lab's users do; the watching and the
job's record use the same identity over LAVA's XML-RPC API directly, so
that a check every few seconds costs no process beside a running guest.
"""
import datetime
import os
import re
import shutil
import subprocess
import time
import xmlrpc.client

from .. import guest
from . import lab_guest
from ..backend import Backend, GuestResult, stopped
from .job import compact_disk, console_text, dump, first_error, job_definition, lava_results, \
    read_back, timed_out, yaml
from ..paths import file_sha256, read

# How often the lab is checked while a job runs, and how many checks in a
# row may go unanswered before the lab counts as down.
WATCH_EVERY = 5.0
UNANSWERED = 3
# How often lavacli reads the job's log (its default is 5 s).
POLLING = 2


class LabError(Exception):
    """The lab did not take the job, or could not be asked."""


class LabLost(Exception):
    """The lab lost a job it had taken (its worker went offline, the
    server stopped answering)."""


def identity_config(identity):
    """lavacli's identity (uri, username, token), from its configuration."""
    path = os.path.join(os.environ.get("XDG_CONFIG_HOME") or os.path.expanduser("~/.config"),
                        "lavacli.yaml")
    try:
        with open(path) as f:
            conf = (yaml().safe_load(f) or {}).get(identity)
    except OSError as e:
        raise LabError(f"no lavacli configuration: {e}")
    if not isinstance(conf, dict) or "uri" not in conf:
        raise LabError(f"no lavacli identity '{identity}' in {path}")
    return conf


def server(identity, timeout=20):
    """LAVA's XML-RPC API as the identity's user."""
    conf = identity_config(identity)
    uri = conf["uri"]
    if conf.get("username") and conf.get("token"):
        scheme, _, rest = uri.partition("://")
        uri = f"{scheme}://{conf['username']}:{conf['token']}@{rest}"
    return xmlrpc.client.ServerProxy(uri, allow_none=True,
                                     transport=_Transport(timeout) if uri.startswith("http:") else None)


class _Transport(xmlrpc.client.Transport):
    """HTTP with a timeout: a lab that does not answer is an error, not a hang."""

    def __init__(self, timeout):
        super().__init__()
        self.timeout = timeout

    def make_connection(self, host):
        conn = super().make_connection(host)
        conn.timeout = self.timeout
        return conn


def check_lab(identity):
    """None when the lab answers as the identity, else why not (a usage
    error before any guest: a lab that is down fails the run at once)."""
    try:
        version = server(identity, timeout=15).system.version()
    except LabError as e:
        return str(e)
    except (OSError, xmlrpc.client.Error) as e:
        return f"the lab of lavacli identity '{identity}' does not answer: {e}"
    return None if version else f"the lab of lavacli identity '{identity}' gave no version"


def publish(path, artifacts):
    """A file where the lab can download it: copied into the directory the
    user serves (artifacts = (dir, base url)), named by its content.
    Returns (url, sha256)."""
    directory, base = artifacts
    digest = file_sha256(path)
    # The file's own name kept only as a hint, in characters a URL and the
    # lab's command line take as they are (it may be a kernel of the user's).
    name = f"{digest[:16]}-{re.sub(r'[^A-Za-z0-9._-]', '_', os.path.basename(path))}"
    dest = os.path.join(directory, name)
    if not os.path.exists(dest):
        shutil.copyfile(path, dest + ".tmp")
        os.replace(dest + ".tmp", dest)
    return base.rstrip("/") + "/" + name, digest


class Lab(Backend):
    """A guest as a LAVA job in a lab, submitted with lavacli's identity;
    its files published in artifacts (directory, URL) for the lab."""

    def __init__(self, identity, artifacts):
        self.identity, self.artifacts = identity, artifacts

    def run(self, spec):
        files = {"kernel": spec.image, "initrd": spec.initrd}
        if spec.disk:
            files["disk"] = compact_disk(spec.disk)
        urls = {k: publish(f, self.artifacts) for k, f in files.items()}
        job = job_definition(spec.arch, spec.name, urls["kernel"][0], urls["initrd"][0], spec.cmdline,
                             spec.limit, spec.disk and urls["disk"][0], spec.cpus,
                             sums={k: u[1] for k, u in urls.items()})
        try:
            return run_lab(self.identity, job, spec.rundir, spec.answered)
        except LabError as e:
            return GuestResult(None, False, 0.0, via={"via": f"lava:{self.identity}"},
                               refused=f"the lab did not take the job: {e}")


def submit(identity, path):
    """The lab's job id for the job file, or LabError with the lab's reason."""
    try:
        p = subprocess.run(["lavacli", "-i", identity, "jobs", "submit", path],
                           capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        raise LabError("lavacli jobs submit: no answer in 120 s")
    words = p.stdout.split()
    if p.returncode or not words or not words[-1].isdigit():
        raise LabError(f"lavacli jobs submit: {(p.stdout + p.stderr).strip() or p.returncode}")
    return words[-1]


class Watch:
    """The lab while one of its jobs is there: LabLost when the job's
    worker goes offline, when the job waits in the queue with no device of
    its type on an online worker (two checks in a row: it would wait for
    ever), or when the server leaves UNANSWERED checks in a row unanswered.
    check() is cheap to call often: it asks every WATCH_EVERY s."""

    def __init__(self, identity, jid):
        self.identity, self.jid = identity, jid
        self.next, self.missed, self.stranded = 0.0, 0, 0

    def check(self):
        if time.monotonic() < self.next:
            return
        self.next = time.monotonic() + WATCH_EVERY
        try:
            lost = self.ask(server(self.identity, timeout=WATCH_EVERY))
        except (OSError, xmlrpc.client.Error) as e:
            self.missed += 1
            if self.missed >= UNANSWERED:
                raise LabLost(f"the lab stopped answering during job {self.jid}: {e}")
            return
        self.missed = 0
        if lost:
            raise LabLost(lost)

    def ask(self, s):
        """Why the job is lost, or None."""
        job = s.scheduler.jobs.show(self.jid)
        # A job with a device is on that device's worker from "Scheduled"
        # on; queued ("Submitted") it has none yet.
        if job.get("state") in ("Scheduled", "Running") and job.get("device"):
            worker = s.scheduler.devices.show(job["device"]).get("worker")
            state = s.scheduler.workers.show(worker).get("state")
            if state != "Online":
                return f"the lab's worker {worker} went {state.lower()} during job {self.jid}"
        elif job.get("state") == "Submitted":
            kind = job.get("device_type")
            usable = [d["hostname"] for d in s.scheduler.devices.list()
                      if d.get("type") == kind and d.get("health") in ("Good", "Unknown")]
            workers = {s.scheduler.devices.show(d).get("worker") for d in usable}
            online = any(s.scheduler.workers.show(w).get("state") == "Online" for w in workers if w)
            self.stranded = 0 if online else self.stranded + 1
            if self.stranded >= 2:
                return (f"job {self.jid} waits in the lab's queue with no {kind} device on an "
                        f"online worker")
        return None


def cancel(identity, jid):
    subprocess.run(["lavacli", "-i", identity, "jobs", "cancel", jid], capture_output=True, timeout=60)


def follow(identity, jid, log, answered):
    """lavacli's raw log of the job until it ends (or the guest's answer is
    known, or the lab loses it): (stop, lost: LabLost's reason or None)."""
    cli = ["lavacli", "-i", identity, "jobs", "logs", "--raw", "--polling", str(POLLING), jid]
    watch = Watch(identity, jid)

    def poll():
        watch.check()
        return answered(console_text(log)) if answered else None
    try:
        with open(log, "w") as out:
            # Queueing at the lab counts too: a day at most.
            status, _, stop = guest.supervise(cli, out, 24 * 3600, answered=poll)
    except LabLost as e:
        cancel(identity, jid)
        return guest.no_stop(), str(e)
    except BaseException:
        cancel(identity, jid)
        raise
    if stop["early"]:
        cancel(identity, jid)
    elif status:
        # lavacli's own error is its last line (a lab that went away).
        tail = (read(log).strip().splitlines() or ["no output"])[-1]
        return stop, f"lavacli jobs logs exited {status}: {tail}"
    return stop, None


def seconds_between(a, b):
    """Seconds from LAVA time a to b (XML-RPC DateTime or ISO text), or None."""
    def parse(t):
        if t is None:
            return None
        text = t.value if isinstance(t, xmlrpc.client.DateTime) else str(t)
        for fmt in ("%Y%m%dT%H:%M:%S", "%Y-%m-%dT%H:%M:%S.%f", "%Y-%m-%dT%H:%M:%S"):
            try:
                return datetime.datetime.strptime(text.rstrip("Z").split("+")[0], fmt)
            except ValueError:
                pass
        return None
    ta, tb = parse(a), parse(b)
    return round((tb - ta).total_seconds(), 1) if ta and tb else None


def job_times(job, entries):
    """The lab's overhead for one job, from LAVA's times: submission to its
    start on the worker (the queue), and to the guest's first console line;
    lock_wait, the part of that a lab job on this machine waited for
    krepro's locks (lab_guest), which is this machine's, not the lab's."""
    lines = [e for e in entries if e.get("lvl") == "target" and isinstance(e.get("msg"), str)]
    first = next((e.get("dt") for e in lines if not e["msg"].startswith(lab_guest.SAYS)), None)
    waits = [re.search(r"waited ([0-9.]+) s", e["msg"]) for e in lines if e["msg"].startswith(lab_guest.SAYS)]
    return {"queue": seconds_between(job.get("submit_time"), job.get("start_time")),
            "to_console": seconds_between(job.get("submit_time"), first),
            "lock_wait": sum(float(m.group(1)) for m in waits if m),
            "total": seconds_between(job.get("submit_time"), job.get("end_time"))}


def job_record(identity, jid):
    """The lab's own record of the job (scheduler.jobs.show), or {}."""
    try:
        return server(identity).scheduler.jobs.show(jid)
    except (LabError, OSError, xmlrpc.client.Error):
        return {}


def run_lab(identity, job, rundir, answered=None):
    """Submit one job, follow its log to the end, read it back. Its status
    is 0 when LAVA says Complete."""
    d = os.path.join(rundir, "lava")
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, "job.yaml")
    dump(job, path)
    jid = submit(identity, path)
    log = os.path.join(d, "lava-job.log")
    t0 = time.monotonic()
    stop, lost = follow(identity, jid, log, answered)
    secs = round(time.monotonic() - t0, 1)
    rec_job = job_record(identity, jid)
    health = rec_job.get("health")
    entries = read_back(read(log), rundir)
    top = os.path.dirname(rundir)
    rec = {"via": f"lava:{identity}", "lava_job": jid, "lava_health": health,
           "lava_times": job_times(rec_job, entries),
           "job": os.path.relpath(path, top), "lava_log": os.path.relpath(log, top),
           "lava_results": lava_results(entries),
           "lava_error": lost or first_error(entries) or (rec_job.get("failure_comment") or None)}
    return GuestResult(0 if health == "Complete" and not lost else 1, timed_out(entries), secs,
                       via=rec, **stopped(stop))
