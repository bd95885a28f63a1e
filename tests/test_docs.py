#!/usr/bin/env python3
"""The docs speak with one set of figures and for themselves.

(a) Every row of a table in docs/performance.md names its record,
    bench/records/<name>.json, in the table's last column ("record"); the
    record exists, has the fields every record has, and each of its
    "figures" values appears in the row's text. Every record is named by a
    row, or is history: its "superseded_by" names the record that measured
    the same thing later (a bench record, or a reproducer's record under
    repro/<id>/records/), and following it ends at a record a row names or
    a reproducer's record. No row names a superseded record. A record of kind "matrix" (bench/matrix-record.py) has its runs
    instead of figures, and its rows are a generated table: the tables
    between bench/perf-tables.py's markers must be what the records make.
(b) No page (README.md, docs/*.md, repro/*/README.md) cites DESIGN.md or
    shared/, or tells how a fact was found ("search tool", "session",
    "helper"). Whole words, case-insensitive: a kernel file such as
    lib/string_helpers.c is not the word "helper".
(c) Every figure of README.md (a number followed by s, min or minutes)
    appears in docs/performance.md.
(e) README.md's table of reproducers states each one's recorded FAIL rate
    as its repro/<id>/fail-rate.json has it (fails/runs, the arch its row
    names).
(d) Every relative link of README.md, docs/*.md and repro/*/README.md
    points at a file or directory that exists, and a #fragment into a
    markdown page at one of its headings (GitHub's anchors).

Standard library only; prints each failure, then "N passed, N failed", and
exits 1 when anything failed.
"""
import glob
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tally import Tally  # noqa: E402

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PERF = os.path.join(TOP, "docs", "performance.md")
RECORDS = os.path.join(TOP, "bench", "records")
RECORD_FIELDS = ("date", "what", "machine", "commit", "figures", "raw")
FORBIDDEN = [
    (re.compile(r"DESIGN\.md", re.I), "DESIGN.md"),
    (re.compile(r"shared/", re.I), "shared/"),
    (re.compile(r"search\s+tool", re.I), "search tool"),
    (re.compile(r"\bsessions?\b", re.I), "session"),
    (re.compile(r"\bhelpers?\b", re.I), "helper"),
]
FIGURE = re.compile(r"(?<![\w.,/-])(\d[\d,]*(?:\.\d+)?)[ \u00a0]?(s|min|minutes)\b")
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
RECORD_REF = re.compile(r"bench/records/([\w.-]+\.json)")

check = Tally("FAIL: ")


def rel(path):
    return os.path.relpath(path, TOP)


def pages():
    return ([os.path.join(TOP, "README.md")] + sorted(glob.glob(os.path.join(TOP, "docs", "*.md")))
            + sorted(glob.glob(os.path.join(TOP, "repro", "*", "README.md"))))


def read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def tables(text):
    """Each markdown table as (line number of its header, header cells, rows),
    a row being (line number, line). Fenced code blocks are skipped."""
    out, cur, fence = [], None, False
    for n, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
        if not fence and line.startswith("|"):
            if cur is None:
                cur = [n, [c.strip() for c in line.strip().strip("|").split("|")], []]
            elif not re.fullmatch(r"\|[\s:|-]+\|?", line.strip()):
                cur[2].append((n, line))
            continue
        if cur is not None:
            out.append(tuple(cur))
            cur = None
    if cur is not None:
        out.append(tuple(cur))
    return out


def check_performance_records():
    text = read(PERF)
    named = set()
    for n, header, rows in tables(text):
        check(header and header[-1].lower() == "record",
              f"docs/performance.md:{n}: a table's last column must be 'record', not {header[-1]!r}")
        for ln, row in rows:
            refs = RECORD_REF.findall(row)
            where = f"docs/performance.md:{ln}"
            if not refs:
                check(False, f"{where}: the row names no bench/records/<name>.json")
                continue
            for ref in refs:
                named.add(ref)
                path = os.path.join(RECORDS, ref)
                if not os.path.isfile(path):
                    check(False, f"{where}: {rel(path)} does not exist")
                    continue
                try:
                    rec = json.loads(read(path))
                except ValueError as e:
                    check(False, f"{rel(path)}: not JSON: {e}")
                    continue
                if rec.get("superseded_by"):
                    check(False, f"{where}: {ref} is superseded by {rec['superseded_by']}: "
                                 "name today's record")
                    continue
                if rec.get("kind") == "matrix":
                    missing = [k for k in ("date", "what", "machine", "runs", "raw") if not rec.get(k)]
                    check(not missing, f"{rel(path)}: a matrix record wants date, what, machine, runs "
                                       f"and raw (missing: {', '.join(missing)})")
                    continue
                missing = [k for k in RECORD_FIELDS if k not in rec]
                figures = rec.get("figures")
                if missing or not isinstance(figures, dict) or not figures or not rec.get("raw"):
                    check(False, f"{rel(path)}: wants the fields {', '.join(RECORD_FIELDS)}, "
                                 f"non-empty figures and raw (missing: {', '.join(missing) or 'none'})")
                    continue
                absent = [f"{k}={v}" for k, v in figures.items() if str(v) not in row]
                check(not absent, f"{where}: {ref}'s figures not in the row: {'; '.join(absent)}")
    for path in sorted(glob.glob(os.path.join(RECORDS, "*.json"))):
        if os.path.basename(path) not in named:
            why = history_end(path, named)
            check(why is None, f"{rel(path)}: no row of docs/performance.md names it, "
                               f"and it is not history: {why}")


