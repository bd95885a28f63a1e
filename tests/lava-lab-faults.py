#!/usr/bin/env python3
"""What a krepro run gives when the LAVA lab fails it, on the lab that
scripts/lava-lab.sh runs: each fault through run-in-qemu.sh --via lava:ID,
one guest of bpf-percpu-reuse, checked for a clear outcome in bounded time.

  rejected    the lab has no usable qemu device (both retired for the test):
              BROKEN with the lab's refusal
  incomplete  the artifacts' URL is wrong: the job goes Incomplete;
              BROKEN with LAVA's reason (the 404)
  offline     the worker is stopped while the job downloads its kernel
              from a slow server: BROKEN "went offline", the job cancelled
  down        the lab is stopped: a usage error before any guest; the lab
              is started again (its bring-up time is printed)

  tests/lava-lab-faults.py [--results DIR] [fault...]

None of them boots a guest. Exits 1 when a fault's outcome is not the
expected one or it takes longer than its bound; prints one line a fault.
"""
import argparse
import http.server
import json
import os
import shlex
import signal
import subprocess
import sys
import threading
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro.lava import lab as lava_lab  # noqa: E402

RUN = os.path.join(TOP, "run-in-qemu.sh")
LAB_SH = os.path.join(TOP, "scripts", "lava-lab.sh")
REPRO = "bpf-percpu-reuse"
USAGE = 128
# Seconds a fault may take: LAVA marks a worker offline 60 s after its last
# ping, and checks every 20 s; krepro checks the lab every 5 s.
BOUND = {"rejected": 60, "incomplete": 90, "offline": 180, "down": 60}


def lab_env():
    out = subprocess.run([LAB_SH, "env"], capture_output=True, text=True, check=True).stdout
    return dict(shlex.split(line)[0].split("=", 1) for line in out.splitlines())


def krepro(results, artifacts, identity, bound):
    """run-in-qemu.sh for one guest: (exit status, stderr, run.json's one run or None, seconds)."""
    argv = [RUN, "--via", f"lava:{identity}", "--artifacts", artifacts, "--repeat", "1",
            "--kernel", "unpatched", "--results", results, REPRO]
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _, err = p.communicate(timeout=bound)
    except subprocess.TimeoutExpired:
        # As a user's Ctrl-C: krepro cancels its job and ends its followers.
        p.send_signal(signal.SIGINT)
        p.communicate(timeout=60)
        return None, f"no end in {bound} s", None, bound
    secs = time.monotonic() - t0
    path = os.path.join(results, "run.json")
    run = None
    if os.path.exists(path):
        with open(path) as f:
            run = (json.load(f).get("runs") or [None])[0]
    return p.returncode, err, run, secs


def lavacli(identity, *args):
    return subprocess.run(["lavacli", "-i", identity] + list(args), capture_output=True, text=True)


def broken_with(run, *words):
    """"" when run is BROKEN and its evidence has every word, else why not."""
    if not run:
        return "no run in run.json"
    if run["outcome"] != "BROKEN":
        return f"outcome {run['outcome']}, want BROKEN"
    missing = [w for w in words if w not in run["evidence"]]
    return f"evidence lacks {missing}: {run['evidence']}" if missing else ""


def fault_rejected(env, results):
    ident = env["IDENTITY"]
    devices = [f"qemu-{a}-01" for a in ("x86_64", "arm")]
    for d in devices:
        lavacli(ident, "devices", "update", "--health", "RETIRED", d)
    try:
        status, err, run, secs = krepro(results, env["ARTIFACTS"], ident, BOUND["rejected"])
    finally:
        for d in devices:
            lavacli(ident, "devices", "update", "--health", "GOOD", d)
    return broken_with(run, "the lab did not take the job", "No devices of type qemu"), run, secs


def fault_incomplete(env, results):
    directory, url = env["ARTIFACTS"].split("=", 1)
    status, err, run, secs = krepro(results, f"{directory}={url}/no-such-directory", env["IDENTITY"],
                                    BOUND["incomplete"])
    why = broken_with(run, "LAVA:", "404")
    if not why and run.get("lava_health") != "Incomplete":
        why = f"LAVA's health {run.get('lava_health')}, want Incomplete"
    return why, run, secs


