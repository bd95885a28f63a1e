"""Reports from run.json alone: summary.md, results.ktap, junit.xml and the
exit status.

render() never raises on a bad run directory or run.json: it says what is
wrong in one line on stderr and returns USAGE (runjson.guarded())."""
import os
import re
import statistics
import sys

from .. import stats, verdict
from ..reports.decode import report_lines
from ..reports.run_evidence import evidence_crash
from .ktap_junit import junit, ktap
from .runjson import guarded, load, write
from ..untrusted import LOG_MAX, clean, inside, md_cell, read_text

EXPECTED = {"bug": "FAIL", "fixed": "PASS"}


def row_record(repro, kernel, role, row, meta, expect, rate_note="", **extra):
    """A decided row as run.json keeps it, its cell included. extra: what the
    runner knows of the row besides (unbounded: why a clean verdict cannot
    be bounded; evidence: what the kernel can show, detectors.Sight.record())."""
    counts = {o: row.count(o) for o in ("FAIL", "PASS", "OTHER", "HANG", "BROKEN", "SKIP") if row.count(o)}
    n = len(row.outcomes)
    rec = {"repro": repro, "kernel": kernel, "role": role, "decision": row.decision,
           "runs": n, "counts": counts, "fails": row.fails, "trials": row.trials,
           "why": row.why, "fix_commit": meta.fix_commit, "target_miss": row.target,
           "rate": None, "miss": None}
    if role == "bug":
        if row.rate is not None:
            f, t, src = row.rate[0] + row.fails, row.rate[1] + row.trials, row.rate[2]
            src = f"{src}; this row {row.fails}/{row.trials}"
        else:
            f, t, src = row.fails, row.trials, rate_note or "measured in this run"
        rec["rate"] = {"fails": f, "runs": t, "low": stats.rate_lower(f, t), "source": src}
    elif row.rate is not None:
        f, t, src = row.rate
        rec["rate"] = {"fails": f, "runs": t, "low": stats.rate_lower(f, t), "source": src}
        if row.fails == 0 and rec["rate"]["low"] > 0:
            rec["miss"] = stats.miss(rec["rate"]["low"], row.count("PASS"))
    rec.update(extra)
    want = EXPECTED.get(role) if expect else None
    rec["expected"] = want
    rec["as_expected"] = None if want is None else row.decision == want
    rec["cell"] = cell(rec)
    return rec


def cell(rec):
    d, n = rec["decision"], rec["runs"]
    c = rec["counts"]
    if d == "FAIL":
        s = f"FAIL {rec['fails']}/{rec['trials'] or n}"
        if rec["role"] == "bug" and rec["rate"]:
            s += f" ({stats.rate_bound(rec['rate']['low'])})"
        return s
    if d == "PASS":
        s = f"PASS {c.get('PASS', 0)}/{n}"
        if rec["role"] == "bug" and rec["rate"] and rec["rate"]["low"] > 0:
            m = stats.miss(rec["rate"]["low"], c.get("PASS", 0))
            return s + (f" (not shown where its {stats.rate_bound(rec['rate']['low'])} would have: "
                        f"{stats.miss_bound(m)})")
        # A blind path the bound does not already stand on.
        note = (rec.get("evidence") or {}).get("note")
        why = rec.get("unbounded") or "no FAIL rate"
        pre = f"{note}; " if note and note != why else ""
        if rec["miss"] is not None:
            return s + f" ({pre}{stats.miss_bound(rec['miss'])})"
        reach = stats.unbounded_reach(c.get("PASS", 0), rec.get("target_miss") or 0.01) \
            if rec["role"] == "probe" else ""
        return s + f" ({pre}{why}; miss not bounded{'; ' + reach if reach else ''})"
    if d == "OTHER":
        return f"OTHER {c.get('OTHER', 0)}/{n}"
    if d == "UNDECIDED" and not n:
        # Not booted: every evidence path is blind on the kernel.
        return f"undecided: not booted ({rec['evidence']['note']}; nothing else could show the bug)"
    if d == "UNDECIDED":
        return "undecided: " + ", ".join(f"{k} {v}" for k, v in c.items()) + f" in {n} runs"
    return f"{d} {c.get(d, 0)}/{n}"


def seconds_stats(runs):
    secs = [r["seconds"] for r in runs if isinstance(r.get("seconds"), (int, float))]
    if not secs:
        return "-"
    return f"{min(secs):.1f}/{statistics.median(secs):.1f}/{max(secs):.1f}"


