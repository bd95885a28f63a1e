#!/usr/bin/env python3
"""When a guest's answer is complete (scripts/krepro/early_stop.py): the bug's
report has ended, and the reproducer's KTAP verdict is on its stream."""
import os
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from krepro import meta, early_stop as answer  # noqa: E402

META = meta.Reproducer.from_json({"name": "fake-bug", "signatures": [{"kind": "REFCOUNT"}]})
META_OWN = meta.Reproducer.from_json({"name": "fake-bug", "cases": ["race"]})
START = ["krepro-init: started, uptime 1.0 s", "krepro-init: running fake-bug", "krepro: fake-bug: start"]
WARN = ["------------[ cut here ]------------", "refcount_t: addition on 0; use-after-free.",
        "WARNING: CPU: 1 PID: 80 at lib/refcount.c:25 refcount_warn_saturate+0x97/0x110",
        "Call Trace:", " <IRQ>", " j1939_can_recv+0x379/0x380"]
END = ["---[ end trace 0000000000000000 ]---"]


def console(lines):
    return "".join(f"[{1 + i / 100:10.6f}] {l}\n" for i, l in enumerate(lines))


class Ktap(unittest.TestCase):
    def test_plan_and_points(self):
        self.assertFalse(answer.ktap_complete(""))
        self.assertFalse(answer.ktap_complete("KTAP version 1\n1..2\nok 1 a\n"))
        self.assertTrue(answer.ktap_complete("KTAP version 1\n1..2\nok 1 a\n# x\nnot ok 2 b # FAIL\n"))

    def test_subtest_points_do_not_count(self):
        # An indented point belongs to a subtest, not to the top-level plan.
        self.assertFalse(answer.ktap_complete("1..1\n    1..1\n    ok 1 inner\n"))

    def test_every_case_point_is_enough(self):
        # The harness's scan point comes after the test process exits; the
        # cases' verdicts are the reproducer's own lines.
        ktap = "KTAP version 1\n1..3\nok 1 a\nnot ok 2 b # FAIL why\n"
        self.assertFalse(answer.ktap_complete(ktap))
        self.assertFalse(answer.ktap_complete(ktap, ["a", "b", "c"]))
        self.assertTrue(answer.ktap_complete(ktap, ["a", "b"]))

    def test_no_plan_is_never_complete(self):
        self.assertFalse(answer.ktap_complete("ok 1 a\n"))


class Watch(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.con = os.path.join(self.dir.name, "console.log")
        self.ktap = os.path.join(self.dir.name, "ktap.txt")
        self.put(self.ktap, "KTAP version 1\n1..1\n")

    def tearDown(self):
        self.dir.cleanup()

    def put(self, path, text):
        with open(path, "w") as f:
            f.write(text)

    def test_states_in_order(self):
        w = answer.Watch(META, self.con, self.ktap)
        self.put(self.con, console(START))
        self.assertIsNone(w())
        self.put(self.con, console(START + WARN))
        self.assertIsNone(w(), "the report has not ended yet")
        self.put(self.con, console(START + WARN + END))
        self.assertEqual(w(), "report")
        self.put(self.ktap, "KTAP version 1\n1..1\nnot ok 1 race # FAIL\n")
        self.assertEqual(w(), "complete")

    def test_report_without_an_end_line_ends_when_the_console_is_quiet(self):
        w = answer.Watch(META, self.con, self.ktap)
        self.put(self.con, console(START + WARN))
        self.assertIsNone(w())
        w.quiet_since -= answer.QUIET
        self.assertEqual(w(), "report")

    def test_another_report_is_not_the_answer(self):
        w = answer.Watch(meta.Reproducer.from_json({"name": "fake-bug", "signatures": [{"kind": "KASAN"}]}),
                         self.con, self.ktap)
        self.put(self.con, console(START + WARN + END))
        self.put(self.ktap, "KTAP version 1\n1..1\nnot ok 1 race # FAIL\n")
        self.assertIsNone(w())

    def test_report_before_the_start_is_not_the_answer(self):
        w = answer.Watch(META, self.con, self.ktap)
        self.put(self.con, console(START[:1] + WARN + END + START[1:]))
        self.assertIsNone(w())

    def test_own_evidence_fail_is_complete_once_the_plan_is(self):
        # No kernel report: the reproducer's own FAIL, then its exit. A later
        # report cannot change the FAIL, so shutdown is not waited for.
        w = answer.Watch(META_OWN, self.con, self.ktap)
        fail = "KTAP version 1\n1..2\n# race: FAIL: reads stalled 30 s\nnot ok 1 race # FAIL\n"
        self.put(self.ktap, fail)
        self.put(self.con, console(START + ["krepro-init: result name=fake-bug exit=1"]))
        self.assertIsNone(w(), "the harness's own point is not on the stream yet")
        self.put(self.ktap, fail + "ok 2 krepro-scan\n")
        self.assertEqual(w(), "own")

    def test_own_evidence_needs_the_exit(self):
        w = answer.Watch(META_OWN, self.con, self.ktap)
        self.put(self.ktap, "KTAP version 1\n1..1\n# race: FAIL: reads stalled\nnot ok 1 race # FAIL\n")
        self.put(self.con, console(START))
        self.assertIsNone(w())

    def test_a_pass_is_never_stopped(self):
        # Shutdown may still print a report that makes it OTHER.
        w = answer.Watch(META_OWN, self.con, self.ktap)
        self.put(self.ktap, "KTAP version 1\n1..1\nok 1 race\n")
        self.put(self.con, console(START + ["krepro-init: result name=fake-bug exit=0"]))
        self.assertIsNone(w())

    def test_given_text_and_no_ktap_stream(self):
        # A LAVA job: the console comes from its log, the KTAP is not read.
        w = answer.Watch(META)
        self.assertEqual(w(console(START + WARN + END)), "report")


if __name__ == "__main__":
    unittest.main()
