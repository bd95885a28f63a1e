#!/usr/bin/env python3
"""krepro and a LAVA lab (--via lava:ID) without one: artifacts and their
checksums, the lab check before a run, the watch over a running job against
a stand-in for LAVA's XML-RPC API (a worker that goes offline, a server
that stops answering), LAVA's times, and the locks a lab job's QEMU holds
on this machine. Boots nothing; the real lab's runs are make lava-lab-check."""
import fcntl
import hashlib
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import xmlrpc.server
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import guest, slots  # noqa: E402
from krepro.lava import job as lava, lab as lava_lab  # noqa: E402


class FakeLava:
    """LAVA's XML-RPC calls that krepro makes, on 127.0.0.1, with the
    worker's state and the job's record set by the test."""

    def __init__(self):
        self.worker_state = "Online"
        self.job = {"state": "Running", "device": "qemu-x86_64-01", "health": "Unknown"}
        self.srv = xmlrpc.server.SimpleXMLRPCServer(("127.0.0.1", 0), logRequests=False, allow_none=True)
        self.srv.register_function(lambda: "2023.01", "system.version")
        self.srv.register_function(lambda jid: self.job, "scheduler.jobs.show")
        self.srv.register_function(lambda d: {"hostname": d, "worker": "w1"}, "scheduler.devices.show")
        self.srv.register_function(lambda: [{"hostname": "qemu-x86_64-01", "type": "qemu", "health": "Good"}],
                                   "scheduler.devices.list")
        self.srv.register_function(lambda w: {"hostname": w, "state": self.worker_state},
                                   "scheduler.workers.show")
        threading.Thread(target=self.srv.serve_forever, daemon=True).start()
        self.port = self.srv.server_address[1]

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


