#!/usr/bin/env python3
"""krepro's LAVA jobs: the job and device configuration it generates (checked
against LAVA's own schema when lava-dispatcher is installed) and the reading
back of a job's log into console.log and ktap.txt. The logs in tests/lava/
are real lava-run logs of krepro's guests, trimmed of most boot lines and of
LAVA's debug lines. Boots nothing."""
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import guest, protocol  # noqa: E402
from krepro.lava import job as lava  # noqa: E402
from krepro.verdict import decide  # noqa: E402
from krepro.meta import Reproducer  # noqa: E402

LOG = os.path.join(HERE, "lava", "bpf-unpatched.lava-run.log")
BPF = Reproducer(name="bpf-percpu-reuse", cases=("percpu_hash", "lru_percpu_hash"))


def read(path):
    with open(path) as f:
        return f.read()


def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


class ReadBack(unittest.TestCase):
    def setUp(self):
        self.entries = lava.log_entries(read(LOG))

    def test_every_entry_parses_even_lavas_yaml_tags(self):
        # LAVA's dumper writes `"size": ! "7603200"`: YAML, not JSON.
        lines = [l for l in read(LOG).splitlines() if l.strip()]
        self.assertEqual(len(self.entries), len(lines))
        self.assertTrue(any("! \"" in l for l in lines))

    def test_quotes_lava_escaped_are_restored(self):
        fix = next(l for l in lava.target_lines(self.entries) if l.startswith("# fix:"))
        self.assertIn('("bpf: Zero-fill re-used per-cpu map element")', fix)

    def test_split_gives_the_two_files_of_a_local_guest(self):
        con, ktap = lava.split_console(lava.target_lines(self.entries))
        self.assertIn("krepro-init: result name=bpf-percpu-reuse exit=1", con)
        self.assertIn("Linux version 6.1", con)
        self.assertNotIn("KTAP version 1", con)
        self.assertTrue(ktap.startswith("KTAP version 1\n"))
        self.assertIn("not ok 1 percpu_hash # FAIL", ktap)
        self.assertNotIn("krepro-init", ktap)

    def test_same_outcome_as_a_local_guest(self):
        con, ktap = lava.split_console(lava.target_lines(self.entries))
        res = decide(con, BPF, ktap)
        self.assertEqual(res["outcome"], "FAIL")
        self.assertIn("percpu_hash: FAIL: new element 2 has stale values", res["evidence"])

    def test_lavas_own_results(self):
        r = lava.lava_results(self.entries)
        self.assertEqual(r["krepro/bpf_percpu_reuse"], "fail")
        self.assertEqual(r["lava/job"], "pass")
        self.assertFalse(lava.timed_out(self.entries))

    def test_a_servers_raw_log_reads_the_same(self):
        # `lavacli jobs logs --raw`: a YAML list of the same objects.
        raw = "".join(f"- {l}\n" for l in read(LOG).splitlines() if l.strip())
        self.assertEqual(lava.log_entries(raw), self.entries)

    def test_read_back_writes_the_files(self):
        with tempfile.TemporaryDirectory() as d:
            lava.read_back(read(LOG), d)
            self.assertIn("krepro-init: done", read(os.path.join(d, "console.log")))
            self.assertIn("# Totals: pass:0 fail:2", read(os.path.join(d, "ktap.txt")))



class Interleaved(unittest.TestCase):
    """can-j1939-echo on the unpatched kernel through lava-run (real log):
    the kernel's report, and a kernel line printed in the middle of one of
    the reproducer's (LAVA reads one serial console for both)."""

    def setUp(self):
        entries = lava.log_entries(read(os.path.join(HERE, "lava", "can-unpatched.lava-run.log")))
        self.con, self.ktap = lava.split_console(lava.target_lines(entries))

    def test_the_cut_line_is_whole_again_and_the_kernel_line_is_console(self):
        hint = [l for l in self.ktap.splitlines() if l.startswith("# hint:")]
        self.assertEqual(len(hint), 1)
        self.assertTrue(hint[0].endswith("generation-always-u.patch)"), hint[0])
        self.assertIn("] krepro: can-j1939-echo: end FAIL\n", self.con)
        self.assertFalse([l for l in self.ktap.splitlines() if lava.PRINTK_INSIDE.search(l)])

    def test_fail_by_the_signature(self):
        meta = Reproducer.from_json({"name": "can-j1939-echo", "cases": ["send_close_race"],
                                     "signatures": [{"kind": "REFCOUNT", "title": "refcount_t: addition on 0",
                                                     "frame": "j1939_.*"}]})
        res = decide(self.con, meta, self.ktap)
        self.assertEqual(res["outcome"], "FAIL")
        self.assertTrue(res["signature"].startswith("report: refcount_t: addition on 0"), res["signature"])

    def test_power_off_after_the_monitor_is_kept(self):
        # LAVA logs it as "feedback", once its monitor has stopped reading.
        self.assertIn("reboot: Restarting system", self.con)


