#!/usr/bin/env python3
"""Every proof-run record is well formed, and every reproducer README's
records table is the one its records make (bench/proof-record.py --readme
rewrites it): a README figure cannot drift from its record."""
import glob
import os
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import records  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tally import Tally  # noqa: E402

RUN_KEYS = {"kernel", "build", "outcome", "seconds", "signature", "evidence", "report_title",
            "infra", "accel", "date"}
OUTCOMES = {"PASS", "FAIL", "OTHER", "HANG", "BROKEN", "SKIP"}


def main():
    check = Tally("not ok - ")

    repros = sorted(os.path.basename(os.path.dirname(os.path.normpath(d)))
                    for d in glob.glob(os.path.join(TOP, "repro", "*", "records", "")))
    for r in repros:
        for name, rec in records.load(r):
            check(rec.get("repro") == r, f"{r}/{name}: names reproducer {rec.get('repro')!r}")
            check(rec.get("name") + ".json" == name, f"{r}/{name}: its name field is {rec.get('name')!r}")
            check(bool(rec.get("runs")), f"{r}/{name}: no runs")
            for i, run in enumerate(rec.get("runs") or []):
                check(RUN_KEYS <= set(run), f"{r}/{name}: run {i} lacks {sorted(RUN_KEYS - set(run))}")
                check(run.get("outcome") in OUTCOMES, f"{r}/{name}: run {i} outcome {run.get('outcome')!r}")
        with open(os.path.join(TOP, "repro", r, "README.md")) as f:
            text = f.read()
        got = records.readme_block(text)
        check(got is not None, f"repro/{r}/README.md has records but no generated table")
        check(got is None or got == records.block(r),
              f"repro/{r}/README.md: the records table differs from what the records make "
              "(bench/proof-record.py --readme rewrites it)")
    print(f"{len(repros)} reproducers with records checked")
    return check.end()


if __name__ == "__main__":
    sys.exit(main())
