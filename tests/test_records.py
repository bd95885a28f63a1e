#!/usr/bin/env python3
"""Every proof-run record is well formed, and every reproducer README's
records table is the one its records make (bench/proof-record.py --readme
rewrites it): a README figure cannot drift from its record.

A transcribed record (kind "transcribed": figures of a run whose raw output
was not kept) has date, what, machine, figures, raw and source; its source
names the commit that first stated the figures, and each figure is in that
commit's file (when the clone has the history). The README section that
links the record states each of its figures, and every bold figure of that
section is one of its records' figures."""
import glob
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import records  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tally import Tally  # noqa: E402

RUN_KEYS = {"kernel", "build", "outcome", "seconds", "signature", "evidence", "report_title",
            "infra", "accel", "date"}
OUTCOMES = {"PASS", "FAIL", "OTHER", "HANG", "BROKEN", "SKIP"}
TRANSCRIBED_KEYS = ("date", "what", "machine", "figures", "raw", "source")
FIGURE_ONLY = "figure only: the run's raw output was not kept"
SOURCE = re.compile(r"transcribed from (\S+) at commit ([0-9a-f]{7,40})\b")
BOLD = re.compile(r"\*\*(.+?)\*\*", re.S)
# A measured figure in bold: a tally (5/5), a range (8-28) or a number with a
# unit or a count noun; not an exit status or a line number.
MEASURED = re.compile(r"\d+/\d+|\d+-\d+|\d[\d,.]*\s*(?:ms|s|min|%|runs?|rows?|timeouts?|of)\b")


def flat(text):
    return re.sub(r"\s+", " ", text)


def sections(text):
    """The README's sections: (heading, body) from each heading to the next."""
    out, head, body, fence = [], "", [], False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        if not fence and re.match(r"#{1,6} ", line):
            out.append((head, "\n".join(body)))
            head, body = line, []
        else:
            body.append(line)
    out.append((head, "\n".join(body)))
    return out


def at_commit(commit, path):
    """The file as the commit had it, or None when the clone lacks the history."""
    try:
        r = subprocess.run(["git", "-C", TOP, "show", f"{commit}:{path}"],
                           capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return r.stdout if r.returncode == 0 else None


def check_transcribed(check, r, name, rec, text):
    where = f"{r}/{name}"
    missing = [k for k in TRANSCRIBED_KEYS if not rec.get(k)]
    check(not missing, f"{where}: a transcribed record wants {', '.join(TRANSCRIBED_KEYS)} "
                       f"(missing: {', '.join(missing)})")
    figures = rec.get("figures")
    check(isinstance(figures, dict) and figures and all(isinstance(v, str) for v in figures.values()),
          f"{where}: figures must be a non-empty object of strings")
    if not isinstance(figures, dict):
        return
    check(rec.get("raw") == FIGURE_ONLY, f"{where}: raw must say {FIGURE_ONLY!r}")
    check("runs" not in rec, f"{where}: a transcribed record has figures, not runs")
    m = SOURCE.match(rec.get("source") or "")
    check(m, f"{where}: source must say 'transcribed from <file> at commit <hash>'")
    if m:
        old = at_commit(m.group(2), m.group(1))
        if old is None:
            print(f"# {where}: commit {m.group(2)} or its {m.group(1)} is not in this clone; "
                  "the figures were not checked against it")
        else:
            absent = [v for v in figures.values() if flat(v) not in flat(old)]
            check(not absent, f"{where}: not stated in {m.group(1)} at {m.group(2)}: {'; '.join(absent)}")
    link = f"records/{name}"
    cited = [(h, b) for h, b in sections(text) if link in b]
    check(cited, f"repro/{r}/README.md: no section links {link}")
    for head, body in cited:
        absent = [v for v in figures.values() if flat(v) not in flat(body)]
        check(not absent, f"repro/{r}/README.md, {head.strip('# ')!r}: {name}'s figures not stated: "
                          f"{'; '.join(absent)}")


def check_bold_figures(check, r, recs, text):
    """In a section that links transcribed records, a bold figure is one of theirs."""
    transcribed = {n: rec for n, rec in recs if rec.get("kind") == records.TRANSCRIBED}
    for head, body in sections(text):
        mine = [rec for n, rec in transcribed.items() if f"records/{n}" in body]
        if not mine:
            continue
        known = [flat(v) for rec in mine for v in (rec.get("figures") or {}).values()]
        for b in BOLD.findall(body):
            if MEASURED.search(b):
                check(any(flat(b) in k or k in flat(b) for k in known),
                      f"repro/{r}/README.md, {head.strip('# ')!r}: the bold figure {flat(b)!r} "
                      "is in none of the section's records")


def main():
    check = Tally("not ok - ")

    repros = sorted(os.path.basename(os.path.dirname(os.path.normpath(d)))
                    for d in glob.glob(os.path.join(TOP, "repro", "*", "records", "")))
    for r in repros:
        with open(os.path.join(TOP, "repro", r, "README.md")) as f:
            text = f.read()
        recs = records.load(r)
        for name, rec in recs:
            check(rec.get("repro") == r, f"{r}/{name}: names reproducer {rec.get('repro')!r}")
            check(rec.get("name") + ".json" == name, f"{r}/{name}: its name field is {rec.get('name')!r}")
            if rec.get("kind") == records.TRANSCRIBED:
                check_transcribed(check, r, name, rec, text)
                continue
            check(rec.get("kind") is None, f"{r}/{name}: unknown kind {rec.get('kind')!r}")
            check(bool(rec.get("runs")), f"{r}/{name}: no runs")
            for i, run in enumerate(rec.get("runs") or []):
                check(RUN_KEYS <= set(run), f"{r}/{name}: run {i} lacks {sorted(RUN_KEYS - set(run))}")
                check(run.get("outcome") in OUTCOMES, f"{r}/{name}: run {i} outcome {run.get('outcome')!r}")
        check_bold_figures(check, r, recs, text)
        got = records.readme_block(text)
        check(got is not None, f"repro/{r}/README.md has records but no generated table")
        check(got is None or got == records.block(r),
              f"repro/{r}/README.md: the records table differs from what the records make "
              "(bench/proof-record.py --readme rewrites it)")
    print(f"{len(repros)} reproducers with records checked")
    return check.end()


if __name__ == "__main__":
    sys.exit(main())
