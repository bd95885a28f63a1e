"""results.ktap and junit.xml from run.json, for CI systems: a row a test,
its verdict and its runs (results/render.py writes them with summary.md)."""
import re
from xml.sax.saxutils import escape, quoteattr

from ..untrusted import clean

# KTAP's directives after a result's "#".
DIRECTIVE = re.compile(r"(?i)\s*(SKIP|TODO|XFAIL|TIMEOUT|ERROR)\b")


def row_ok(rec, r):
    if rec.get("expect") and r.get("expected"):
        return bool(r.get("as_expected"))
    return r["decision"] in ("PASS", "SKIP")


def ktap(rec, by_row):
    rows = rec["rows"]
    out = ["KTAP version 1", f"1..{len(rows)}"]
    for i, r in enumerate(rows, 1):
        lines = [f"# {r['repro']}.{r['kernel']}.{x['run']}: {x['outcome']}: {x['evidence']} (log: {x['log']})"
                 for x in by_row.get((r["repro"], r["kernel"]), [])]
        lines.append(f"# {r['repro']}.{r['kernel']}: {r['cell']}" + (f" ({r['why']})" if r.get("why") else ""))
        if r.get("rate"):
            lines.append(f"# FAIL rate source: {r['rate']['source']}")
        out += [clean(line) for line in lines]
        # A name is one word with no directive in it: "#" would start one.
        name = clean(f"{r['repro']}.{r['kernel']}").replace("#", "\\x23").replace(" ", "_")
        cell = clean(r["cell"])
        if DIRECTIVE.match(cell) and r["decision"] != "SKIP":
            cell = "cell: " + cell    # a record's cell may not pass for a directive
        skip = " # SKIP" if r["decision"] == "SKIP" else ""
        out.append(f"{'ok' if row_ok(rec, r) else 'not ok'} {i} {name} # {cell}"
                   if not skip else f"ok {i} {name}{skip} {cell}")
    return "\n".join(out) + "\n"


def xattr(v):
    """An XML attribute of a record's string: cleaned first, since XML 1.0
    has no way to write most control characters at all."""
    return quoteattr(clean(v))


def junit(rec, by_row, results):
    rows = rec["rows"]
    fails = sum(1 for r in rows if not row_ok(rec, r) and r["decision"] in ("FAIL", "PASS"))
    errors = sum(1 for r in rows if not row_ok(rec, r) and r["decision"] not in ("FAIL", "PASS", "SKIP"))
    skips = sum(1 for r in rows if r["decision"] == "SKIP")
    total = sum((x.get("seconds") or 0) for x in rec["runs"])
    x = ['<?xml version="1.0" encoding="UTF-8"?>',
         f'<testsuite name="krepro" tests="{len(rows)}" failures="{fails}" errors="{errors}" '
         f'skipped="{skips}" time="{total:.1f}">']
    for r in rows:
        rs = by_row.get((r["repro"], r["kernel"]), [])
        t = sum((y.get("seconds") or 0) for y in rs)
        x.append(f'  <testcase classname={xattr(r["repro"])} name={xattr(r["kernel"])} time="{t:.1f}">')
        x.append("    <properties>")
        props = {"verdict": r["cell"], "decision": r["decision"], "runs": r["runs"],
                 "expected": r.get("expected") or "", "target_miss": r.get("target_miss")}
        if r.get("rate"):
            props.update(rate_low=f"{r['rate']['low']:.4f}", rate_source=r["rate"]["source"])
        if r.get("miss") is not None:
            props["miss"] = f"{r['miss']:.5f}"
        for k, v in props.items():
            x.append(f"      <property name={xattr(k)} value={xattr(v)}/>")
        x.append("    </properties>")
        first = next((y for y in rs if y["outcome"] == r["decision"]), rs[-1] if rs else None)
        msg = xattr(f"{r['cell']}: {first['evidence'] if first else ''} (log: {first['log'] if first else '-'})")
        if not row_ok(rec, r):
            tag = "failure" if r["decision"] in ("FAIL", "PASS") else "error"
            x.append(f"    <{tag} message={msg}/>")
        elif r["decision"] == "SKIP":
            x.append(f"    <skipped message={msg}/>")
        out = "\n".join(clean(f"run {y['run']}: {y['outcome']} {y.get('seconds') or 0:.1f}s {y['evidence']} "
                              f"(log: {y['log']})") for y in rs)
        x.append(f"    <system-out>{escape(out)}</system-out>")
        x.append("  </testcase>")
    x.append("</testsuite>")
    return "\n".join(x) + "\n"