class WithIdentity(unittest.TestCase):
    """A lavacli configuration of the test's own (XDG_CONFIG_HOME)."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        patch = mock.patch.dict(os.environ, {"XDG_CONFIG_HOME": self.tmp.name})
        patch.start()
        self.addCleanup(patch.stop)

    def identity(self, port, name="lab"):
        with open(os.path.join(self.tmp.name, "lavacli.yaml"), "w") as f:
            f.write(f"{name}:\n  uri: http://127.0.0.1:{port}/RPC2\n  username: u\n  token: t\n")
        return name


class CheckLab(WithIdentity):
    def test_a_missing_identity_is_named(self):
        self.identity(1)
        self.assertIn("no lavacli identity 'other'", lava_lab.check_lab("other"))

    def test_a_lab_that_is_down_does_not_answer(self):
        # A port that nothing listens on: the lab's server stopped.
        import socket
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        self.assertIn("does not answer", lava_lab.check_lab(self.identity(port)))

    def test_a_lab_that_answers_passes(self):
        lab = FakeLava()
        self.addCleanup(lab.stop)
        self.assertIsNone(lava_lab.check_lab(self.identity(lab.port)))


class Watching(WithIdentity):
    def setUp(self):
        super().setUp()
        self.lab = FakeLava()
        self.addCleanup(self.lab.stop)
        self.ident = self.identity(self.lab.port)

    def watch(self):
        w = lava_lab.Watch(self.ident, "7")
        w.next = 0.0
        return w

    def checks(self, w, n):
        """n checks of w in a row, each one due."""
        for _ in range(n):
            w.next = 0.0
            w.check()

    def test_an_online_worker_is_quiet(self):
        self.watch().check()

    def test_a_worker_that_goes_offline_loses_the_job(self):
        self.lab.worker_state = "Offline"
        with self.assertRaisesRegex(lava_lab.LabLost, "worker w1 went offline during job 7"):
            self.watch().check()

    def test_a_queued_job_waits_while_a_device_of_its_type_is_online(self):
        self.lab.job = {"state": "Submitted", "device": None, "device_type": "qemu"}
        self.checks(self.watch(), 3)

    def test_a_queued_job_with_no_device_online_is_lost_at_the_second_check(self):
        self.lab.job = {"state": "Submitted", "device": None, "device_type": "qemu"}
        self.lab.worker_state = "Offline"
        w = self.watch()
        self.checks(w, 1)
        with self.assertRaisesRegex(lava_lab.LabLost, "job 7 waits in the lab's queue with no qemu device"):
            self.checks(w, 1)

    def test_a_server_that_stops_answering_loses_the_job_after_three_checks(self):
        w = self.watch()
        self.lab.stop()
        self.checks(w, lava_lab.UNANSWERED - 1)
        with self.assertRaisesRegex(lava_lab.LabLost, "stopped answering during job 7"):
            self.checks(w, 1)

    def test_checks_are_spaced(self):
        w = self.watch()
        w.check()
        self.lab.worker_state = "Offline"
        w.check()  # within WATCH_EVERY of the last: not asked again


class Artifacts(unittest.TestCase):
    def test_publish_names_artifacts_by_content_and_gives_their_sha256(self):
        with tempfile.TemporaryDirectory() as d:
            src = os.path.join(d, "bzImage")
            with open(src, "w") as f:
                f.write("kernel")
            out = os.path.join(d, "www")
            os.mkdir(out)
            url, digest = lava_lab.publish(src, (out, "http://lab.example/krepro/"))
            self.assertEqual(digest, hashlib.sha256(b"kernel").hexdigest())
            self.assertRegex(url, r"^http://lab\.example/krepro/[0-9a-f]{16}-bzImage$")
            self.assertEqual(os.listdir(out), [url.rsplit("/", 1)[1]])
            self.assertEqual(lava_lab.publish(src, (out, "http://lab.example/krepro"))[0], url)

    def test_the_job_names_each_images_sha256_and_lava_accepts_it(self):
        sums = {"kernel": "a" * 64, "initrd": "b" * 64, "disk": "c" * 64}
        job = lava.job_definition("x86_64", "j", "http://l/k", "http://l/i", "console=ttyS0", 60,
                                  "http://l/d", 2, sums=sums)
        images = job["actions"][0]["deploy"]["images"]
        self.assertEqual({k: v["sha256sum"] for k, v in images.items()}, sums)
        try:
            from lava_common.schemas import validate
        except ImportError:
            self.skipTest("lava-dispatcher is not installed (make lava-deps)")
        validate(job, strict=True)


class Times(unittest.TestCase):
    def test_the_labs_overhead_from_its_own_times(self):
        job = {"submit_time": "20261206T13:20:23", "start_time": "20261206T13:20:25",
               "end_time": "20261206T13:20:40"}
        entries = [{"dt": "2026-12-06T13:20:25.5", "lvl": "info", "msg": "start"},
                   {"dt": "2026-12-06T13:20:25.6", "lvl": "target", "msg": "krepro lab guest: waiting for the guest slots"},
                   {"dt": "2026-12-06T13:20:27.0", "lvl": "target",
                    "msg": "krepro lab guest: waited 1.3 s for this machine's locks"},
                   {"dt": "2026-12-06T13:20:27.250000", "lvl": "target", "msg": "SeaBIOS"},
                   {"dt": "2026-12-06T13:20:28.0", "lvl": "target", "msg": "Linux version"}]
        self.assertEqual(lava_lab.job_times(job, entries), {"queue": 2.0, "to_console": 4.2, "lock_wait": 1.3,
                                                                "total": 17.0})
        self.assertEqual(lava_lab.job_times({}, []), {"queue": None, "to_console": None, "lock_wait": 0,
                                                      "total": None})


class LabGuestLocks(unittest.TestCase):
    """A lab job's QEMU (krepro.lava.lab_guest) holds the machine lock shared and
    every guest slot while it runs, and waits for a kernel build's lock."""

    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.env = dict(os.environ, KREPRO_CACHE=self.tmp.name, PYTHONPATH=os.path.join(TOP, "scripts"))

    def lock(self, name, mode):
        fd = os.open(os.path.join(self.tmp.name, name), os.O_WRONLY | os.O_CREAT)
        self.addCleanup(os.close, fd)
        try:
            fcntl.flock(fd, mode | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            return None

    def guest(self, marker, seconds):
        return subprocess.Popen([sys.executable, "-m", "krepro.lava.lab_guest", "/bin/sh", "-c",
                                 f"touch {marker}; sleep {seconds}"], env=self.env,
                                stderr=subprocess.DEVNULL)

    def wait_for(self, path):
        for _ in range(100):
            if os.path.exists(path):
                return True
            time.sleep(0.05)
        return False

    def test_the_guest_holds_the_slots_and_the_machine_lock_shared(self):
        marker = os.path.join(self.tmp.name, "booted")
        p = self.guest(marker, 3)
        self.addCleanup(p.wait)
        self.assertTrue(self.wait_for(marker))
        for i in range(guest.default_jobs()):
            self.assertIsNone(self.lock(slots.slot_name(i), fcntl.LOCK_EX))
        self.assertIsNone(self.lock("machine.lock", fcntl.LOCK_EX))
        self.assertIsNotNone(self.lock("machine.lock", fcntl.LOCK_SH))
        p.wait()
        self.assertIsNotNone(self.lock(slots.slot_name(0), fcntl.LOCK_EX))

    def test_the_guest_waits_for_a_kernel_build(self):
        marker = os.path.join(self.tmp.name, "booted")
        build = self.lock("machine.lock", fcntl.LOCK_EX)
        p = self.guest(marker, 0)
        self.addCleanup(p.wait)
        time.sleep(1)
        self.assertFalse(os.path.exists(marker))
        fcntl.flock(build, fcntl.LOCK_UN)
        self.assertTrue(self.wait_for(marker))


if __name__ == "__main__":
    unittest.main(verbosity=2)
