#!/usr/bin/env python3
"""Guest slots are handed out first come, first served: a run that gives its
slot back and asks again at once does not overtake one that was waiting, an
`alone` guest gets every slot, and a dead process's queue entry blocks no one."""
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from krepro import slots  # noqa: E402


class Slots(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        os.environ["KREPRO_CACHE"] = self.tmp.name
        self.order = []

    def tearDown(self):
        self.tmp.cleanup()

    def take(self, name, jobs=1, alone=False, hold=0.0):
        with slots.guest_slot(jobs, alone):
            self.order.append(name)
            time.sleep(hold)

    def waiter(self, name, **kw):
        t = threading.Thread(target=self.take, args=(name,), kwargs=kw)
        t.start()
        time.sleep(3 * slots.POLL)  # queued before whoever asks next
        return t

    def test_a_waiter_goes_before_one_who_asks_again(self):
        with slots.guest_slot(1):
            t = self.waiter("waiter")
        # Asks again at once, as a calibration's next guest does.
        self.take("again")
        t.join()
        self.assertEqual(self.order, ["waiter", "again"])

    def test_queue_order_is_kept_for_three(self):
        with slots.guest_slot(1):
            ts = [self.waiter(n) for n in ("first", "second", "third")]
        for t in ts:
            t.join()
        self.assertEqual(self.order, ["first", "second", "third"])

    def test_alone_waits_for_every_slot_and_keeps_its_turn(self):
        with slots.guest_slot(2):
            t_alone = self.waiter("alone", jobs=2, alone=True, hold=0.5)
            # A slot is free, but the alone guest is ahead in the queue.
            t_late = self.waiter("late", jobs=2)
            self.assertEqual(self.order, [])
        t_alone.join()
        t_late.join()
        self.assertEqual(self.order, ["alone", "late"])

    def test_a_dead_processes_entry_is_dropped(self):
        p = subprocess.Popen(["true"])
        p.wait()
        with open(os.path.join(self.tmp.name, slots.QUEUE), "w") as f:
            f.write(f"{p.pid}.1.0 {p.pid} 12345\n")
        done = threading.Thread(target=self.take, args=("me",))
        done.start()
        done.join(timeout=10)
        self.assertEqual(self.order, ["me"])

    def test_the_queue_is_empty_after_use(self):
        self.take("one")
        with open(os.path.join(self.tmp.name, slots.QUEUE)) as f:
            self.assertEqual(f.read(), "")


if __name__ == "__main__":
    unittest.main()