def history_end(path, named):
    """None when the record at path is superseded, through "superseded_by"
    links, by a record a row names or by a reproducer's record; else why not."""
    seen = set()
    while True:
        try:
            nxt = json.loads(read(path)).get("superseded_by")
        except (OSError, ValueError) as e:
            return f"{rel(path)}: {e}"
        if not isinstance(nxt, str) or not nxt:
            return f"{rel(path)} has no superseded_by"
        target = os.path.normpath(os.path.join(TOP, nxt))
        inside = rel(target)
        if nxt.startswith("/") or inside.startswith("..") or not os.path.isfile(target) or target in seen:
            return f"{rel(path)}: superseded_by {nxt!r} is no record of the repository (or loops)"
        seen.add(target)
        if re.fullmatch(r"repro/[\w-]+/records/[\w.-]+\.json", inside):
            return None
        if os.path.dirname(target) != RECORDS:
            return f"{rel(path)}: superseded_by {nxt!r} is neither a bench nor a reproducer's record"
        if os.path.basename(target) in named:
            return None
        path = target


def check_forbidden_words():
    for path in pages():
        hits = []
        for n, line in enumerate(read(path).splitlines(), 1):
            for pat, word in FORBIDDEN:
                if pat.search(line):
                    hits.append(f"{rel(path)}:{n}: '{word}'")
        check(not hits, "; ".join(hits) or rel(path))


def check_readme_figures():
    perf = re.sub(r"\s+", " ", read(PERF))
    for m in FIGURE.finditer(read(os.path.join(TOP, "README.md"))):
        fig = f"{m.group(1)} {m.group(2)}"
        found = re.search(r"(?<![\w.,])" + re.escape(fig) + r"\b", perf)
        check(found, f"README.md: the figure '{fig}' is not in docs/performance.md")


def anchors(path):
    """The anchors GitHub gives a markdown page's headings."""
    out, fence = set(), False
    for line in read(path).splitlines():
        if line.lstrip().startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if m:
            slug = re.sub(r"[^\w\- ]", "", m.group(1).lower()).replace(" ", "-")
            n, base = 1, slug
            while slug in out:
                slug, n = f"{base}-{n}", n + 1
            out.add(slug)
    return out


def check_links():
    for path in pages():
        text = read(path)
        for m in LINK.finditer(text):
            target = m.group(1)
            if re.match(r"[a-z][a-z0-9+.-]*:", target):
                continue
            file_part, _, frag = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file_part)) if file_part else path
            line = text.count("\n", 0, m.start()) + 1
            ok = os.path.exists(dest)
            if ok and frag and dest.endswith(".md"):
                ok = frag in anchors(dest)
            check(ok, f"{rel(path)}:{line}: link {target} points at nothing")


# A reproducer row of the README's table: its recorded FAIL rates on the
# branches' unpatched kernels, one column a branch (6.1, 6.12).
RATE_ROW = re.compile(r"^\| \[([\w-]+)\]\(repro/[\w-]+/README\.md\)( \(ARM\))? \|.*"
                      r"\| (\d+/\d+|-) \| (\d+/\d+|-) \|$", re.M)


def check_readme_rates():
    rows = RATE_ROW.findall(read(os.path.join(TOP, "README.md")))
    check(rows, "README.md: no reproducer row with a recorded FAIL rate")
    for repro, arm, *cells in rows:
        for branch, said in zip(("6.1", "6.12"), cells):
            if said == "-":
                continue
            try:
                with open(os.path.join(TOP, "repro", repro, "fail-rate.json")) as f:
                    rec = json.load(f)[branch]["arm" if arm else "x86_64"]
            except (OSError, ValueError, KeyError) as e:
                check(False, f"README.md: {repro}: no recorded {branch} rate to state ({e})")
                continue
            check(said == f"{rec['fails']}/{rec['runs']}",
                  f"README.md: {repro}: says {said} on {branch}, its fail-rate.json "
                  f"{rec['fails']}/{rec['runs']}")


def check_generated_tables():
    sys.path.insert(0, os.path.join(TOP, "bench"))
    import importlib
    tables_mod = importlib.import_module("perf-tables")
    text = read(PERF)
    check(tables_mod.rewrite(text) == text,
          "docs/performance.md: a generated table is not what bench/records/ makes "
          "(run bench/perf-tables.py)")
    for name in tables_mod.TABLES:
        check(tables_mod.BEGIN.format(name) in text,
              f"docs/performance.md: the generated table {name!r} has no place (its markers)")


def main():
    check_performance_records()
    check_generated_tables()
    check_forbidden_words()
    check_readme_figures()
    check_readme_rates()
    check_links()
    return check.end()


if __name__ == "__main__":
    sys.exit(main())
