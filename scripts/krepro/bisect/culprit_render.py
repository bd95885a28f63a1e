"""gate.md's culprit section, from the bisections culprit.py ran (each
row's bisect.json record)."""
import os

from ..protocol import CLEAN, REPRODUCED
from ..untrusted import clean, md_cell

HEAD = ["| reproducer | change | patch | commit | confidence | checks | guests | builds | seconds | bisection |",
        "|---|---|---|---|---|---|---|---|---|---|"]


def named_commit(r):
    """The commit the row's answer names: the culprit, or for a fix the
    commit after the last one that still FAILs. None when none is named."""
    c = (r.get("data") or {}).get("culprit")
    if not c:
        return None
    return c["fix"] if r["change"] == "fix" and c.get("fix") else c


def checks(r):
    c = r["data"]["culprit"]
    re_fail = c["refail"]
    before = "the commit before it" if r["change"] == "fix" else "it"
    return (f"{before} FAILs again {re_fail['fails']}/{re_fail['runs']} ({re_fail['verdict']}); "
            f"revert: {c['revert']['verdict']}: {c['revert']['why']}")


def row_line(r, patch_of):
    got = named_commit(r)
    link = f"{r['dir']}/summary.md" if r.get("dir") else "-"
    if got is None:
        cells = [r["repro"], r["change"], "not named", "-", fmt_conf(r), "-",
                 str(r.get("guests", 0)), str(r.get("builds", 0)), str(r.get("seconds", "-")), link]
    else:
        patch = patch_of.get(got["commit"])
        name = os.path.basename(patch) if patch else "(not a series patch)"
        doubt = "" if r["code"] == CLEAN else " (with doubts: see below)"
        cells = [r["repro"], r["change"], f"{name} (\"{got['subject']}\"){doubt}", got["commit"][:12],
                 fmt_conf(r), checks(r), str(r["guests"]), str(r["builds"]), str(r["seconds"]), link]
    return "| " + " | ".join(md_cell(x) for x in cells) + " |"


def fmt_conf(r):
    conf = (r.get("data") or {}).get("confidence")
    return "-" if conf is None else f"{conf:.3f}"


def notes(r):
    """Why a row's culprit is not named, or the doubts of one named."""
    data = r.get("data") or {}
    if named_commit(r) is None:
        why = r.get("stopped") or data.get("stopped") or "the bisection did not finish"
        return [f"- {r['repro']}: no patch named: {why}"]
    out = []
    if r["code"] == REPRODUCED:
        out += [f"- {r['repro']}: {f}" for f in data["culprit"].get("flags", [])]
    out += [f"- {r['repro']}: note: {n}" for n in data.get("notes", [])]
    return out


def section(rows, line, results):
    """The culprit section's lines: one table row a flipped row, then the notes."""
    patch_of = {c: p for c, p in line}
    md = ["", f"## Culprits: the flipped rows bisected inside the series ({len(line)} patches)", "",
          "Each row is its own bisection (krepro bisect's search: the FAIL rate measured on the "
          "FAIL side, a confidence over the clean verdicts at 95% for the rate, the named commit "
          "checked to FAIL again and by its revert); builds are shared between rows, verdicts are not. "
          "A fix names the first patch that PASSes.", ""] + HEAD
    md += [row_line(r, patch_of) for r in rows]
    md.append("")
    for r in rows:
        md += notes(r)
    return [clean(x) for x in md]


def not_searched(why, flipped):
    """The section when the series cannot be bisected at all."""
    return [clean(x) for x in ["", "## Culprits", "",
                               f"No patch named for {', '.join(r['repro'] for r in flipped)}: "
                               f"the series could not be bisected: {why}"]]
