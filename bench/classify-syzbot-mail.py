#!/usr/bin/env python3
"""How krepro's classifier titles syzbot's own bug reports as they reach
the mailing lists, by the title syzbot gave each.

usage: bench/classify-syzbot-mail.py GIT_DIR... [--part all|tune|held] [--mismatches]
           [--reader run|classify] [--fresh --seen-in GIT_DIR...]
           [--record FILE --commit HASH --machine TEXT --sources TEXT --seen TEXT --change TEXT]

Each GIT_DIR is a public-inbox archive of one list (a git repository whose
every commit holds one message as the file "m"; nothing of it is committed
here). A message counts when syzbot sent it and its text says it found an
issue ("syzbot found the following issue", "... has found a reproducer for
...", the older "syzkaller hit the following crash"): the expected title
is its subject without the list tags ("[syzbot] [ext4?] "), the "upstream
test error: " kind and the " (2)" of a recurring bug; the log is the whole
text part, prose and report as a user would paste it. Titles that name no
kernel report (build errors, "no output from test machine", lost
connections) are left out, and each title counts once (its oldest mail).

The held-back part is every title whose SHA-1 is even in its last hex
digit, chosen before any tuning; --mismatches lists the tuned-on part
unless --part says otherwise. --fresh: archives never read before, every
title held back, those also in the --seen-in archives left out (syzbot
sends one report to several lists). --record writes the figures (titles and
counts, no mail text) as a bench/records JSON record.
"""
import datetime
import email
import email.policy
import hashlib
import os
import re
import subprocess
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
import proof_records as records  # noqa: E402
from krepro.options import Parser  # noqa: E402
import title_figures  # noqa: E402
from title_figures import figures, share_text, show  # noqa: E402

FOUND = re.compile(r"^(syzbot|syzkaller) (has )?(found|hit)( a)?( reproducer for)? "
                   r"the following (issue|crash)", re.M)
# Titles of a run's failure, not of a kernel report in the mail.
NOT_A_REPORT = re.compile(r"build error|no output from test machine|lost connection to test machine|"
                          r"unexpected kernel reboot|^SYZFAIL|suppressed report|test machine timed out")
MAX_MESSAGE = 4 << 20


def title_of(subject):
    """syzbot's title from its mail's subject."""
    t = re.sub(r"\s*\n\s*", " ", subject or "").strip()
    t = re.sub(r"^((Re|Fwd?|AW):\s*)+", "", t, flags=re.I)
    t = re.sub(r"^(\[[^]]*\]\s*)+", "", t)
    t = re.sub(r"^[\w./-]+ (test|boot) error: ", "", t)
    return re.sub(r" \(\d+\)$", "", t).strip()


def messages(git_dir):
    """(commit, year, raw message) of every commit by syzbot in one
    archive, oldest first."""
    log = subprocess.run(["git", "--git-dir", git_dir, "log", "--all", "--reverse",
                          "--author=syzkaller.appspotmail.com", "--format=%H %ad",
                          "--date=format:%Y"], capture_output=True, text=True, check=True).stdout.split("\n")
    with subprocess.Popen(["git", "--git-dir", git_dir, "cat-file", "--batch"],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE) as cat:
        for commit, _, year in (entry.partition(" ") for entry in log if entry):
            cat.stdin.write(f"{commit}:m\n".encode())
            cat.stdin.flush()
            head = cat.stdout.readline().split()
            if len(head) != 3:     # "<name> missing"
                continue
            size = int(head[2])
            data = cat.stdout.read(size + 1)[:size]
            if size <= MAX_MESSAGE:
                yield commit, year, data
        cat.stdin.close()


def reports(git_dirs):
    """{title: (archive, commit, year, text)}: each title's oldest report."""
    out = {}
    for git_dir in git_dirs:
        name = os.path.basename(os.path.dirname(os.path.abspath(git_dir))) or git_dir
        for commit, year, raw in messages(git_dir):
            msg = email.message_from_bytes(raw, policy=email.policy.default)
            if "syzkaller.appspotmail.com" not in str(msg.get("From", "")):
                continue
            part = msg.get_body(preferencelist=("plain",))
            try:
                text = part.get_content() if part else ""
            except (LookupError, ValueError):
                continue
            title = title_of(str(msg.get("Subject", "")))
            if not FOUND.search(text) or not title or NOT_A_REPORT.search(title):
                continue
            out.setdefault(title, (name, commit, year, text))
    return out


