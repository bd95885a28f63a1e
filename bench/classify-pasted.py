#!/usr/bin/env python3
"""krepro classify on real kernel logs as users pasted them in public bug
reports (syslog and journalctl prefixes, continuation lines, rsyslog's #012,
older lockdep banners, markdown, lost newlines, ...), each against the plain
log derived from it by hand.

usage: bench/classify-pasted.py LOGDIR [--scripts DIR] [--part all|tune|held]
           [--rewrapped] [--record NAME --commit HASH --machine TEXT --what TEXT]

LOGDIR holds the logs (not committed: they are others' text) and index.tsv,
a line a log: name, source address, its wrapping, "report" or "none" (whether
it shows a kernel report), and how its plain form is made, operations joined
by " ;; ", applied in order to each line:
  cut:TEXT     everything up to and including the first TEXT off the line
  split:TEXT   TEXT is a newline
  nl:TEXT      a newline before each TEXT after the line's start
  drop:REGEX   a line REGEX matches is none
  strip        leading blanks off
  strip-right  trailing blanks off
  oldlockdep   "[ INFO: X ]" / "[ BUG: X ]" as "INFO: X" / "BUG: X"
The held-back part: logs whose source address's SHA-1 begins with 0-7,
chosen before any log was read by the classifier; only its figures count.

Figures, per part: logs showing a report where classify finds one; logs
with no false report (none where the log shows none, no more than the plain
form has where it shows one); logs whose first report's title equals the
plain form's first title. --scripts DIR: the krepro package read from
DIR (another checkout's scripts/), to measure a commit before this one.
--rewrapped: also krepro's own golden logs (tests/console) re-wrapped in each
way of tests/rewrap.py, and how many of those with a report read as the log
itself (kind, title, culprit, trace); needs no LOGDIR of others' logs.
"""
import argparse
import datetime
import hashlib
import io
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OLD_BANNER = re.compile(r"^\[ ((?:INFO|BUG): .*?) \]\s*$")


def derive(text, ops):
    """The plain form of a pasted log by its index operations."""
    lines = text.splitlines()
    for op in filter(None, (o.strip() for o in ops.split(" ;; "))):
        name, _, arg = op.partition(":")
        if name == "cut":
            lines = [l[l.index(arg) + len(arg):] if arg in l else l for l in lines]
        elif name == "split":
            lines = [p for l in lines for p in l.split(arg)]
        elif name == "nl":
            lines = [p for l in lines for p in (l[:1] + l[1:].replace(arg, "\n" + arg)).split("\n")]
        elif name == "drop":
            lines = [l for l in lines if not re.search(arg, l)]
        elif name == "strip":
            lines = [l.lstrip() for l in lines]
        elif name == "strip-right":
            lines = [l.rstrip() for l in lines]
        elif name == "oldlockdep":
            lines = [OLD_BANNER.sub(r"\1", l) for l in lines]
        else:
            sys.exit(f"classify-pasted: unknown operation {op!r}")
    return "\n".join(lines) + "\n"


def titles(classify, text):
    return [classify.title_of(c) for c, _ in classify.reports_of(io.StringIO(text))]


def part_of(source):
    return "held" if hashlib.sha1(source.encode()).hexdigest()[0] in "01234567" else "tune"