class Timeout(unittest.TestCase):
    """can-j1939-echo on the patched kernel, a job whose test timeout (3 s)
    is shorter than the race (real log): LAVA stops it, krepro says HANG."""

    def test_a_lava_timeout_is_a_hang(self):
        entries = lava.log_entries(read(os.path.join(HERE, "lava", "can-patched-timeout.lava-run.log")))
        self.assertTrue(lava.timed_out(entries))
        self.assertEqual(lava.lava_results(entries)["lava/job"], "fail")
        con, ktap = lava.split_console(lava.target_lines(entries))
        meta = Reproducer(name="can-j1939-echo", cases=("send_close_race",))
        self.assertEqual(decide(con, meta, ktap, timed_out=True)["outcome"], "HANG")
        self.assertFalse(lava.timed_out(lava.log_entries(read(LOG))))
        # What the run's evidence gets when LAVA stopped it.
        self.assertIn("lava-test-monitor timed out after 3 seconds", lava.first_error(entries))
        self.assertIsNone(lava.first_error(lava.log_entries(read(LOG))))


class Definitions(unittest.TestCase):
    def job(self, arch="x86_64", disk=None):
        cmdline = guest.kernel_cmdline(arch, "bpf-percpu-reuse")
        return lava.job_definition(arch, "krepro bpf-percpu-reuse on unpatched run 1",
                                   "file:///k/bzImage", "file:///k/initramfs.cpio", cmdline, 120,
                                   disk, 2)

    def test_the_monitor_reads_the_init_and_knows_every_exit_code(self):
        mon = self.job()["actions"][2]["test"]["monitors"][0]
        m = re.search(mon["pattern"], "[    4.208477] krepro-init: result name=bpf-percpu-reuse exit=1")
        self.assertEqual(m.group("test_case_id"), "bpf-percpu-reuse")
        # The exit codes and the init's lines agree with the guest's side
        # (tests/test_protocol.py): the monitor knows every exit code.
        self.assertEqual(sorted(mon["fixupdict"]), sorted(str(c) for c in protocol.EXIT_OUTCOME))
        self.assertEqual(mon["fixupdict"]["2"], "unknown")

    def test_the_device_is_the_local_guests_machine(self):
        for arch in ("x86_64", "arm"):
            opts = lava.device_config(arch, 2)["actions"]["boot"]["methods"]["qemu"]["parameters"]["options"]
            words = " ".join(opts).split()
            machine = guest.machine_args(arch, "tcg", 2)
            self.assertEqual(words[:len(machine)], machine)
            self.assertEqual(words[len(machine):], ["-serial", "stdio"])
            # No KTAP channel: LAVA reads only the serial console.
            self.assertNotIn("virtconsole", " ".join(opts))

    def test_kernel_line_and_disk(self):
        job = self.job(disk="file:///d/xfs.img")
        images = job["actions"][0]["deploy"]["images"]
        self.assertIn("krepro.run=bpf-percpu-reuse", images["kernel"]["image_arg"])
        self.assertTrue(images["kernel"]["image_arg"].startswith("-kernel {kernel} -append '"))
        self.assertIn("file={disk},if=none,id=vda,format=qcow2,snapshot=on", images["disk"]["image_arg"])

    def test_lab_context_gives_the_same_machine(self):
        ctx = self.job()["context"]
        self.assertEqual(ctx["arch"], "amd64")
        self.assertIn("-cpu max,-erms,-fsrm", ctx["extra_options"])
        self.assertIn("-smp 2,sockets=2,cores=1,threads=1", ctx["extra_options"])
        arm = self.job("arm")["context"]
        self.assertEqual((arm["machine"], arm["cpu"]), ("virt", "cortex-a15"))

    def test_lavas_own_schema_accepts_the_job(self):
        try:
            from lava_common.schemas import validate
        except ImportError:
            self.skipTest("lava-dispatcher is not installed (make lava-deps)")
        for arch in ("x86_64", "arm"):
            validate(self.job(arch, disk="file:///d/xfs.img"), strict=True)

    def test_a_disk_goes_as_qcow2_with_the_same_content(self):
        with tempfile.TemporaryDirectory() as d:
            raw = os.path.join(d, "disk.img")
            with open(raw, "wb") as f:
                f.truncate(64 << 20)
                f.seek(1 << 20)
                f.write(b"krepro" * 100)
            q = lava.compact_disk(raw)
            self.assertLess(os.path.getsize(q), 8 << 20)
            back = os.path.join(d, "back.img")
            subprocess.run(["qemu-img", "convert", "-O", "raw", q, back], check=True)
            self.assertEqual(read_bytes(raw), read_bytes(back))
            self.assertEqual(lava.compact_disk(raw), q)


if __name__ == "__main__":
    unittest.main(verbosity=2)
