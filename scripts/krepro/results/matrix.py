"""One matrix of several runs: reproducer x branch x flavour, from each run
directory's run.json (one run per branch and arch, as make repro-all makes
them). Reads files only; every run.json is checked as render() checks it."""
import os
import sys

from ..protocol import CLEAN, REPRODUCED, UNDECIDED
from .runjson import guarded, load, write
from ..untrusted import md_cell


def rows_of(dirs):
    """{(repro, arch): {(branch, kernel): row}}, the columns in first-seen
    order, and the worst status of the runs (render's rule per run)."""
    table, columns = {}, []
    for d in dirs:
        rec = load(d)
        branch = str(rec.get("branch") or "?")
        for row in rec["rows"]:
            col = (branch, row["kernel"])
            if col not in columns:
                columns.append(col)
            table.setdefault((row["repro"], str(rec["arch"])), {})[col] = row
    return table, columns


def text(table, columns):
    head = ["reproducer", "arch"] + [f"{b} {k}" for b, k in columns]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for (repro, arch), cells in sorted(table.items()):
        out = []
        for col in columns:
            row = cells.get(col)
            if row is None:
                out.append("-")
                continue
            mark = "" if row.get("as_expected") in (None, True) else " (not as expected)"
            out.append(md_cell(row["cell"] + mark))
        lines.append("| " + " | ".join([md_cell(repro), arch] + out) + " |")
    return "\n".join(lines) + "\n"


def status(table):
    """0 every row as expected, 1 one not, 125 a row without an expectation
    undecided (the run's own statuses are their runs')."""
    rows = [r for cells in table.values() for r in cells.values()]
    if any(r.get("as_expected") is False for r in rows):
        return REPRODUCED
    if any(r.get("as_expected") is None and r["decision"] not in ("PASS", "FAIL") for r in rows):
        return UNDECIDED
    return CLEAN


def main(dirs, out=None):
    """Print the matrix of run directories `dirs`; with out, write it there
    as Markdown too."""
    def work():
        table, columns = rows_of(dirs)
        t = text(table, columns)
        print(t, end="")
        if out:
            write(out, "# krepro matrix\n\nRuns: " + ", ".join(os.path.basename(d) for d in dirs)
                  + "\n\n" + t)
        return status(table)
    return guarded("krepro: matrix", dirs[0] if dirs else ".", work)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
