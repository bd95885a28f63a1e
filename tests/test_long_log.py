#!/usr/bin/env python3
"""krepro classify on one long log made of many: every golden console log
(tests/console/), every hand-written pasted log (tests/pasted/) and every
upstream report (tests/upstream/) one after another, four times, each piece
closed by an end-of-trace line. The long log gives, report for report, what
each piece gives alone (its line numbers moved by the lines before it), and
what reading and classifying every line of it gives: passing over the lines
no report can be in changes nothing. A line of 1, 16 or 64 MiB before a report
or inside one hides none of it, from a file or a pipe, in bounded memory and
time linear in the log's size. Boots nothing.
"""
import glob
import io
import os
import subprocess
import sys
import tempfile
import threading
import time
import tracemalloc
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "scripts"))
from krepro.reports import classify, console, logtext, needles, trace  # noqa: E402

PIECES = sorted(glob.glob(os.path.join(HERE, "console", "*.log"))) + \
    sorted(glob.glob(os.path.join(HERE, "pasted", "*"))) + sorted(glob.glob(os.path.join(HERE, "upstream", "*")))
# Ends a report left open at the end of a piece, as the kernel ends one:
# the next piece's lines are not read as part of it.
END = "---[ end trace 0000000000000000 ]---\n"
# The pieces over again, till the log spans a few of the reader's blocks.
TIMES = 4


def read(path):
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        text = f.read()
    return text if text.endswith(("\n", "\r")) else text + "\n"


def found(text):
    """classify.reports_of() of a log's text: (crash dict, trace) each."""
    return list(classify.reports_of(io.StringIO(text, newline=None)))


def lines_in(text):
    return sum(1 for _ in logtext.file_lines(io.StringIO(text, newline=None)))


def moved(reps, by):
    return [(dict(crash, line=crash["line"] + by), trace) for crash, trace in reps]


