#!/usr/bin/env python3
"""Golden console logs: every tests/console/NAME.log must classify to exactly
the reports in NAME.expected (kind<TAB>title per report header, in console
order; the header that starts a crash adds <TAB>culprit title), and every row
of repro/lib/kernel-reports.tsv must be exercised by some log."""
import glob
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from krepro import reports as krepro  # noqa: E402


class Golden(unittest.TestCase):
    def test_golden_logs(self):
        logs = sorted(glob.glob(os.path.join(HERE, "console", "*.log")))
        self.assertTrue(logs)
        for log in logs:
            with self.subTest(log=os.path.basename(log)):
                with open(log) as f:
                    text = f.read()
                culprits = {c["line"]: c["culprit"] for c in krepro.crashes(text)}
                got = [(r["kind"], r["title"]) + ((culprits[r["line"]],) if r["line"] in culprits else ())
                       for r in krepro.classify(text)]
                with open(log[:-4] + ".expected") as f:
                    want = [tuple(l.rstrip("\n").split("\t")) for l in f if l.strip()]
                self.assertEqual(got, want)

    def test_every_pattern_has_a_golden_log(self):
        text = ""
        for log in glob.glob(os.path.join(HERE, "console", "*.log")):
            with open(log) as f:
                text += f.read()
        patterns = krepro.load_patterns()
        used = set()
        for _, line in krepro.console_lines(text):
            for i, (_, regex, _, _) in enumerate(patterns):
                if regex.match(line):
                    used.add(i)
                    break
        unused = [patterns[i][1].pattern for i in range(len(patterns)) if i not in used]
        # Catch-alls and rows for reports we have not met yet are listed here
        # on purpose; a new row must come with a log or be added below.
        allowed = {"^(?:BUG: KASAN: (.*))", "^(?:UBSAN: (.*))", "^(?:BUG: soft lockup)",
                   "^(?:BUG: workqueue lockup)", "^(?:BUG: Bad page (state|map))", "^(?:BUG: (.*))",
                   "^(?:WARNING: (.*))", "^(?:(rcu: )?INFO: rcu_[a-z]+ detected expedited stall)"}
        self.assertEqual([u for u in unused if u not in allowed], [])

    def test_table_suits_posix_regcomp_and_cmake(self):
        # The guest compiles column 2 with regcomp(REG_EXTENDED), and CMake
        # reads the file as a list: an unmatched "[" would swallow lines.
        with open(krepro.PATTERNS_TSV) as f:
            rows = [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#")]
        for cols in rows:
            with self.subTest(row=cols[1]):
                self.assertIn(len(cols), (3, 4))
                for bad in ("\\d", "\\s", "\\w", "\\b", "(?", "*?", "+?", "[[:"):
                    self.assertNotIn(bad, cols[1])
                for col in cols:
                    self.assertEqual(col.count("["), col.count("]"))

    def test_culprit_title(self):
        # The first frame outside the machinery, suffix and syscall wrapper dropped.
        self.assertEqual(krepro.culprit_title("WARNING", "WARNING in refcount_warn_saturate",
                                              ["refcount_warn_saturate", "__x64_sys_close.cold"]),
                         "WARNING in close")
        self.assertEqual(krepro.culprit_title("kernel BUG", "kernel BUG at lib/list_debug.c:53",
                                              ["__list_del_entry_valid.cold", "dump_stack_lvl"]),
                         "kernel BUG")
        self.assertEqual(krepro.culprit_title(None, "KCSAN: data-race in a / b", ["a", "b"]),
                         "KCSAN: data-race in a / b")

    def test_culprit_skips_what_is_not_the_trace(self):
        log = ("[ 1.0] ODEBUG: free active (active state 0) object type: timer_list hint: cb_fn+0x0/0x10\n"
               "[ 1.1] WARNING: CPU: 0 PID: 1 at lib/debugobjects.c:505 debug_print_object+0x1/0x2\n"
               "[ 1.2]  #0: ffff88800 (&lock){+.+.}-{3:3}, at: held_fn+0x1/0x2\n"
               "[ 1.3] LR is at lr_fn+0x1/0x2\n"
               "[ 1.4]  ? unreliable_fn+0x1/0x2\n"
               "[ 1.5]  kfree+0x1/0x2\n"
               "[ 1.6]  real_fn.isra.0+0x1/0x2\n")
        c = krepro.crashes(log)[0]
        self.assertEqual(c["culprit"], "ODEBUG: free active object type: timer_list in real_fn")
        # "frames" keeps every function the report names, for a reader; a
        # signature's frame is matched in "trace_frames" alone (here: no
        # "Call Trace:" heading, so none).
        self.assertTrue({"cb_fn", "held_fn", "lr_fn", "unreliable_fn", "real_fn.isra.0"} <= set(c["frames"]))
        self.assertEqual(c["trace_frames"], [])

    def test_timestamp_and_cr_are_stripped(self):
        r = krepro.classify("[   12.345678] BUG: KASAN: slab-out-of-bounds in foo+0x1/0x2\r\n")
        self.assertEqual(r[0]["title"], "KASAN: slab-out-of-bounds in foo")

    def test_quoted_report_does_not_match(self):
        self.assertEqual(krepro.classify("# kernel report after the mark: BUG: KASAN: x in y\n"), [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
