#!/usr/bin/env python3
"""Keep a proof run as a compact committed record: one JSON file per
reproducer under repro/<id>/records/, from a run directory's run.json.

usage: bench/proof-record.py RUN_DIR... NAME [--conditions TEXT]
       bench/proof-record.py --readme [REPRO...]

NAME names the campaign (e.g. 2026-12-06-loaded-host); the file is
repro/<id>/records/NAME.json. Several run directories make one campaign
(runs of one exploration with different guest options, say): their runs in
the order given, and "command" the list of their commands. Per run: kernel, build, outcome, seconds, the
signature or evidence that decided it (the evidence line whole, the declared
signature that matched, the cases a FAIL would hide that were BROKEN), the
report title, a race's window hits (up to its evidence in a FAIL), whether
the boot
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
from krepro import branches  # noqa: E402
import proof_records as records  # noqa: E402
from krepro.options import Parser  # noqa: E402
from krepro.reports.run_evidence import window_hits  # noqa: E402
from krepro.untrusted import Refused, inside, read_text  # noqa: E402


# The evidence line is kept whole; a run.json is untrusted input, so bounded
# (far above what the runner writes: reports.EVIDENCE_CHARS and its notes).
EVIDENCE_CHARS = 64 << 10


def text(v, limit=EVIDENCE_CHARS):
    """A string field of an untrusted run.json: a string, bounded, or None."""
    return v[:limit] if isinstance(v, str) else None


def compact(run, kernels, accel, date, branch=None):
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
            "window_hits": records.hits_kept(run),
            "accel": run.get("accel") or accel, "date": date,
            "branch": branch or branches.DEFAULT}


def hits_from_ktap(run_dir, run):
    """A run's window hits read again from its KTAP file (a run.json written
    before the runner kept them, or read them otherwise), else run.json's."""
    kept = records.hits_kept(run)
    if not isinstance(run.get("dir"), str) or not run["dir"]:
        return kept
    try:
        ktap = inside(run_dir, os.path.join(run["dir"], "ktap.txt"), "a run's ktap.txt")
        return window_hits(read_text(ktap, 16 << 20, truncate=True))
    except (Refused, OSError):
        return kept


def main(argv):
    if argv and argv[0] == "--readme":
        names = argv[1:] or sorted(os.listdir(os.path.join(TOP, "repro")))
        for r in names:
            if os.path.isdir(os.path.join(TOP, "repro", r, "records")):
                print(f"{os.path.relpath(records.update_readme(r), TOP)}: table rewritten")
        return 0
    p = Parser(prog="bench/proof-record.py", allow_abbrev=False)
    p.add_argument("run_dirs", nargs="+", metavar="RUN_DIR")
    p.add_argument("name")
    p.add_argument("--conditions", default="")
    o = p.parse_args(argv)
    recs = []
    for d in o.run_dirs:
        try:
            with open(os.path.join(d, "run.json")) as f:
                recs.append(json.load(f))
        except (OSError, ValueError) as e:
            print(f"proof-record.py: {d}/run.json: {e}", file=sys.stderr)
            return 128
    rec = recs[0]
    date = (rec.get("started") or "")[:10]
    commands = [records.portable(r.get("command") or []) for r in recs]
    by_repro = collections.defaultdict(list)
    for d, r in zip(o.run_dirs, recs):
        kernels = {k["label"]: k for k in r.get("kernels", [])}
        for run in r.get("runs", []):
            run["window_hits"] = hits_from_ktap(d, run)
            by_repro[run["repro"]].append(compact(run, kernels, r.get("accel"), date,
                                                  r.get("branch")))
    for repro, runs in sorted(by_repro.items()):
        out = {"name": o.name, "repro": repro, "date": date, "krepro": rec.get("krepro"),
               "command": commands[0] if len(commands) == 1 else commands, "arch": rec.get("arch"),
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