def held_back(title):
    return int(hashlib.sha1(title.encode()).hexdigest()[-1], 16) % 2 == 0


def main(argv):
    p = Parser(prog="bench/classify-syzbot-mail.py", allow_abbrev=False)
    p.add_argument("git_dirs", nargs="+", metavar="GIT_DIR")
    p.add_argument("--mismatches", action="store_true", help="list mails whose title differs")
    p.add_argument("--part", choices=("all", "tune", "held"), default="tune",
                   help="which mails --mismatches lists (default tune)")
    p.add_argument("--reader", choices=("run", "classify"), default="classify",
                   help="the classify command's reader (default) or the guest run's")
    p.add_argument("--fresh", action="store_true", help="every title is held back (none tuned on)")
    p.add_argument("--seen-in", nargs="+", default=[], metavar="GIT_DIR",
                   help="archives read before: their titles are left out")
    p.add_argument("--record", help="write the figures to this JSON file")
    p.add_argument("--commit", default=None, help="the krepro commit measured")
    p.add_argument("--machine", default="", help="the machine it ran on")
    p.add_argument("--sources", default="", help="the archives and their commits")
    p.add_argument("--seen", default="", help="what of the held-back part was looked at before")
    p.add_argument("--change", default="", help="what changed since the last record")
    a = p.parse_args(argv)
    for d in a.git_dirs + a.seen_in:
        if not os.path.isdir(d):
            p.error(f"{d}: no such directory (a public-inbox archive's git directory)")
        if subprocess.run(["git", "--git-dir", d, "rev-parse", "--git-dir"], capture_output=True).returncode:
            p.error(f"{d}: not a git directory (a public-inbox archive's)")
    found = reports(a.git_dirs)
    seen = set(reports(a.seen_in)) if a.seen_in else set()
    left_out = len(seen & set(found))
    found = {t: v for t, v in found.items() if t not in seen}
    rows, where = [], {}
    for title, (name, commit, year, text) in sorted(found.items()):
        r = title_figures.row(title, text, title, a.reader)
        r["held"], r["year"] = a.fresh or held_back(title), year
        rows.append(r)
        where[title] = f"{name} {commit[:12]}"
    held = [r for r in rows if r["held"]]
    tune = [r for r in rows if not r["held"]]
    out = {"held back": figures(held), "tuned on": figures(tune), "all": figures(rows)}
    for part, sub in (("held back", held), ("tuned on", tune)):
        title_figures.by_arch(out, part, sub)
        for year in sorted({r["year"] for r in sub}):
            out[f"{part}, {year}"] = figures([r for r in sub if r["year"] == year])
    raw = [show(k, v) for k, v in out.items()]
    print("\n".join(raw))
    if a.mismatches:
        pick = {"all": rows, "tune": tune, "held": held}[a.part]
        for r in pick:
            if r["got"] != r["want"]:
                print(f"{where[r['want']]} {r['year']}\n    want {r['want']!r}\n    got  {r['got']!r}")
    if a.record:
        rec = {"kind": "classify-syzbot-mail", "date": datetime.date.today().isoformat(),
               "what": "bench/classify-syzbot-mail.py: krepro's title of each syzbot report "
                       "mailed to the lists against the title syzbot gave it (the mail's subject)",
               "machine": a.machine, "commit": a.commit, "reader": a.reader,
               "sources": a.sources, "mails": len(rows),
               "held_back": (f"all {len(held)} titles: archives never read before, {left_out} titles "
                             "also in the archives read before left out" if a.fresh else
                             f"{len(held)} titles, those whose SHA-1 ends in an even hex digit, "
                             "chosen before any tuning"),
               "held_back_seen": a.seen or "not stated", "change": a.change,
               "figures": {f"held back: {k}": share_text(v)
                           for k, v in out["held back"].items() if k != "files" and v["of"]},
               "parts": out, "raw": "\n".join(raw),
               "mismatches, tuned on": [{"want": r["want"], "got": r["got"]}
                                        for r in tune if r["got"] != r["want"]]}
        records.write(a.record, rec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