def quoted(results, rel, what):
    """A file the record names, read only inside the run directory and only
    if regular, at most LOG_MAX of it; "" when it is missing (a run cut
    short). A path out of the directory is refused (untrusted.Refused)."""
    if not rel:
        return ""
    path = inside(results, rel, f"{os.path.join(results, 'run.json')}: {what}")
    try:
        return read_text(path, LOG_MAX, truncate=True)
    except FileNotFoundError:
        return ""
    except OSError as e:
        return f"(cannot read {clean(rel)}: {e.strerror or e})"


def fenced(lines):
    """A Markdown code block of lines from a log: each line cleaned, and a
    fence longer than any run of backticks in them, which none can close."""
    lines = [clean(l, tabs=True) for l in lines]
    longest = max((len(m) for l in lines for m in re.findall("`+", l)), default=0)
    fence = "`" * max(3, longest + 1)
    return [fence] + lines + [fence]


def excerpt(results, run, lines=40):
    """The kernel report behind a FAIL or OTHER (decoded to file:line where
    the runner could), or the reproducer's own lines."""
    rep = evidence_crash(run)
    if rep:
        decoded = quoted(results, run.get("report"), "a run's report")
        if decoded:
            return rep, decoded.splitlines()
        console = quoted(results, run["log"], "a run's log")
        if console and isinstance(rep.get("line"), int):
            return rep, report_lines(console, rep, lines)
    ktap = quoted(results, run.get("ktap"), "a run's KTAP").splitlines()
    picked = [l for l in ktap if l.startswith("# ") and "FAIL" in l][:12]
    return None, picked or [l for l in ktap if l.startswith(("# ", "not ok"))][:12]


def render(results, any_report=None, quiet=False, prog="krepro: report"):
    """summary.md, results.ktap and junit.xml from DIR/run.json, and the exit
    status (verdict.status()). A missing or bad run.json: one line on stderr, USAGE."""
    return guarded(prog, results, lambda: render_record(results, load(results), any_report, quiet))


def render_record(results, rec, any_report, quiet):
    if any_report is None:
        any_report = rec.get("any_report", False)
    by_row = {}
    for r in rec["runs"]:
        by_row.setdefault((r["repro"], r["kernel"]), []).append(r)
    partial = rec.get("interrupted") or not rec.get("finished")
    md = summary(results, rec, by_row, partial)
    code = verdict.status(rec, any_report)
    write(os.path.join(results, "summary.md"), "\n".join(md) + "\n")
    write(os.path.join(results, "results.ktap"), ktap(rec, by_row))
    write(os.path.join(results, "junit.xml"), junit(rec, by_row, results))
    if not quiet:
        print("\n".join(md))
        print(f"written: {clean(results)}/summary.md, results.ktap, junit.xml (from run.json)")
        if rec.get("expect"):
            print("matrix: " + ("every row as expected" if code == 0 else
                                "UNEXPECTED rows above" if not partial else
                                "PARTIAL run: not every row was decided"))
    if partial:
        # Said on every rendering, the runner's own after a Ctrl-C too.
        print(f"krepro: {clean(results)} holds a partial run", file=sys.stderr)
    return code


def summary(results, rec, by_row, partial):
    """summary.md's lines."""
    runs = rec["runs"]
    md = ["# krepro results", ""]
    if partial:
        cut = "".join(clean(f"; cut off: {c['repro']} on {c['kernel']}, run {c['run']}")
                      for c in rec.get("cut_off") or [])
        md += [f"**PARTIAL**: this run did not finish ({'interrupted' if rec.get('interrupted') else 'killed or still running'}); "
               f"{len(runs)} guest runs were recorded{cut}.", ""]
    md += [heading(rec), "",
           "| reproducer | kernel | verdict | expected | runs | seconds min/median/max | FAIL rate source | evidence | log |",
           "|---|---|---|---|---|---|---|---|---|"] + table(rec, by_row)
    secs = [r.get("seconds") or 0 for r in runs]
    if runs:
        md += ["", f"{len(runs)} guest runs, {sum(secs):.0f} s of guests"
               f" ({min(secs):.1f}-{max(secs):.1f} s each; "
               + ("QEMU start to exit" if (rec.get("via") or "qemu") == "qemu" else "LAVA job start to end")
               + ").", ""]
    prep = rec.get("prepare") or []
    if prep:
        md += ["Disks prepared on the patched kernel: " + "; ".join(
            clean(f"{p['repro']} {p['outcome']} in {p['seconds']:.1f} s ({p['log']})") for p in prep), ""]
    found = [line for r in rec["rows"] for line in findings(results, r, by_row.get((r["repro"], r["kernel"]), []))]
    if found:
        md += ["## Failures and other reports", ""] + found
    return md


