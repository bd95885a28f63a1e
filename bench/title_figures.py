"""Figures shared by the benches that hold krepro's titles against
syzkaller's: one row per log, then the shares that row set gives."""
import io
import re

from krepro.reports import classify
from krepro.reports import console


def arch_of(log):
    """The arch a log is from: arm64 "pc : ", ARM "PC is at", else x86_64."""
    if re.search(r"^(\[[^]]*\] )*pc : ", log, re.M):
        return "arm64"
    if re.search(r"PC is at |\] \([A-Za-z_0-9.]+\) from \[<", log):
        return "arm"
    return "x86_64"


def stem(title):
    return title.split(" in ")[0] if title else None


def first_crash(log, reader):
    """The first crash krepro finds in a log, by the run's reader or
    classify's, or None."""
    if reader == "classify":
        return next((c for c, _ in classify.reports_of(io.StringIO(log))), None)
    return next(iter(console.crashes(log)), None)


def row(name, log, want, reader, corrupted=False):
    """One log judged: want is syzkaller's title (None: no report)."""
    first = first_crash(log, reader)
    got = first["culprit"] if first else None
    said = bool(first and first.get("corrupted"))
    return {"file": name, "arch": arch_of(log), "want": want, "got": got,
            "corrupted": corrupted, "said corrupted": said,
            "corrupted too": bool(want) and corrupted and said,
            "wrongly corrupted": bool(want) and not corrupted and said,
            "found": bool(want) and bool(got), "clean": not want and not got,
            "stem": bool(want) and stem(got) == stem(want),
            "title": bool(want) and got == want}


def figures(rows):
    with_r = [r for r in rows if r["want"]]
    without = [r for r in rows if not r["want"]]

    def share(sub, key):
        n = sum(r[key] for r in sub)
        return {"n": n, "of": len(sub), "percent": round(100 * n / len(sub), 1) if sub else None}
    broken = [r for r in with_r if r["corrupted"]]
    whole = [r for r in with_r if not r["corrupted"]]
    return {"files": len(rows), "report found": share(with_r, "found"),
            "no report, none found": share(without, "clean"),
            "stem equal": share(with_r, "stem"), "title equal": share(with_r, "title"),
            "corrupted, said so": share(broken, "corrupted too"),
            "not corrupted, said so": share(whole, "wrongly corrupted")}


def share_text(v):
    return f"{v['n']}/{v['of']} ({v['percent']}%)" if v["of"] else "0/0"


def show(name, figs):
    parts = [f"{k} {share_text(v)}" for k, v in figs.items() if k != "files"]
    return f"{name:<16} {figs['files']:>4} files: " + "; ".join(parts)


def by_arch(out, part, rows):
    """Add one part's figures per arch to out."""
    for arch in sorted({r["arch"] for r in rows}):
        out[f"{part}, {arch}"] = figures([r for r in rows if r["arch"] == arch])