class Slow(http.server.SimpleHTTPRequestHandler):
    """Files at 8 KiB/s: a kernel's download outlasts the test."""

    def copyfile(self, source, outputfile):
        while True:
            chunk = source.read(4096)
            if not chunk or self.server.stopping:
                return
            try:
                outputfile.write(chunk)
            except (BrokenPipeError, ConnectionResetError):
                return  # the job that read it was cancelled
            time.sleep(0.5)

    def log_message(self, *args):
        pass


def job_running(ident, deadline):
    """The id of the lab's running job, once there is one."""
    lab = lava_lab.server(ident)
    while time.monotonic() < deadline:
        jobs = lab.scheduler.jobs.list("RUNNING", None, 0, 10)
        if jobs:
            return str(jobs[0]["id"])
        time.sleep(1)
    return None


def fault_offline(env, results):
    directory, _ = env["ARTIFACTS"].split("=", 1)
    httpd = http.server.ThreadingHTTPServer(
        ("127.0.0.1", 0), lambda *a, **k: Slow(*a, directory=directory, **k))
    httpd.stopping = False
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    out = {}

    def run():
        out["r"] = krepro(results, f"{directory}=http://127.0.0.1:{httpd.server_port}",
                          env["IDENTITY"], BOUND["offline"])
    t = threading.Thread(target=run)
    t.start()
    jid = job_running(env["IDENTITY"], time.monotonic() + 60)
    pidfile = os.path.join(env["LAB"], "run", "worker.pid")
    if jid:
        with open(pidfile) as f:
            os.kill(int(f.readline()), signal.SIGTERM)
    t.join()
    httpd.stopping = True
    httpd.shutdown()
    # The worker again; the cancelled job ends once it is back.
    subprocess.run([LAB_SH, "start"], capture_output=True, check=True)
    if not jid:
        return "the job never ran", out["r"][2], out["r"][3]
    why = broken_with(out["r"][2], "krepro-worker went offline", f"job {jid}")
    for _ in range(60):
        state = lavacli(env["IDENTITY"], "jobs", "show", jid).stdout
        if "Finished" in state:
            break
        time.sleep(1)
    else:
        why = why or f"job {jid} still not finished 60 s after the worker came back"
    return why, out["r"][2], out["r"][3]


def fault_down(env, results):
    subprocess.run([LAB_SH, "stop"], capture_output=True, check=True)
    try:
        status, err, run, secs = krepro(results, env["ARTIFACTS"], env["IDENTITY"], BOUND["down"])
    finally:
        t0 = time.monotonic()
        subprocess.run([LAB_SH, "start"], capture_output=True, check=True)
        print(f"  (lab started again in {time.monotonic() - t0:.0f} s)", flush=True)
    why = "" if status == USAGE and "does not answer" in err else \
        f"exit {status}, want {USAGE} with 'does not answer': {err.strip()[-300:]}"
    return why, {"evidence": err.strip().splitlines()[-1] if err.strip() else ""}, secs


FAULTS = {"rejected": fault_rejected, "incomplete": fault_incomplete, "offline": fault_offline,
          "down": fault_down}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--results", default=os.path.join(TOP, "results", "lava-lab-faults-"
                                                      + time.strftime("%Y%m%d-%H%M%S")))
    ap.add_argument("faults", nargs="*", metavar="fault", help=" | ".join(FAULTS))
    o = ap.parse_args()
    unknown = [f for f in o.faults if f not in FAULTS]
    if unknown:
        ap.error(f"unknown fault {unknown[0]}: one of {', '.join(FAULTS)}")
    env = lab_env()
    why = lava_lab.check_lab(env["IDENTITY"])
    if why:
        sys.exit(f"lava-lab-faults: the lab is not up ({why}): run make lava-lab first")
    bad = 0
    for name in o.faults or FAULTS:
        why, run, secs = FAULTS[name](env, os.path.join(o.results, name))
        bad += bool(why)
        evidence = (run or {}).get("evidence", "")
        print(f"{name:<11} {'ok' if not why else 'FAILED'}  {secs:5.1f} s  "
              f"{why or evidence}", flush=True)
    print(f"{len(o.faults or FAULTS) - bad}/{len(o.faults or FAULTS)} faults gave their outcome; "
          f"runs: {o.results}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
