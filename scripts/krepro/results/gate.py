"""The gate's comparison: BASE's and BASE+SERIES's rows of one run, from its
run.json alone, into gate.md and the exit status."""
import os

from ..protocol import CLEAN, INTERRUPTED, REPRODUCED, UNDECIDED
from .runjson import BadRun, guarded, load, write
from ..untrusted import clean, md_cell


def labels(rec):
    """The kernels a run names, in its order."""
    seen = {}
    for k in rec.get("kernels") or []:
        if k.get("label"):
            seen[k["label"]] = True
    for r in rec["rows"] + rec["runs"]:
        seen[r["kernel"]] = True
    return list(seen)


def gate(results, base, series, prog="krepro: gate", culprits=None):
    """Compare BASE's and BASE+SERIES's row decisions. A FAIL or a kernel
    report that is not the bug (OTHER) on the series where BASE was clean is a
    regression. Exit 1 on a regression, 125 when a row is undecided, else 0;
    130 when the culprit search (culprits: culprit.find's keyword arguments
    but the rows) was interrupted. A bad run directory, or BASE or SERIES not
    a kernel of the run: one line on stderr, nothing written, USAGE."""
    return guarded(prog, results, lambda: gate_record(results, load(results, "gate"), base, series, culprits))


def bisect_flipped(results, md, flipped, culprits):
    """The culprit section appended to gate.md; True when interrupted."""
    from ..bisect import culprit
    print(f"krepro: gate: naming the patch of {len(flipped)} flipped row(s)", flush=True)
    section, interrupted = culprit.find(results, flipped, **culprits)
    md += section
    if interrupted:
        md.append("- INTERRUPTED: the culprit search did not finish")
    write(os.path.join(results, "gate.md"), "\n".join(md) + "\n")
    print("\n".join(section))
    print(f"written: {clean(results)}/gate.md")
    return interrupted


def gate_record(results, rec, base, series, culprits=None):
    have = labels(rec)
    missing = [k for k in (base, series) if k not in have]
    if missing:
        raise BadRun(f"{results}: no kernel {' or '.join(repr(k) for k in missing)} in this run "
                     f"(its kernels: {', '.join(have) if have else 'none recorded'})")
    if base == series:
        raise BadRun(f"BASE and SERIES are both {base!r}: give two kernels of the run")
    by, groups, lines = compare(rec, base, series)
    partial = rec.get("interrupted") or not rec.get("finished")
    md = gate_md(base, series, groups, lines, partial)
    write(os.path.join(results, "gate.md"), "\n".join(md) + "\n")
    print("\n".join(md))
    print(f"written: {clean(results)}/gate.md")
    flipped = [{"repro": r, "change": k, "series_decision": by[r][series]["decision"]}
               for k in ("regression", "fix") for r in groups[k]]
    if culprits and flipped and not partial and bisect_flipped(results, md, flipped, culprits):
        return INTERRUPTED
    if groups["regression"]:
        return REPRODUCED
    return UNDECIDED if groups["undecided"] or partial else CLEAN


def compare(rec, base, series):
    """Each reproducer's change from BASE to SERIES: (its rows by
    reproducer and kernel, the reproducers by kind of change, gate.md's
    table rows)."""
    by = {}
    for r in rec["rows"]:
        by.setdefault(r["repro"], {})[r["kernel"]] = r
    groups = {"regression": [], "fix": [], "unchanged": [], "undecided": []}
    lines = []
    for repro in sorted(by):
        b, s = by[repro].get(base), by[repro].get(series)
        vb, vs = (x["decision"] if x else "MISSING" for x in (b, s))
        if vb == "PASS" and vs in ("FAIL", "OTHER"):
            kind = "regression"
        elif vb == "FAIL" and vs == "PASS":
            kind = "fix"
        elif vb == vs and vb in ("PASS", "FAIL", "SKIP"):
            kind = "unchanged"
        else:
            kind = "undecided"
        groups[kind].append(repro)
        ev = ""
        if kind != "unchanged" and s:
            run = next((x for x in rec["runs"] if x["repro"] == repro and x["kernel"] == series
                        and x["outcome"] == vs), None)
            if run:
                ev = f"{md_cell(run['evidence'])} ({md_cell(run['log'])})"
        cells = [md_cell(x) for x in (repro, b["cell"] if b else vb, s["cell"] if s else vs)]
        lines.append(f"| {' | '.join(cells)} | {kind} | {ev} |")
    return by, groups, lines


def gate_md(base, series, groups, lines, partial):
    """gate.md's lines: the table, then each kind of change."""
    md = [clean(f"# krepro gate: {base} -> {series}"), "",
          f"| reproducer | {md_cell(base)} | {md_cell(series)} | change | evidence on {md_cell(series)} |",
          "|---|---|---|---|---|"] + lines + [""]
    for kind, title in (("regression", "REGRESSIONS (PASS->FAIL, or a new kernel report (OTHER): the series broke these)"),
                        ("fix", "FIXES (FAIL->PASS: the series cures these)"),
                        ("unchanged", "unchanged"),
                        ("undecided", "undecided (BROKEN, SKIP, HANG, OTHER on BASE, or missing on one side)")):
        md.append(clean(f"- {title}: {', '.join(groups[kind]) if groups[kind] else 'none'}"))
    if partial:
        md.append("- PARTIAL: the run did not finish")
    return md
