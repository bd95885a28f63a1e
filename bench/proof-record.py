#!/usr/bin/env python3
"""Keep a proof run as a compact committed record: one JSON file per
reproducer under repro/<id>/records/, from a run directory's run.json.

usage: bench/proof-record.py RUN_DIR NAME [--conditions TEXT]
       bench/proof-record.py --readme [REPRO...]

NAME names the campaign (e.g. 2026-12-06-loaded-host); the file is
repro/<id>/records/NAME.json. Per run: kernel, build, outcome, seconds, the
signature or evidence that decided it (the evidence line whole, the declared
signature that matched, the cases a FAIL would hide that were BROKEN), the
report title, whether the boot
failed before the test (infra), accelerator, date. Conditions say what was
special about the host (e.g. "two CPU hogs beside the guest"). Prints the
tally per reproducer and kernel, and rewrites those reproducers' README
tables from their records (--readme alone does only that; the tables are
checked against the records by tests/test_records.py). Asserts nothing.

Figures of an earlier run whose raw output was not kept go into a record of
kind "transcribed", written by hand: name, repro, kind, date, what,
machine, figures, raw ("figure only: the run's raw output was not kept")
and source ("transcribed from <file> at commit <hash>", the commit that
first stated them). The README section that states them links it.
"""
import collections
import json
import os
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import branches, records  # noqa: E402
from krepro.usage import Parser  # noqa: E402


# The evidence line is kept whole; a run.json is untrusted input, so bounded
# (far above what the runner writes: reports.EVIDENCE_CHARS and its notes).
EVIDENCE_CHARS = 64 << 10


def text(v, limit=EVIDENCE_CHARS):
    """A string field of an untrusted run.json: a string, bounded, or None."""
    return v[:limit] if isinstance(v, str) else None


def compact(run, kernels, accel, date):
    k = kernels.get(run["kernel"], {})
    broken = run.get("broken_cases")
    return {"kernel": run["kernel"], "build": (k.get("build") or "")[:12] or None,
            "outcome": run["outcome"], "seconds": run.get("seconds"),
            "signature": run.get("signature"), "evidence": text(run.get("evidence")) or "",
            "matched_signature": text(run.get("matched_signature"), 1024),
            "broken_cases": [text(b) for b in broken[:16] if isinstance(b, str)]
            if isinstance(broken, list) else [],
            "report_title": run.get("report_title"), "infra": bool(run.get("infra")),
            "stopped_early": bool(run.get("stopped_early")), "report_seen": run.get("report_seen"),
            "answer_complete": run.get("answer_complete"),
            "accel": run.get("accel") or accel, "date": date}


def portable(argv):
    """The run's command without this machine's paths (its results directory)."""
    return [("RESULTS" if i and argv[i - 1] == "--results" else a) for i, a in enumerate(argv)]


def main(argv):
    if argv and argv[0] == "--readme":
        names = argv[1:] or sorted(os.listdir(os.path.join(TOP, "repro")))
        for r in names:
            if os.path.isdir(os.path.join(TOP, "repro", r, "records")):
                print(f"{os.path.relpath(records.update_readme(r), TOP)}: table rewritten")
        return 0
    p = Parser(prog="bench/proof-record.py", allow_abbrev=False)
    p.add_argument("run_dir")
    p.add_argument("name")
    p.add_argument("--conditions", default="")
    o = p.parse_args(argv)
    try:
        with open(os.path.join(o.run_dir, "run.json")) as f:
            rec = json.load(f)
    except (OSError, ValueError) as e:
        print(f"proof-record.py: {o.run_dir}/run.json: {e}", file=sys.stderr)
        return 128
    date = (rec.get("started") or "")[:10]
    kernels = {k["label"]: k for k in rec.get("kernels", [])}
    by_repro = collections.defaultdict(list)
    for run in rec.get("runs", []):
        by_repro[run["repro"]].append(compact(run, kernels, rec.get("accel"), date))
    for repro, runs in sorted(by_repro.items()):
        out = {"name": o.name, "repro": repro, "date": date, "krepro": rec.get("krepro"),
               "command": portable(rec.get("command") or []), "arch": rec.get("arch"),
               "branch": rec.get("branch") or branches.DEFAULT,
               "conditions": o.conditions, "runs": runs}
        path = os.path.join(TOP, "repro", repro, "records", o.name + ".json")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        records.write(path, out)
        tally = collections.Counter((r["kernel"], r["outcome"]) for r in runs)
        print(f"{os.path.relpath(path, TOP)}: "
              + ", ".join(f"{k} {o_} {n}" for (k, o_), n in sorted(tally.items())))
        records.update_readme(repro)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
