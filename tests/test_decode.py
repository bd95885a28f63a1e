#!/usr/bin/env python3
"""Decoded traces: a report's frames through the kernel's own
scripts/decode_stacktrace.sh, on a small ELF built here with line
information, and how summary.md picks the decoded report."""
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
from krepro.reports import decode  # noqa: E402
from krepro.results import render  # noqa: E402
from krepro.paths import cache  # noqa: E402

SCRIPT = os.path.join(cache(), "linux-6.1", "scripts", "decode_stacktrace.sh")

VICTIM_C = """volatile int sink;
__attribute__((noinline)) void victim(int *p)
{
\tsink = *p;
}
__attribute__((noinline)) void caller(int *p)
{
\tvictim(p);
\tsink++;
}
int main(void) { int x = 1; caller(&x); return 0; }
"""

# The shape of a KASAN report's first lines, on the functions above.
REPORT = ["[    5.000000] BUG: KASAN: use-after-free in victim+0x4/0x9",
          "[    5.000001] Call Trace:",
          "[    5.000002]  <TASK>",
          "[    5.000003]  victim+0x4/0x9",
          "[    5.000004]  caller+0x9/0x15",
          "[    5.000005]  </TASK>"]


class Decode(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()

    def tearDown(self):
        shutil.rmtree(self.tmp)

    def build(self, *flags):
        src = os.path.join(self.tmp, "victim.c")
        with open(src, "w") as f:
            f.write(VICTIM_C)
        out = os.path.join(self.tmp, "vmlinux")
        subprocess.run(["gcc", "-O1", *flags, "-o", out, src], check=True, cwd=self.tmp)
        return out

    def tree(self):
        """A tree holding the kernel's script, as a --tree would."""
        os.makedirs(os.path.join(self.tmp, "scripts"))
        shutil.copy(SCRIPT, os.path.join(self.tmp, "scripts"))
        return self.tmp

    @unittest.skipUnless(os.path.isfile(SCRIPT), "no kernel tree (scripts/kernels.sh tree)")
    def test_every_frame_decodes_to_file_and_line(self):
        vmlinux = self.build("-g")
        lines, why = decode.decode(REPORT, vmlinux, "x86_64", tree=self.tree())
        self.assertIsNone(why)
        text = "\n".join(lines)
        self.assertIn("victim (victim.c:4)", text)
        # A return address: the call's line or the next, as the compiler placed it.
        self.assertRegex(text, r"caller \(victim\.c:[89]\)")
        # The header's function and both frames; the markers stay as they were.
        self.assertEqual(decode.decoded_frames(lines), 3)
        self.assertIn("<TASK>", text)

    def test_a_vmlinux_without_line_information_says_so(self):
        vmlinux = self.build()
        lines, why = decode.decode(REPORT, vmlinux, "x86_64")
        self.assertIsNone(lines)
        self.assertIn("has no line information", why)

    def test_no_vmlinux_says_how_to_give_one(self):
        lines, why = decode.decode(REPORT, None, "x86_64")
        self.assertIsNone(lines)
        self.assertIn("--vmlinux", why)

    def test_report_lines_run_from_the_header_to_the_end_marker(self):
        console = "\n".join(["boot", "krepro: x: start", *REPORT,
                             "[    5.000006] ---[ end trace 0000000000000000 ]---", "after"])
        got = decode.report_lines(console, {"line": 3})
        self.assertEqual(got[0], REPORT[0])
        self.assertTrue(got[-1].endswith("---[ end trace 0000000000000000 ]---"))
        self.assertEqual(len(decode.report_lines(console, {"line": 3}, lines=2)), 2)

    def test_summary_shows_the_decoded_report_when_there_is_one(self):
        os.makedirs(os.path.join(self.tmp, "r1"))
        with open(os.path.join(self.tmp, "r1", "console.log"), "w") as f:
            f.write("\n".join(REPORT) + "\n")
        run = {"log": "r1/console.log", "ktap": "r1/ktap.txt", "evidence": "KASAN: use-after-free in victim",
               "reports": [{"title": "KASAN: use-after-free in victim", "line": 1}]}
        rep, lines = render.excerpt(self.tmp, run)
        self.assertEqual(lines[0], REPORT[0])
        with open(os.path.join(self.tmp, "r1", "report.txt"), "w") as f:
            f.write("[    5.000000] BUG: KASAN: use-after-free in victim (victim.c:4)\n")
        run["report"] = "r1/report.txt"
        rep, lines = render.excerpt(self.tmp, run)
        self.assertEqual(lines, ["[    5.000000] BUG: KASAN: use-after-free in victim (victim.c:4)"])


if __name__ == "__main__":
    unittest.main()
