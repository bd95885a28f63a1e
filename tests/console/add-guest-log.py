#!/usr/bin/env python3
"""Add a krepro guest's console log to the golden set, trimmed to what
matters, with its expected reports.

usage: tests/console/add-guest-log.py CONSOLE_LOG NAME SOURCE

Writes tests/console/NAME.log: a "# source: krepro guest, SOURCE" line, then
the log's "Linux version" line, every krepro line, and each kernel report
from five lines before its first header to two lines after it ends (its end
marker, or TRACE_LINES lines). Writes NAME.expected from what the classifier
finds in the trimmed log (test_classify.py's format) and fails when that
differs from what it finds in the whole log: trimming must not change a
report's title or culprit. Review NAME.expected before committing it.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
from krepro.reports import console  # noqa: E402
from krepro.reports.console_lines import console_lines  # noqa: E402

BEFORE, AFTER = 5, 2


def expected(text):
    """test_classify.py's lines: kind, title, and on a crash's first header
    its culprit title."""
    culprits = {c["line"]: c["culprit"] for c in console.crashes(text)}
    return ["\t".join([r["kind"], r["title"]] + ([culprits[r["line"]]] if r["line"] in culprits else []))
            for r in console.classify(text)]


def keep_lines(raw):
    """Indexes of raw lines to keep."""
    lines = [l for _, l in console_lines("\n".join(raw))]
    keep = {i for i, l in enumerate(lines) if l.startswith(("krepro", "Linux version"))}
    for c in console.crashes("\n".join(raw)):
        start = c["line"] - 1
        end = start + 1
        while end < len(lines) and end - start < console.TRACE_LINES and \
                not console.REPORT_END.match(lines[end]):
            end += 1
        keep.update(range(max(0, start - BEFORE), min(len(lines), end + 1 + AFTER)))
    return sorted(keep)


def main(argv):
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    path, name, source = argv
    with open(path, errors="replace") as f:
        raw = f.read().splitlines()
    trimmed = "\n".join([f"# source: krepro guest, {source}"] + [raw[i] for i in keep_lines(raw)]) + "\n"
    want = expected("\n".join(raw))
    got = expected(trimmed)
    if got != want:
        print(f"{name}: trimming changes the reports:\n  whole:   {want}\n  trimmed: {got}", file=sys.stderr)
        return 1
    with open(os.path.join(HERE, name + ".log"), "w") as f:
        f.write(trimmed)
    with open(os.path.join(HERE, name + ".expected"), "w") as f:
        f.write("".join(l + "\n" for l in got))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