def heading(rec):
    """What ran the guests, how rows were decided, when."""
    mode = rec["mode"]
    how = (f"fixed {mode['repeat']} runs a row" if mode["kind"] == "fixed" else
           f"sequential: target {stats.miss_bound(mode['miss'])}, at most {mode['cap']} runs a row")
    via = rec.get("via") or "qemu"
    where = "" if via == "qemu" else f", each guest a LAVA job ({via})"
    if (rec.get("jobs") or 1) > 1:
        where += f", up to {rec['jobs']} guests at once"
    return clean(f"{rec['arch']}, {rec.get('accel') or '?'}{where}; {how}; krepro {rec.get('krepro', '?')}; "
                 f"started {rec['started']}.")


def table(rec, by_row):
    """summary.md's table: the rows decided, then what the run left undecided."""
    out = []
    for r in rec["rows"]:
        rs = by_row.get((r["repro"], r["kernel"]), [])
        want = r.get("expected")
        mark = "-" if want is None else (f"{want} ok" if r.get("as_expected") else f"{want} **UNEXPECTED**")
        first = next((x for x in rs if x["outcome"] == r["decision"]), rs[-1] if rs else None)
        counts = ", ".join(f"{k} {v}" for k, v in r["counts"].items())
        src = r["rate"]["source"] if r.get("rate") else (r.get("unbounded") or "-")
        out.append(f"| {md_cell(r['repro'])} | {md_cell(r['kernel'])} | {md_cell(r['cell'])} | {md_cell(mark)} | "
                   f"{md_cell(counts)} | {seconds_stats(rs)} | {md_cell(src)} | "
                   f"{md_cell(first['evidence'] if first else '')} | {md_cell(first['log'] if first else '-')} |")
    decided = {(r["repro"], r["kernel"]) for r in rec["rows"]}
    for key, rs in by_row.items():
        if key not in decided:
            out.append(f"| {md_cell(key[0])} | {md_cell(key[1])} | (not decided: run stopped) | - | {len(rs)} runs | "
                       f"{seconds_stats(rs)} | - | {md_cell(rs[-1]['evidence'])} | {md_cell(rs[-1]['log'])} |")
    for c in rec.get("cut_off") or []:
        out.append(f"| {md_cell(c['repro'])} | {md_cell(c['kernel'])} | (cut off: run {md_cell(c['run'])} was "
                   f"running when the run stopped) | - | - | - | - | - | {md_cell(c['log'])} |")
    return out


def findings(results, r, rs):
    """A row's FAILs and OTHERs: the first of each, its report and log."""
    out = []
    for outcome in ("FAIL", "OTHER"):
        bad = [x for x in rs if x["outcome"] == outcome]
        if not bad:
            continue
        run = bad[0]
        rep, lines = excerpt(results, run)
        said = [f"### {r['repro']} on {r['kernel']}: {outcome} in {len(bad)} of {len(rs)} runs", ""]
        if outcome == "FAIL":
            said.append(f"- this bug ({run.get('signature') or 'evidence'}): {run['evidence']}")
            # "fix": the row's key in run.json of runs before it was fix_commit.
            said.append(f"- expected fix: {r.get('fix_commit') or r.get('fix') or 'unknown'}")
        else:
            said.append(f"- a kernel report that is not this bug: {run['evidence']}"
                        + ("" if r.get("role") == "bug" else " (a finding on this kernel)"))
        said += report_lines_of(rep, run) + [f"- log: {run['log']}"] + lava_line(run)
        out += [clean(line) for line in said] + [""]
        if lines:
            out += fenced(lines) + [""]
    return out


def report_lines_of(rep, run):
    """What a finding says of the report behind it."""
    out = []
    if rep and rep.get("culprit"):
        out.append(f"- report: {rep.get('title')} | culprit (syzbot-style title): {rep['culprit']}")
    if rep and rep.get("frames"):
        out.append(f"- trace: {' < '.join(rep['frames'][:12])}")
    if rep:
        out.append(f"- decoded: {run.get('report')} ({run.get('decoded', 0)} lines with file:line)"
                   if run.get("decoded") else
                   f"- not decoded: {run.get('decode_error') or 'no decoding recorded'}")
    return out


def lava_line(run):
    """LAVA's own reading of a run, beside krepro's (which decides)."""
    lava_res = run.get("lava_results")
    if not lava_res:
        return []
    mine = {k: v for k, v in lava_res.items() if not k.startswith("lava/")}
    return [f"- LAVA ({run.get('via')}): job {lava_res.get('lava/job', '?')}, "
            + ", ".join(f"{k} {v}" for k, v in mine.items())
            + f"; its log: {run.get('lava_log')}"]