def measure(logdir, classify):
    rows = []
    with open(os.path.join(logdir, "index.tsv")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            name, source, wrapping, expects, ops = (line.rstrip("\n").split("\t") + [""])[:5]
            with open(os.path.join(logdir, name), encoding="utf-8", errors="replace") as g:
                text = g.read()
            got, plain = titles(classify, text), titles(classify, derive(text, ops))
            want = expects == "report"
            rows.append({"name": name, "source": source, "wrapping": wrapping, "part": part_of(source),
                         "expects": want, "found": bool(got) if want else None,
                         "no_false": (len(got) <= len(plain)) if want else not got,
                         "title_equal": (bool(got) and bool(plain) and got[0] == plain[0]) if want else None,
                         "title": got[0] if got else None, "plain_title": plain[0] if plain else None})
    return rows


def figures(rows):
    def frac(key):
        vals = [r[key] for r in rows if r[key] is not None]
        return f"{sum(vals)}/{len(vals)}"
    return {"logs": len(rows), "report found": frac("found"), "no false report": frac("no_false"),
            "title equal to the plain log's": frac("title_equal")}


def rewrapped(classify):
    """{wrapping: "n/of"}: golden logs with a report whose wrapped form
    gives the reports the log gives; and of the logs without one, times a
    wrapped form gave none either."""
    sys.path.insert(0, os.path.join(TOP, "tests"))
    import rewrap

    def reports_of(text):
        return [(c["kind"], c["title"], classify.title_of(c), tuple(c["trace_frames"]))
                for c, _ in classify.reports_of(io.StringIO(text))]
    out = {name: [0, 0] for name in rewrap.WRAPPINGS}
    quiet = [0, 0]    # the logs without a report: none found in any wrapping
    for log in rewrap.GOLDEN:
        text = rewrap.read(log)
        want = reports_of(text)
        for name, wrap in rewrap.WRAPPINGS.items():
            same = reports_of("\n".join(wrap(text.splitlines())) + "\n") == want
            tally = out[name] if want else quiet
            tally[0] += same
            tally[1] += 1
    found = {name: f"{n}/{of}" for name, (n, of) in out.items()}
    return dict(found, **{"without a report, none found in any wrapping": f"{quiet[0]}/{quiet[1]}"})


class Parser(argparse.ArgumentParser):
    """argparse with krepro's usage error: one line and 128, not 2 (krepro's
    own Parser is not imported here: --scripts may name another checkout's)."""

    def error(self, message):
        print(f"{self.prog}: error: {message} (--help for more)", file=sys.stderr)
        sys.exit(128)


def main():
    p = Parser(prog="bench/classify-pasted.py", description=__doc__.split("\n\n")[0], allow_abbrev=False)
    p.add_argument("logdir")
    p.add_argument("--scripts", default=os.path.join(TOP, "scripts"))
    p.add_argument("--part", choices=("all", "tune", "held"), default="held")
    p.add_argument("--rewrapped", action="store_true")
    p.add_argument("--record")
    p.add_argument("--commit", default="")
    p.add_argument("--machine", default="")
    p.add_argument("--what", default="")
    o = p.parse_args()
    sys.path.insert(0, o.scripts)
    from krepro.reports import classify  # noqa: E402
    import proof_records as records  # noqa: E402
    rows = measure(o.logdir, classify)
    raw = [f"{r['part']}  {r['name']:<22} found {r['found']!s:<5} no-false {r['no_false']!s:<5} "
           f"title {r['title']!r} plain {r['plain_title']!r}" for r in rows]
    for r, line in zip(rows, raw):
        if o.part == "all" or r["part"] == o.part:
            print(line)
    parts = {"held back": figures([r for r in rows if r["part"] == "held"]),
             "tuned on": figures([r for r in rows if r["part"] == "tune"]), "all": figures(rows)}
    print(parts)
    wrapped = rewrapped(classify) if o.rewrapped else None
    if wrapped:
        print(wrapped)
    if o.record:
        records.write(os.path.join(TOP, "bench", "records", o.record + ".json"), {
            "kind": "classify-pasted", "date": datetime.date.today().isoformat(), "what": o.what,
            "machine": o.machine, "commit": o.commit,
            "held_back": "logs whose source address's SHA-1 begins with 0-7, chosen before any was classified",
            "figures": {f"held back: {k}": v for k, v in parts["held back"].items() if k != "logs"},
            "parts": parts, **({"rewrapped golden logs": wrapped} if wrapped else {}),
            "logs": [{k: r[k] for k in ("name", "source", "wrapping", "part", "found", "no_false",
                                        "title_equal", "title", "plain_title")} for r in rows],
            "raw": "\n".join([line for r, line in zip(rows, raw) if r["part"] == "held"]
                             + [f"{k}: {v}" for k, v in (wrapped or {}).items()])})


if __name__ == "__main__":
    main()