class LongLog(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.texts = [read(p) for p in PIECES]
        cls.long = "".join(t + END for t in cls.texts) * TIMES

    def test_the_pieces_are_many_and_the_log_spans_blocks(self):
        self.assertGreater(len(PIECES), 200)
        self.assertGreater(len(self.long), 2 * logtext.BLOCK)  # pieces cut across blocks

    def test_each_piece_gives_what_it_gives_alone(self):
        alone = [found(text) for text in self.texts]
        for path, text, reps in zip(PIECES, self.texts, alone):
            self.assertEqual(found(text + END), reps, os.path.basename(path))
        want, at = [], 0
        for _ in range(TIMES):
            for text, reps in zip(self.texts, alone):
                want += moved(reps, at)
                at += lines_in(text + END)
        got = found(self.long)
        self.assertGreater(len(got), 500)
        self.assertEqual(len(got), len(want))
        for (g, gt), (w, wt) in zip(got, want):
            self.assertEqual((g, gt), (w, wt), f"report at line {w['line']}")

    def test_reading_every_line_gives_the_same(self):
        # needles() None: every line is read and tried as a header.
        with mock.patch.object(needles, "needles", return_value=None):
            every = found(self.long)
        self.assertEqual(found(self.long), every)

    def test_the_same_through_crashes_stream(self):
        # The guest's own path (console.crashes() of the whole text) and
        # classify's agree on every header, title and trace frame.
        plain = [(n, logtext.plain(line)) for n, line in logtext.file_lines(io.StringIO(self.long, newline=None))]
        want = [(c["line"], c["kind"], c["title"], c["culprit"], c["trace_frames"])
                for c in console.crashes_stream(plain)]
        got = [(c["line"], c["kind"], c["title"], c["culprit"], c["trace_frames"]) for c, _ in found(self.long)]
        self.assertEqual(got, want)

class GiantLines(unittest.TestCase):
    """A line far past any the kernel prints (a binary blob, a log pasted
    with its newlines lost) is read as a bounded head of itself; the lines
    after it are read as any others."""

    KASAN = os.path.join(HERE, "upstream", "tcmu-uio-rmdir-092561f06702.log")
    TITLE = "KASAN: use-after-free Read in uio_unregister_device"

    @classmethod
    def setUpClass(cls):
        cls.scratch = tempfile.TemporaryDirectory()
        cls.report = read(cls.KASAN)
        cls.want = [(dict(c, line=None), t) for c, t in found(cls.report)]
        assert [c["culprit"] for c, _ in cls.want] == [cls.TITLE]

    @classmethod
    def tearDownClass(cls):
        cls.scratch.cleanup()

    def log(self, mib, inside):
        """A log file: the report with a line of mib MiB before it, or
        (inside) after its header's second line, where its trace is still
        to come; and the line its header is on."""
        lines = self.report.splitlines(keepends=True)
        at = 3 if inside else 0
        path = os.path.join(self.scratch.name, f"giant-{mib}-{inside}.log")
        with open(path, "w") as f:
            f.writelines(lines[:at])
            for _ in range(mib):
                f.write("x" * (1 << 20))
            f.write("\n")
            f.writelines(lines[at:])
        return path, 2 if inside else 3

    def reports(self, path, pipe):
        """classify.reports_of() of the log, opened as a file, or read from
        a pipe a thread writes it into in pieces a pipe holds."""
        if not pipe:
            with open(path, encoding="utf-8", errors="replace") as f:
                return list(classify.reports_of(f))
        r, w = os.pipe()

        def feed():
            with open(path, "rb") as src, open(w, "wb", buffering=0) as dst:
                for piece in iter(lambda: src.read(1 << 16), b""):
                    dst.write(piece)
        writer = threading.Thread(target=feed)
        writer.start()
        try:
            with open(r, encoding="utf-8", errors="replace") as f:
                return list(classify.reports_of(f))
        finally:
            writer.join()

    def check(self, mib, inside, pipe):
        path, line = self.log(mib, inside)
        got = self.reports(path, pipe)
        what = f"{mib} MiB line {'inside' if inside else 'before'} the report, from a {'pipe' if pipe else 'file'}"
        self.assertEqual([c["line"] for c, _ in got], [line], what)
        self.assertEqual([(dict(c, line=None), t) for c, t in got], self.want, what)

    def test_a_giant_line_before_or_inside_a_report_hides_none_of_it(self):
        for mib in (1, 16, 64):
            for inside in (False, True):
                for pipe in (False, True):
                    with self.subTest(mib=mib, inside=inside, pipe=pipe):
                        self.check(mib, inside, pipe)

    def test_the_guest_runs_reader_too(self):
        # A guest's console is read whole (console.crashes()): the same report.
        for inside in (False, True):
            path, line = self.log(16, inside)
            with open(path, errors="replace") as f:
                got = console.crashes(f.read())
            self.assertEqual([(c["line"], c["culprit"]) for c in got], [(line, self.TITLE)])
            self.assertEqual(got[0]["trace_frames"], self.want[0][0]["trace_frames"])

    def test_classify_on_stdin_says_the_report_and_exits_1(self):
        path, _ = self.log(16, False)
        env = dict(os.environ, KREPRO_NO_BUILD="1", PYTHONPATH=os.path.join(os.path.dirname(HERE), "scripts"))
        with open(path, "rb") as f:
            p = subprocess.run([sys.executable, "-m", "krepro", "classify", "-"], stdin=f, env=env,
                               capture_output=True, text=True)
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertTrue(p.stdout.startswith(f"report 1, line 3: {self.TITLE}\n"), p.stdout[:200])

    def test_memory_stays_bounded_and_time_linear(self):
        seconds = {}
        for mib in (16, 64):
            path, _ = self.log(mib, True)
            t0 = time.monotonic()
            tracemalloc.start()
            try:
                self.check(mib, True, False)
                peak = tracemalloc.get_traced_memory()[1]
            finally:
                tracemalloc.stop()
            seconds[mib] = time.monotonic() - t0
            # The head kept, a block read and their join: a few MiB whatever the line.
            self.assertLess(peak, 16 << 20, f"{mib} MiB line: {peak} bytes held")
        # Four times the log, at most about four times the time (a square
        # would be sixteen), with room for a busy machine.
        self.assertLess(seconds[64], 8 * seconds[16] + 2, seconds)


class FrameNeedles(unittest.TestCase):
    """A report's line is read for frames only when it holds a needle of
    trace.FRAME's alternatives."""

    def test_every_golden_line_with_a_frame_holds_a_needle(self):
        held = console.frame_needles()
        self.assertEqual(held, ["+0x", "] (", " from "])
        with_frames = 0
        for text in map(read, PIECES):
            for line in text.splitlines():
                line = logtext.plain(line)
                if trace.line_frames(line):
                    with_frames += 1
                    self.assertTrue(any(s in line for s in held), line)
        self.assertGreater(with_frames, 3000)

    def test_alternatives_and_escapes(self):
        self.assertEqual(needles.alternatives(r"a|(b|c)|[|]x|\|y"), ["a", "(b|c)", "[|]x", r"\|y"])
        self.assertEqual(needles.any_needles(r"abcd|x(yz|w)uvw"), ["abcd", "uvw"])
        self.assertIsNone(needles.any_needles(r"abcd|[a-z]+"))
        # \s, \d and the like are no character of a run.
        self.assertEqual(needles.needle(r"abc\sdefg"), "defg")
        self.assertEqual(needles.required_runs(r"ab\dcd\1e"), ["ab", "cd", "e"])


if __name__ == "__main__":
    unittest.main()
