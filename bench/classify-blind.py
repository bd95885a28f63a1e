#!/usr/bin/env python3
"""krepro's classifier on real console logs from two other projects' test
suites, each log with the verdict that project's own tests expect; run once,
after all tuning (none of these logs was looked at while tuning).

usage: bench/classify-blind.py [--logspec DIR] [--lava DIR] [--reader run|classify]
           [--record FILE --commit HASH --machine TEXT --sources TEXT] [--what TEXT]

--reader: the guest run's reader (console.crashes(), the default) or the
  classify command's (classify.reports_of(): a log as a user has it, and no
  report in what firmware prints before the kernel's banner).

--logspec DIR: a checkout of kernelci/logspec. Its tests/test_linux_boot.py,
  test_baseline.py and test_kselftest.py list, for each log under
  tests/logs/, the errors logspec must find (pytest parameters, read here
  with ast.literal_eval). A log expects a kernel report when one of them is
  a linux.kernel.{bug,panic,warning,ubsan} error, none when it has none or
  only linux.kernel.error_return_code (a driver's probe error); a log whose
  only errors are test results (test.baseline.dmesg, linux.kselftest) is
  left out.
--lava DIR: a checkout of Linaro/lava. Its tests/lava_dispatcher/
  test_messages.py runs LAVA's kernel message parser on kernel-*.txt there
  and expects, per log, a JobError (a kernel panic), an empty result or N
  results of named kinds (read from the test's assertions with ast). A test
  that expects neither (a bootloader error) is left out.

Figures: logs expecting a report where krepro finds one; logs expecting
none where it finds none; and of the logs whose first expected kind is
known, those where krepro's first report has a header of that kind
(logspec bug/warning/ubsan and LAVA bug/warning/oops/kasan/kfence to the
table's BUG, WARNING, UBSAN, OOPS, KASAN, KFENCE; a panic to a PANIC header
in any report, krepro joining a panic to the report before it). Nothing of
either project is committed here: the record holds figures and log names.
"""
import ast
import datetime
import glob
import io
import os
import re
import sys

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro.reports import classify  # noqa: E402
import proof_records as records  # noqa: E402
from krepro.reports import console  # noqa: E402
from krepro.options import Parser  # noqa: E402

KERNEL_TYPES = {"linux.kernel.bug": "BUG", "linux.kernel.panic": "PANIC",
                "linux.kernel.warning": "WARNING", "linux.kernel.ubsan": "UBSAN"}
LAVA_KINDS = {"bug": "BUG", "warning": "WARNING", "oops": "OOPS", "kasan": "KASAN",
              "kfence": "KFENCE", "panic": "PANIC"}


def logspec_cases(top):
    """(set, log path, expects a report or None when left out, first kind)."""
    for test in ("test_linux_boot.py", "test_baseline.py", "test_kselftest.py"):
        tree = ast.parse(open(os.path.join(top, "tests", test)).read())
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "parametrize"):
                continue
            for el in node.args[1].elts:
                log, _, expected = ast.literal_eval(el)
                types = [e.get("error_type") for e in expected.get("errors", [])]
                kernel = [KERNEL_TYPES[t] for t in types if t in KERNEL_TYPES]
                other = [t for t in types if t not in KERNEL_TYPES and t != "linux.kernel.error_return_code"]
                want = True if kernel else (None if other else False)
                path = glob.glob(os.path.join(top, "tests", "logs", "*", log))
                if path:
                    yield "logspec", path[0], want, kernel[0] if kernel else None


def lava_expectation(fn):
    """(log name, expects a report or None, first kind) of one LAVA test."""
    log, raises, count, kinds, each = None, False, None, {}, None
    for node in ast.walk(fn):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and \
                re.fullmatch(r"kernel-.*\.txt", node.value):
            log = node.value
        if isinstance(node, ast.Name) and node.id == "JobError":
            raises = True
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "assertEqual"):
            continue
        a, b = node.args[:2]
        src = ast.unparse(a)
        if src == "results" and ast.unparse(b) == "[]":
            count = 0
        elif src == "len(results)" and isinstance(b, ast.Constant):
            count = b.value
        elif m := re.fullmatch(r"results\[(\d+)\]\['kind'\]", src):
            kinds[int(m.group(1))] = b.value
        elif src == "res['kind']":
            each = b.value
    first = kinds.get(0) or each or ("panic" if raises else None)
    want = True if raises or count else (False if count == 0 else None)
    return log, want, LAVA_KINDS.get(first) if first else None


