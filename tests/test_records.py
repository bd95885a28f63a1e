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
import importlib.util
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
sys.path.insert(0, os.path.join(TOP, "bench"))
import proof_records as records  # noqa: E402

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


def git(*args):
    """git's output, or None when git fails or is missing."""
    try:
        r = subprocess.run(["git", "-C", TOP, *args], capture_output=True, text=True, timeout=30)
    except OSError:
        return None
    return r.stdout if r.returncode == 0 else None


def full_history():
    """True in a clone with all its history: there a source commit must exist."""
    return (git("rev-parse", "--is-shallow-repository") or "").strip() == "false"


def check_transcribed(check, r, name, rec):
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
        old = git("show", f"{m.group(2)}:{m.group(1)}")
        if old is None and not full_history():
            print(f"# {where}: no full git history here; its figures were not checked against "
                  f"{m.group(1)} at {m.group(2)}")
        else:
            check(old is not None, f"{where}: {m.group(1)} at commit {m.group(2)} does not exist")
            absent = [v for v in figures.values() if flat(v) not in flat(old or "")]
            check(not absent, f"{where}: not stated in {m.group(1)} at {m.group(2)}: {'; '.join(absent)}")

def check_sections(check, r, recs, text):
    """Each transcribed record is linked by a section of the README that
    states all its figures; a bold figure of such a section is one of its
    records' figures."""
    transcribed = {n: rec for n, rec in recs if rec.get("kind") == records.TRANSCRIBED}
    parts = sections(text)
    for name, rec in transcribed.items():
        cited = [(h, b) for h, b in parts if f"](records/{name})" in b]
        check(cited, f"repro/{r}/README.md: no section links records/{name}")
        for head, body in cited:
            absent = [v for v in (rec.get("figures") or {}).values() if flat(v) not in flat(body)]
            check(not absent, f"repro/{r}/README.md, {head.strip('# ')!r}: {name}'s figures not "
                              f"stated: {'; '.join(absent)}")
    for head, body in parts:
        known = [flat(v) for n, rec in transcribed.items() if f"](records/{n})" in body
                 for v in (rec.get("figures") or {}).values()]
        if not known:
            continue
        for b in BOLD.findall(body):
            if MEASURED.search(b):
                check(any(flat(b) in k or k in flat(b) for k in known),
                      f"repro/{r}/README.md, {head.strip('# ')!r}: the bold figure {flat(b)!r} "
                      "is in none of the section's records")


def self_test(check):
    """The section checks catch what they are for: a README whose figure
    differs from its record's gives two failures (the record's figure not
    stated, the bold one in no record); a section that does not link the
    record, one; one that agrees, none."""
    recs = [("x.json", {"kind": records.TRANSCRIBED, "figures": {"runs": "PASS 5/5"}})]
    for text, want in (("## A\n\n**PASS 5/5** ([record](records/x.json)).\n", 0),
                       ("## A\n\n**PASS 4/5** ([record](records/x.json)).\n", 2),
                       ("## A\n\n**PASS 5/5**.\n\n## B\n\n[record](records/x.json)\n", 1)):
        t = Tally("# self-test, expected: ")
        check_sections(t, "self-test", recs, text)
        check(t.failed == want, f"self-test: {t.failed} failures, not {want}, for {text!r}")


def proof_record_self_test(check):
    """bench/proof-record.py keeps a run's evidence whole (bounded for an
    untrusted run.json), the declared signature that matched, and the cases
    a FAIL outranked that were BROKEN; the table names that signature."""
    spec = importlib.util.spec_from_file_location("proof_record", os.path.join(TOP, "bench", "proof-record.py"))
    pr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pr)
    long_line = "punch: FAIL: " + "x" * 1000
    run = {"kernel": "unpatched", "outcome": "FAIL", "evidence": long_line, "signature": "report: list_del corruption",
           "report_title": "list_del corruption", "matched_signature": "#3 LIST /^list_del/ in blk_mq_requeue_work",
           "broken_cases": ["write: BROKEN: x.c:1: no", 7]}
    got = pr.compact(run, {}, "tcg", "2026-12-07")
    check(got["evidence"] == long_line, "proof-record cut the evidence line")
    check(got["matched_signature"] == run["matched_signature"], "proof-record dropped the matched signature")
    check(got["broken_cases"] == ["write: BROKEN: x.c:1: no"], f"proof-record's broken cases: {got['broken_cases']}")
    huge = pr.compact(dict(run, evidence="y" * (1 << 20), matched_signature=["not", "text"]), {}, "tcg", "d")
    check(len(huge["evidence"]) == pr.EVIDENCE_CHARS, "an untrusted evidence line is not bounded")
    check(huge["matched_signature"] is None, "a matched signature that is not text was kept")
    check(records.evidence([dict(got, infra=False)]) == "1× list_del corruption (signature #3 LIST)",
          f"the table's cell: {records.evidence([dict(got, infra=False)])!r}")
    check(got["window_hits"] is None and pr.compact(dict(run, window_hits=7), {}, "t", "d")["window_hits"] == 7
          and pr.compact(dict(run, window_hits="7"), {}, "t", "d")["window_hits"] is None,
          "a run's window hits are kept only as a number")
    saved = os.environ.get("KREPRO_CACHE")
    os.environ["KREPRO_CACHE"] = "/c/krepro"
    argv = ["run", "--results", "/x/r", "--kernel", "/c/krepro/distro/a.deb", "--kernel", "/c/krepro",
            "--against", "/w/base"]
    got_argv = records.portable(argv)
    os.environ.pop("KREPRO_CACHE")
    if saved is not None:
        os.environ["KREPRO_CACHE"] = saved
    check(got_argv == ["run", "--results", "RESULTS", "--kernel", "$KREPRO_CACHE/distro/a.deb", "--kernel", "/c/krepro",
                       "--against", "WORKTREE"],
          f"a record's command keeps a path: {got_argv}")


def main():
    check = Tally("not ok - ")
    self_test(check)
    proof_record_self_test(check)

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
                check_transcribed(check, r, name, rec)
                continue
            check(rec.get("kind") is None, f"{r}/{name}: unknown kind {rec.get('kind')!r}")
            check(bool(rec.get("runs")), f"{r}/{name}: no runs")
            for i, run in enumerate(rec.get("runs") or []):
                check(RUN_KEYS <= set(run), f"{r}/{name}: run {i} lacks {sorted(RUN_KEYS - set(run))}")
                check(run.get("outcome") in OUTCOMES, f"{r}/{name}: run {i} outcome {run.get('outcome')!r}")
                check(isinstance(run.get("matched_signature"), (str, type(None))),
                      f"{r}/{name}: run {i} matched_signature is not text")
        check_sections(check, r, recs, text)
        got = records.readme_block(text)
        check(got is not None, f"repro/{r}/README.md has records but no generated table")
        check(got is None or got == records.block(r),
              f"repro/{r}/README.md: the records table differs from what the records make "
              "(bench/proof-record.py --readme rewrites it)")
    print(f"{len(repros)} reproducers with records checked")
    return check.end()


if __name__ == "__main__":
    sys.exit(main())
