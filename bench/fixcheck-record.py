#!/usr/bin/env python3
"""bench/fixcheck-record.py OUT --what TEXT --commit HASH DIR...: one record
of `krepro fixcheck` runs (each DIR a run's --results, holding fixcheck.json),
with this machine's paths taken out: per reproducer the tree, the three
answers (the row as it is, whether the fix applies, the row with it), the
exit status and the wall time from the first guest's start to the last's end
(the fix's build included)."""
import datetime
import json
import os
import sys

from bisect_records import scrub

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from krepro.options import Parser  # noqa: E402

MACHINE = "2 cores, 24 GiB, Debian 12, QEMU TCG (shared with other work)"


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


def one(d):
    with open(os.path.join(d, "fixcheck.json")) as f:
        c = json.load(f)
    applies = c.get("applies") or {}
    return {"repro": c["repro"], "arch": c["arch"], "branch": c["branch"], "tree": c["tree"],
            "as it is": (c.get("as_is") or {}).get("cell"),
            "fix applies": "yes" if applies.get("ok") else f"no: {applies.get('why')}",
            "with the fix": (c.get("with_fix") or {}).get("cell"),
            "exit": c["exit"], "seconds": span(d), "notes": c.get("notes")}


def main():
    ap = Parser(prog="bench/fixcheck-record.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("dirs", nargs="+")
    ap.add_argument("--what", required=True)
    ap.add_argument("--commit", required=True)
    a = ap.parse_args()
    for d in a.dirs:
        if not os.path.isfile(os.path.join(d, "fixcheck.json")):
            ap.error(f"{d}: no fixcheck.json (not a fixcheck's results)")
    rows = [one(d) for d in a.dirs]
    places = [(os.path.expanduser("~"), "~")] + [(os.path.realpath(d), f"<{os.path.basename(d)}>")
                                                 for d in a.dirs]
    figures = {f"{r['repro']} ({r['tree']})": f"exit {r['exit']}: as it is {r['as it is']}; "
               f"fix applies {r['fix applies']}; with it {r['with the fix'] or '-'}; "
               f"{r['seconds']} s" for r in rows}
    rec = {"kind": "fixcheck", "date": datetime.date.today().isoformat(), "what": a.what,
           "machine": MACHINE, "commit": a.commit, "figures": figures, "rows": rows}
    with open(a.out, "w") as f:
        json.dump(scrub(rec, places), f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(json.dumps(figures, indent=1, ensure_ascii=False))


if __name__ == "__main__":
    sys.exit(main())
