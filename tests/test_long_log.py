#!/usr/bin/env python3
"""krepro classify on one long log made of many: every golden console log
(tests/console/), every hand-written pasted log (tests/pasted/) and every
upstream report (tests/upstream/) one after another, four times, each piece
closed by an end-of-trace line. The long log gives, report for report, what
each piece gives alone (its line numbers moved by the lines before it), and
what reading and classifying every line of it gives: passing over the lines
no report can be in changes nothing. Times nothing; boots nothing.
"""
import glob
import io
import os
import sys
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
