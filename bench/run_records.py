"""What bench's records keep of krepro's runs (a bisect.json, a gate's or a
fixcheck's results): this machine's paths taken out, a bisection's line of
what the docs state, and the record written."""
import json

MACHINE = "2 cores, 24 GiB, Debian 12, QEMU TCG (shared with other work)"


def scrub(v, places):
    if isinstance(v, dict):
        return {k: scrub(x, places) for k, x in v.items()}
    if isinstance(v, list):
        return [scrub(x, places) for x in v]
    if isinstance(v, str):
        for path, name in places:
            v = v.replace(path, name)
    return v


def summary(d):
    c = d.get("culprit") or {}
    guests = sum(s.get("runs", 0) for s in d["steps"])
    return {"repro": d["repro"], "rate_mode": d["rate_mode"],
            "rate": (d.get("rate") or {}).get("source"), "exit": d["exit"],
            "culprit": c.get("commit"), "culprit_subject": c.get("subject"),
            "confidence": d.get("confidence"), "steps": len(d["steps"]), "guests": guests,
            "build_seconds": round(sum(s.get("build_seconds") or 0 for s in d["steps"]), 1),
            "started": d["started"], "finished": d["finished"]}


def write(out, rec, places):
    """The record, paths scrubbed, to out; its figures to stdout."""
    with open(out, "w") as f:
        json.dump(scrub(rec, places), f, indent=1, ensure_ascii=False)
        f.write("\n")
    print(json.dumps(rec["figures"], indent=1, ensure_ascii=False))
