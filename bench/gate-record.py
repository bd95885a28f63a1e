#!/usr/bin/env python3
"""bench/gate-record.py RESULTS OUT --what TEXT --commit HASH [--wall TEXT]
[--series DIR]: one record of a gate run (scripts/gate.sh --results RESULTS),
with this machine's paths taken out: every reproducer's cell on BASE and on
BASE+SERIES and its change, the lists gate.md gives, and each flipped row's
culprit search as its bisect.json has it (RESULTS/culprit/<repro>/); under
raw, gate.md as written.
--series DIR: the series' patch files, so the culprit is named by position;
--log FILE: what the gate printed, for its kernels' build seconds."""
import datetime
import json
import os
import re
import sys

from run_records import MACHINE, scrub, summary, write

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from krepro.options import Parser  # noqa: E402

# kernels.sh's line for a gate kernel it built.
BUILT = re.compile(r"^krepro: the (\S+) kernel \(.*\) built in ([0-9]+) s", re.M)


def minutes(a, b):
    s = (datetime.datetime.fromisoformat(b) - datetime.datetime.fromisoformat(a)).total_seconds()
    return f"{int(s // 60)} min {int(s % 60)} s"


def rows(run):
    """{repro: {kernel label: cell}} in the run's order."""
    out = {}
    for r in run["rows"]:
        out.setdefault(r["repro"], {})[r["kernel"]] = r["cell"]
    return out


def lists(gate_md):
    """gate.md's four lists, as printed (the lines that start with "- ")."""
    return [l[2:] for l in gate_md.splitlines() if l.startswith("- ")]


def position(commit_subject, series):
    """1-based position of the patch whose subject the culprit commit has."""
    if not series:
        return None
    names = sorted(n for n in os.listdir(series) if n.endswith(".patch"))
    for i, n in enumerate(names):
        with open(os.path.join(series, n), errors="replace") as f:
            head = f.read(4096)
        if commit_subject and commit_subject in head:
            return f"{i + 1} of {len(names)} ({n})"
    return None


def culprits(results, places, series):
    out, raw = {}, {}
    base = os.path.join(results, "culprit")
    for repro in sorted(os.listdir(base)) if os.path.isdir(base) else []:
        path = os.path.join(base, repro, "bisect.json")
        if not os.path.isfile(path):
            continue
        with open(path) as f:
            d = scrub(json.load(f), places)
        s = summary(d)
        s["position"] = position(s["culprit_subject"], series)
        s["wall"] = minutes(d["started"], d["finished"])
        out[repro], raw[repro] = s, d
    return out, raw


def main():
    ap = Parser(prog="bench/gate-record.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("results")
    ap.add_argument("out")
    ap.add_argument("--what", required=True)
    ap.add_argument("--commit", required=True)
    ap.add_argument("--wall", help="the gate's whole wall time, as timed around it")
    ap.add_argument("--series")
    ap.add_argument("--log", help="what the gate printed: its kernels' build seconds are taken from it")
    a = ap.parse_args()
    if not os.path.isfile(os.path.join(a.results, "run.json")):
        ap.error(f"{a.results}: no run.json (not a gate's results)")
    with open(os.path.join(a.results, "run.json")) as f:
        run = json.load(f)
    with open(os.path.join(a.results, "gate.md")) as f:
        gate_md = f.read()
    places = [(os.path.realpath(a.results), "<results>"), (os.path.expanduser("~"), "~")]
    if a.series:
        places.insert(0, (os.path.realpath(a.series), "<series>"))
    found, raw = culprits(a.results, places, a.series)
    figures = {"rows": f"reproducers on both kernels: {len(rows(run))}",
               "guests": str(len(run["runs"])),
               "comparison wall": minutes(run["started"], run["finished"])}
    for line in lists(gate_md):
        head, _, names = line.rpartition(": ")
        key = head.split()[0].lower()
        if key in ("regressions", "fixes", "unchanged", "undecided"):
            figures[key] = names if key in ("regressions", "fixes") else \
                str(0 if names == "none" else len(names.split(", ")))
    if a.wall:
        figures["wall"] = a.wall
    if a.log:
        with open(a.log, errors="replace") as f:
            built = BUILT.findall(f.read())
        if built:
            figures["builds"] = ", ".join(f"{name} {secs} s" for name, secs in built)
    for repro, s in found.items():
        named = (f"patch {s['position'] or '?'}, confidence {s['confidence']:.3f}"
                 if s["culprit"] else f"no patch named ({raw[repro].get('stopped') or 'see raw'})")
        figures[f"{repro} culprit"] = (f"{named}, exit {s['exit']}, {s['steps']} steps, "
                                       f"{s['guests']} guests, {s['wall']}")
    rec = {"kind": "gate", "date": run["started"][:10], "what": a.what, "machine": MACHINE,
           "commit": a.commit, "figures": figures, "rows": rows(run), "lists": lists(gate_md),
           "culprits": found, "raw_culprits": raw, "raw": gate_md}
    write(a.out, rec, places)


if __name__ == "__main__":
    sys.exit(main())
