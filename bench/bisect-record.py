#!/usr/bin/env python3
"""bench/bisect-record.py RESULTS HISTORY OUT KREPRO_COMMIT: one record of the bisections
bench/bisect-proof.sh ran (RESULTS/<repro>/bisect.json each) on the history
bench/bisect-history.sh made (HISTORY), with this machine's paths taken out:
the history's commits with their subjects, then every bisection as its
bisect.json has it, and a line per bisection with what the docs state."""
import datetime
import json
import os
import statistics
import subprocess
import sys

from run_records import MACHINE, scrub, summary




def figures(runs):
    """What docs/performance.md states: the one cold build (the first step of
    the first bisection), every later step's build, each bisection's wall time."""
    builds = [s["build_seconds"] for d in runs for s in d["steps"] if s.get("build_seconds") is not None]
    first = min(runs, key=lambda d: d["started"])["steps"][0]["build_seconds"]
    rest = sorted(builds)
    rest.remove(first)
    walls = [(datetime.datetime.fromisoformat(d["finished"]) - datetime.datetime.fromisoformat(d["started"]))
             .total_seconds() / 60 for d in sorted(runs, key=lambda d: d["started"])]
    return {"cold build": f"{first:,.0f} s",
            "step builds": f"{rest[0]}-{rest[-1]} s, median {statistics.median(rest):.1f} s over {len(rest)} steps",
            "wall": (", ".join(f"{w:.1f}" for w in walls[:-1]) + " and " if walls[:-1] else "")
            + f"{walls[-1]:.1f} min"}


def main(results, history, out, commit):
    line = subprocess.run(["git", "-C", history, "log", "--reverse", "--format=%H %s", "pristine..HEAD"],
                          check=True, capture_output=True, text=True).stdout.splitlines()
    places = [(os.path.realpath(results), "<results>"), (os.path.realpath(history), "<history>"),
              (os.path.expanduser("~"), "~")]
    runs = []
    for repro in sorted(os.listdir(results)):
        path = os.path.join(results, repro, "bisect.json")
        if os.path.isfile(path):
            with open(path) as f:
                runs.append(scrub(json.load(f), places))
    history = [{"position": i + 1, "commit": l[:40], "subject": l[41:]} for i, l in enumerate(line)]
    at = {h["commit"]: h["position"] for h in history}
    rec = {"kind": "bisect-proof", "date": runs[0]["started"][:10] if runs else None,
           "what": "krepro bisect on bench/bisect-history.sh's history, by bench/bisect-proof.sh",
           "machine": MACHINE, "commit": commit,
           "figures": figures(runs), "history": history,
           "outcomes": {s["repro"]: f"culprit at {at.get(s['culprit'], '?')} of {len(history)}, "
                                    f"confidence {s['confidence']:.3f}, exit {s['exit']}, {s['steps']} steps, "
                                    f"{s['guests']} guests" for s in map(summary, runs)},
           "summary": [summary(d) for d in runs], "raw": runs}
    with open(out, "w") as f:
        json.dump(rec, f, indent=1)
        f.write("\n")
    for s in rec["summary"]:
        print(json.dumps(s))


if __name__ == "__main__":
    if sys.argv[1:] in (["--help"], ["-h"]):
        print(__doc__.strip())
        sys.exit(0)
    if len(sys.argv) != 5 or not all(os.path.isdir(d) for d in sys.argv[1:3]):
        print("usage: bench/bisect-record.py RESULTS HISTORY OUT KREPRO_COMMIT "
              "(RESULTS and HISTORY directories)", file=sys.stderr)
        sys.exit(128)
    main(*sys.argv[1:])
