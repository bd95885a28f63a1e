#!/usr/bin/env python3
"""The nvme storm's stalled-read judgement (repro/lib/nvme-stall.c) on fake
/proc and /sys trees: a stall is the bug's FAIL only when the state shows the
request lost; a task stuck in nvme code, or anything else, is BROKEN in the
storm (nvmf.c). The test build reads the trees under ROOT, never the
host's. And the storm's race-window count (repro/lib/nvme-window.c) on
kernel lines: only an I/O queue's timeout handler inside its controller's
teardown counts."""
import os
import shutil
import subprocess
import sys
import unittest

STALL_STATE, ROOT = sys.argv[1:3]
del sys.argv[1:3]

READER_PID, READER_TID = 300, 305
DISK = "nvme0n1"
RQ = ("00000000d2a1c3f4 {.op=READ, .cmd_flags=, .rq_flags=STARTED|ELVPRIV|IO_STAT, "
      ".state=in_flight, .tag=3, .internal_tag=-1}")
READER_WAITS = ["[<0>] submit_bio_wait+0x5c/0x90", "[<0>] __blkdev_direct_IO_simple+0x1d0/0x3c0",
                "[<0>] blkdev_read_iter+0x10a/0x1e0"]
READER_ENTERS_FROZEN = ["[<0>] __bio_queue_enter+0x13e/0x2a0", "[<0>] blk_mq_submit_bio+0x54c/0x8a0"]
TEARDOWN_HUNG = ["[<0>] __flush_work+0x2ac/0x4a0", "[<0>] nvme_tcp_teardown_io_queues+0x4f/0xd0",
                 "[<0>] nvme_tcp_error_recovery_work+0x3a/0x90"]
JOURNAL = ["[<0>] kjournald2+0x2c4/0x3a0"]


