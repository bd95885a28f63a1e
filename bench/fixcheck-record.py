#!/usr/bin/env python3
"""bench/fixcheck-record.py OUT --what TEXT --commit HASH DIR...: one record
of `krepro fixcheck` runs (each DIR a run's --results, holding fixcheck.json),
with this machine's paths taken out: per reproducer the tree, the three
answers (the row as it is, whether the fix applies, the row with it), the
exit status and the wall time from the first guest's start to the last's end
(the fix's build included); under raw, each run's fixcheck.md."""
import datetime
import json
import os
import sys

from run_records import MACHINE, write

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from krepro.options import Parser  # noqa: E402



def span(d):
    """Seconds from the first row's start to the last row's end, or None."""
    runs = []
    for sub in ("as-is", "with-fix"):
        path = os.path.join(d, sub, "run.json")
        if os.path.isfile(path):
            with open(path) as f:
                runs.append(json.load(f))
    if not runs or not runs[-1].get("finished"):
        return None
    t = [datetime.datetime.fromisoformat(r) for r in (runs[0]["started"], runs[-1]["finished"])]
    return round((t[1] - t[0]).total_seconds())


def applies_said(applies):
    if applies.get("ok"):
        return "applies"
    if (applies.get("why") or "").startswith("it is in the tree already"):
        return "is in already (applies in reverse)"
    return "does not apply"


def one(d):
    with open(os.path.join(d, "fixcheck.json")) as f:
        c = json.load(f)
    applies = c.get("applies") or {}
    return {"repro": c["repro"], "arch": c["arch"], "branch": c["branch"], "tree": c["tree"],
            "as it is": (c.get("as_is") or {}).get("cell"),
            "fix applies": applies_said(applies),
            "why it does not apply": None if applies.get("ok") else applies.get("why"),
            "with the fix": (c.get("with_fix") or {}).get("cell"),
            "exit": c["exit"], "seconds": span(d), "notes": c.get("notes")}


def same(rows, key, fmt):
    """One figure for a field: its value when every run has it, else each
    value with the reproducers that had it."""
    by = {}
    for r in rows:
        by.setdefault("-" if r[key] is None else str(r[key]), []).append(r["repro"])
    if len(by) == 1:
        return fmt.format(next(iter(by)))
    return "; ".join(fmt.format(v) + f": {', '.join(names)}" for v, names in by.items())


def main():
    ap = Parser(prog="bench/fixcheck-record.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--what", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--place", action="append", default=[], metavar="PATH=NAME",
                    help="write PATH (a tree, a checkout of krepro) as NAME")
    a = ap.parse_args()
    for d in a.dirs:
        if not os.path.isfile(os.path.join(d, "fixcheck.json")):
            ap.error(f"{d}: no fixcheck.json (not a fixcheck's results)")
    rows = [one(d) for d in a.dirs]
    places = [tuple(p.split("=", 1)) for p in a.place if "=" in p]
    places += [(os.path.realpath(d), f"<{os.path.basename(d)}>") for d in a.dirs]
    places += [(os.path.expanduser("~"), "~")]
    figures = {k: same(rows, key, fmt) for k, key, fmt in (
        ("as it is", "as it is", "{}"), ("fix applies", "fix applies", "the fix {}"),
        ("with the fix", "with the fix", "{}"), ("exit", "exit", "exit {}"))}
    timed = sorted((r["seconds"], r["repro"]) for r in rows if r["seconds"] is not None)
    if timed:
        figures["seconds"] = (f"{timed[0][0]} s ({timed[0][1]})" if len(timed) == 1 else
                              f"{timed[0][0]} s ({timed[0][1]}) to {timed[-1][0]} s ({timed[-1][1]})")
    raw = []
    for d in a.dirs:
        with open(os.path.join(d, "fixcheck.md"), errors="replace") as f:
            raw.append(f.read())
    rec = {"kind": "fixcheck", "date": datetime.date.today().isoformat(), "what": a.what,
           "machine": MACHINE, "commit": a.commit, "figures": figures, "rows": rows,
           "raw": "\n".join(raw)}
    write(a.out, rec, places)


if __name__ == "__main__":
    sys.exit(main())
