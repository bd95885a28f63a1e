#!/usr/bin/env python3
"""How krepro's classifier titles syzkaller's parser test logs, by
syzkaller's own expected titles.

usage: bench/classify-syzkaller.py TESTDATA_DIR [--mismatches] [--part all|tune|held]
           [--reader run|classify] [--record FILE --syzkaller-commit HASH --commit HASH --machine TEXT
            --seen TEXT --change TEXT]

TESTDATA_DIR is syzkaller's pkg/report/testdata/linux/report (a checkout of
google/syzkaller; nothing of it is committed here). Each file there is a
console log after a header ("TITLE: ...", "CORRUPTED: Y", ... then a blank
line); a file without TITLE expects no report. Six figures: logs with a
report where krepro finds one; logs without where it finds none; the first
report's stem equal (the title without its " in FUNCTION"); the whole title
equal; of the logs whose header says "CORRUPTED: Y", those whose first
report krepro calls corrupted too; of the other logs with a report, those
krepro wrongly calls corrupted (the one figure where less is better). The held-back part (files whose number is divisible by 5, chosen
before any tuning) is reported apart: those figures are the ones that count.
The arch is inferred from the log (arm64 "pc : ", ARM "PC is at", else x86_64).
--record writes the figures (no log text) as a bench/records JSON record:
"figures" holds the held-back part's six, "parts" every part's; --seen says
what of the held-back part was looked at before (recorded as said, "not
stated" without it). --reader: the guest run's reader (console.crashes(), the
default) or the classify command's (classify.reports_of()).
"""
import collections
import datetime
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
import proof_records as records  # noqa: E402
from krepro.options import Parser  # noqa: E402
import title_figures  # noqa: E402
from title_figures import figures, share_text, show  # noqa: E402

HELD_BACK_EVERY = 5


def read_case(path):
    """(header dict, log text) of one test file."""
    with open(path, "rb") as f:
        data = f.read().decode("utf-8", "replace")
    head, _, log = data.partition("\n\n")
    fields = collections.defaultdict(list)
    for line in head.splitlines():
        if line.startswith("#"):
            continue
        key, sep, val = line.partition(": ")
        if sep and re.fullmatch(r"[A-Z ]+", key):
            fields[key].append(val.strip())
        else:   # no header at all: the whole file is the log
            return {}, data
    return fields, log


def judge(path, reader="run"):
    fields, log = read_case(path)
    want = (fields.get("TITLE") or [None])[0]
    return title_figures.row(os.path.basename(path), log, want, reader,
                             corrupted=fields.get("CORRUPTED") == ["Y"])


def write_record(a, out, raw):
    held = out["held back"]
    rec = {"kind": "classify-syzkaller", "date": datetime.date.today().isoformat(),
           "what": "bench/classify-syzkaller.py: krepro's title of each of syzkaller's Linux parser "
                   "test logs (pkg/report/testdata/linux/report) against the title syzkaller expects",
           "machine": a.machine, "commit": a.commit, "syzkaller_commit": a.syzkaller_commit,
           "reader": a.reader,
           "files": out["all"]["files"],
           "held_back": f"{held['files']} files, those whose number is divisible by {HELD_BACK_EVERY}, "
                        "chosen before any tuning",
           "held_back_seen": a.seen or "not stated",
           "change": a.change,
           "arch": "inferred from each log (arm64 'pc : ', ARM 'PC is at', else x86_64)",
           "figures": {f"held back: {k}": share_text(v) for k, v in held.items() if k != "files"},
           "parts": out, "raw": "\n".join(raw)}
    records.write(a.record, rec)



def main(argv):
    p = Parser(prog="bench/classify-syzkaller.py", allow_abbrev=False)
    p.add_argument("testdata")
    p.add_argument("--mismatches", action="store_true", help="list files whose title differs")
    p.add_argument("--part", choices=("all", "tune", "held"), default="all",
                   help="which files --mismatches lists (default all)")
    p.add_argument("--record", help="write the figures to this JSON file")
    p.add_argument("--syzkaller-commit", default="", help="the syzkaller commit the data is from")
    p.add_argument("--commit", default=None, help="the krepro commit measured")
    p.add_argument("--machine", default="", help="the machine it ran on")
    p.add_argument("--seen", default="", help="what of the held-back part was looked at before "
                   "this measurement (its mismatches, only its totals)")
    p.add_argument("--change", default="", help="what changed since the last record")
    p.add_argument("--reader", choices=("run", "classify"), default="run",
                   help="the guest run's reader (default) or the classify command's")
    a = p.parse_args(argv)
    if not os.path.isdir(a.testdata):
        p.error(f"{a.testdata}: no such directory (syzkaller's pkg/report/testdata/linux/report)")
    names = sorted((n for n in os.listdir(a.testdata) if n.isdigit()), key=int)
    rows = [judge(os.path.join(a.testdata, n), a.reader) for n in names]
    held = [r for r in rows if int(r["file"]) % HELD_BACK_EVERY == 0]
    tune = [r for r in rows if int(r["file"]) % HELD_BACK_EVERY != 0]
    out = {"held back": figures(held), "tuned on": figures(tune), "all": figures(rows)}
    for part, sub in (("held back", held), ("tuned on", tune)):
        title_figures.by_arch(out, part, sub)
    raw = [show(k, v) for k, v in out.items()]
    print("\n".join(raw))
    if a.mismatches:
        pick = {"all": rows, "tune": tune, "held": held}[a.part]
        for r in pick:
            if r["got"] != r["want"] or r["want"] and r["corrupted"] != r["said corrupted"]:
                flag = f" (corrupted: header {'Y' if r['corrupted'] else 'N'}, krepro "
                flag += f"{'Y' if r['said corrupted'] else 'N'})" if r["want"] else ""
                print(f"{r['file']:>5} {r['arch']:<7} want {r['want']!r}\n{'':13} got  {r['got']!r}"
                      + (flag if r["corrupted"] != r["said corrupted"] else ""))
    if a.record:
        write_record(a, out, raw)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