def write(rel, lines):
    path = os.path.join(ROOT, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.writelines(line + "\n" for line in lines)


class Stall(unittest.TestCase):
    def setUp(self):
        shutil.rmtree(ROOT, ignore_errors=True)
        write("sys/class/nvme/nvme0/state", ["connecting"])
        self.task(READER_PID, "krepro-reader", "D", READER_WAITS, tid=READER_TID)
        self.task(1, "init", "S", ["[<0>] do_wait+0x160/0x2f0"])

    def task(self, pid, comm, state, stack, tid=None):
        write(f"proc/{pid}/stat", [f"{pid} ({comm}) {state} 1 1 1"])
        write(f"proc/{pid}/stack", stack)
        if tid:
            write(f"proc/{pid}/task/{tid}/stack", stack)

    def blk_mq(self, busy=(), dispatch=(), sw=(), requeue=()):
        base = f"sys/kernel/debug/block/{DISK}"
        write(f"{base}/hctx0/busy", busy)
        write(f"{base}/hctx0/dispatch", dispatch)
        write(f"{base}/hctx0/cpu0/default_rq_list", sw)
        write(f"{base}/hctx0/cpu0/read_rq_list", [])
        write(f"{base}/hctx1/busy", [])
        write(f"{base}/requeue_list", requeue)
        write(f"{base}/state", ["SAME_COMP|NONROT|IO_STAT|INIT_DONE|STATS"])

    def judge(self):
        p = subprocess.run([STALL_STATE, DISK, "0", str(READER_PID), str(READER_TID)],
                           capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        last = p.stdout.strip().splitlines()[-1].split()
        return last[1], int(last[3]), p.stdout

    def test_no_request_held_is_lost(self):
        self.blk_mq()
        cause, held, out = self.judge()
        self.assertEqual((cause, held), ("request-lost", 0), out)
        self.assertIn("stall state: controller state: connecting", out)
        self.assertIn("stall state: the stalled reader's kernel stack: [<0>] submit_bio_wait", out)
        self.assertIn(f"stall state: {DISK}: 0 requests in flight, 0 waiting", out)

    def test_reader_entering_a_frozen_queue_has_nothing_to_lose(self):
        self.task(READER_PID, "krepro-reader", "D", READER_ENTERS_FROZEN, tid=READER_TID)
        self.blk_mq()
        cause, held, out = self.judge()
        self.assertEqual((cause, held), ("unexplained", 0), out)

    def test_request_held_and_teardown_hung_in_nvme(self):
        self.blk_mq(busy=[RQ])
        self.task(57, "kworker/u4:2", "D", TEARDOWN_HUNG)
        cause, held, out = self.judge()
        self.assertEqual((cause, held), ("nvme-hung", 1), out)
        self.assertIn("stall state: hctx0 in flight: " + RQ, out)
        self.assertIn("stall state: blocked task 57 (kworker/u4:2): "
                      "[<0>] nvme_tcp_teardown_io_queues", out)
        self.assertIn("1 other tasks in uninterruptible sleep, 1 of them in nvme code", out)

    def test_request_held_and_nothing_in_nvme_is_unexplained(self):
        self.blk_mq(dispatch=[RQ])
        self.task(80, "jbd2/vda-8", "D", JOURNAL)
        cause, held, out = self.judge()
        self.assertEqual((cause, held), ("unexplained", 1), out)
        self.assertIn("1 other tasks in uninterruptible sleep, 0 of them in nvme code", out)

    def test_every_list_counts(self):
        self.blk_mq(busy=[RQ], dispatch=[RQ], sw=[RQ, RQ], requeue=[RQ])
        cause, held, out = self.judge()
        self.assertEqual((cause, held), ("unexplained", 5), out)
        self.assertIn(f"stall state: {DISK}: 1 requests in flight, 4 waiting", out)

    def test_the_reader_itself_is_not_a_hung_task(self):
        # The reader sleeps in D in nvme code: it is the symptom, not a cause.
        self.task(READER_PID, "krepro-reader", "D", ["[<0>] nvme_tcp_queue_rq+0x10/0x20"] +
                  READER_WAITS, tid=READER_TID)
        self.blk_mq(busy=[RQ])
        cause, _, out = self.judge()
        self.assertEqual(cause, "unexplained", out)

    def test_lists_unreadable_is_never_lost(self):
        # No blk-mq debugfs: zero lists read is not zero requests held.
        cause, held, out = self.judge()
        self.assertEqual((cause, held), ("unexplained", 0), out)
        self.assertIn("no hctx directories (CONFIG_BLK_DEBUG_FS off?)", out)
        self.task(57, "kworker/u4:2", "D", TEARDOWN_HUNG)
        cause, _, out = self.judge()
        self.assertEqual(cause, "nvme-hung", out)


def window(lines, instance=0):
    """The window count of those kernel lines, as a dict of numbers."""
    p = subprocess.run([STALL_STATE, "--window", str(instance)], input="".join(l + "\n" for l in lines),
                       capture_output=True, text=True, timeout=30)
    words = p.stdout.split()
    return {words[i].rstrip(":"): int(words[i + 1]) for i in range(0, len(words), 2)}


RECOVERY = ["nvme nvme0: queue 1: timeout request 0x30 type 4", "nvme nvme0: starting error recovery",
            "nvme nvme0: queue 2: timeout request 0x51 type 4",
            "nvme nvme0: I/O tag 82 (1052) type 4 opcode 0x2 (Read) QID 1 timeout",
            "nvme nvme0: queue 0: timeout request 0x1 type 4", "nvme nvme0: Reconnecting in 1 seconds..."]


class Window(unittest.TestCase):
    def test_io_timeouts_inside_the_teardown_count(self):
        got = window(RECOVERY)
        self.assertEqual(got, {"timeouts": 4, "io": 2, "admin": 1, "raced": 1, "recoveries": 1,
                               "reconnects": 0, "failed": 0})

    def test_timeouts_outside_the_teardown_do_not(self):
        # Before the recovery, after "Reconnecting", during the reconnect.
        got = window(RECOVERY + ["nvme nvme0: queue 1: timeout request 0x2 type 4",
                                 "nvme nvme0: creating 2 I/O queues.",
                                 "nvme nvme0: I/O 3 QID 2 timeout",
                                 "nvme nvme0: Successfully reconnected (1 attempt)"])
        self.assertEqual((got["timeouts"], got["io"], got["raced"], got["reconnects"]), (6, 2, 1, 1))

    def test_a_teardown_that_never_said_reconnecting_ends_at_the_reconnect(self):
        got = window(["nvme nvme0: starting error recovery", "nvme nvme0: creating 2 I/O queues.",
                      "nvme nvme0: queue 1: timeout request 0x9 type 4"])
        self.assertEqual((got["io"], got["raced"]), (0, 0))

    def test_only_that_controller_and_only_handler_lines(self):
        got = window(["nvme nvme0: starting error recovery", "nvme nvme1: queue 1: timeout request 0x4 type 4",
                      "nvmet: ctrl 1 keep-alive timer (5 seconds) expired!",
                      "nvme nvme0: failed nvme_keep_alive_end_io error=4 (keep-alive timeout)",
                      "nvme nvme0: queue 1: timeout request 0x6 type 4"])
        self.assertEqual((got["timeouts"], got["io"], got["raced"]), (1, 1, 1))
        self.assertEqual(window(["nvme nvme1: starting error recovery",
                                 "nvme nvme1: I/O 12 QID 1 timeout"], instance=1)["io"], 1)

    def test_two_recoveries_each_raced(self):
        got = window(RECOVERY + RECOVERY[1:])
        self.assertEqual((got["recoveries"], got["io"], got["raced"]), (2, 4, 2))


if __name__ == "__main__":
    unittest.main()