def lava_cases(top):
    here = os.path.join(top, "tests", "lava_dispatcher")
    tree = ast.parse(open(os.path.join(here, "test_messages.py")).read())
    for fn in ast.walk(tree):
        if isinstance(fn, ast.FunctionDef) and fn.name.startswith("test_"):
            log, want, kind = lava_expectation(fn)
            if log:
                yield "lava", os.path.join(here, log), want, kind


def crashes(text, reader):
    """The crashes krepro finds in a log, by the run's reader or classify's."""
    if reader == "classify":
        return [c for c, _ in classify.reports_of(io.StringIO(text))]
    return console.crashes(text)


def judge(src, path, want, kind, reader="run"):
    with open(path, encoding="utf-8", errors="replace") as f:
        cs = crashes(f.read(), reader)
    got = cs[0]["culprit"] if cs else None
    if kind == "PANIC":
        agrees = any(k == "PANIC" for c in cs for k, _ in c["headers"])
    else:
        agrees = bool(cs) and any(k == kind for k, _ in cs[0]["headers"])
    return {"set": src, "log": os.path.basename(path), "want": want, "kind": kind,
            "reports": len(cs), "first": got, "kind agrees": agrees if kind and want else None}


def share(rows, key, pick):
    sub = [r for r in rows if pick(r)]
    n = sum(1 for r in sub if r[key])
    return {"n": n, "of": len(sub), "text": f"{n}/{len(sub)}"}


def figures(rows):
    for r in rows:
        r["found"] = r["want"] is True and r["reports"] > 0
        r["clean"] = r["want"] is False and r["reports"] == 0
    return {"logs": len(rows), "left out": sum(r["want"] is None for r in rows),
            "report found": share(rows, "found", lambda r: r["want"] is True),
            "no report, none found": share(rows, "clean", lambda r: r["want"] is False),
            "first kind agrees": share(rows, "kind agrees", lambda r: r["kind agrees"] is not None)}


def main(argv):
    p = Parser(prog="bench/classify-blind.py", allow_abbrev=False)
    p.add_argument("--logspec", help="a checkout of kernelci/logspec")
    p.add_argument("--lava", help="a checkout of Linaro/lava")
    p.add_argument("--record", help="write the figures to this JSON file")
    p.add_argument("--commit", default=None, help="the krepro commit measured")
    p.add_argument("--machine", default="", help="the machine it ran on")
    p.add_argument("--sources", default="", help="the two projects' commits")
    p.add_argument("--reader", choices=("run", "classify"), default="run",
                   help="the guest run's reader (default) or the classify command's")
    p.add_argument("--what", help="the record's what (default: a first, blind run's)")
    a = p.parse_args(argv)
    for top, want in ((a.logspec, os.path.join("tests", "test_linux_boot.py")),
                      (a.lava, os.path.join("tests", "lava_dispatcher", "test_messages.py"))):
        if top and not os.path.isfile(os.path.join(top, want)):
            p.error(f"{top}: no {want} (a checkout of kernelci/logspec or Linaro/lava)")
    cases = (list(logspec_cases(a.logspec)) if a.logspec else []) + (list(lava_cases(a.lava)) if a.lava else [])
    if not cases:
        p.error("give --logspec, --lava or both")
    rows = [judge(*c, a.reader) for c in cases]
    raw = [f"{r['set']:<8} {r['log']:<40} want {str(r['want']):<5} {r['kind'] or '-':<8} "
           f"krepro {r['reports']} report(s), first {r['first']!r}, kind agrees {r['kind agrees']}"
           for r in rows]
    out = {"all": figures(rows)}
    for s in sorted({r["set"] for r in rows}):
        out[s] = figures([r for r in rows if r["set"] == s])
    raw += [f"{k:<8} {v['logs']} logs ({v['left out']} left out): report found {v['report found']['text']}; "
            f"no report, none found {v['no report, none found']['text']}; first kind agrees "
            f"{v['first kind agrees']['text']}" for k, v in out.items()]
    print("\n".join(raw))
    if a.record:
        every = out["all"]
        rec = {"kind": "classify-blind", "date": datetime.date.today().isoformat(),
               "what": a.what or "bench/classify-blind.py: krepro's classifier on the console logs of "
                       "kernelci/logspec's and Linaro/lava's own tests, against the verdicts those tests "
                       "expect; run once after all tuning, none of the logs looked at before",
               "machine": a.machine, "commit": a.commit, "sources": a.sources, "reader": a.reader,
               "figures": {f"blind: {k}": every[k]["text"]
                           for k in ("report found", "no report, none found", "first kind agrees")},
               "parts": out, "raw": "\n".join(raw)}
        records.write(a.record, rec)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
