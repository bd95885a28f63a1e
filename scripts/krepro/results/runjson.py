"""run.json as the reports read it: loaded and checked against what they
read (load(), BadRun), and any fault of it said in one line (guarded()).
The runner writes it (runner.RunRecord)."""
import json
import os
import sys

from ..protocol import USAGE
from ..untrusted import RUN_JSON_MAX, Refused, cut, inside, lexically_inside, read_bytes, say, write_whole


class BadRun(Exception):
    """A run directory or run.json that cannot be rendered; str() says which
    file and why, in one line."""


NONE = type(None)
ANY = object
NUM = (int, float)
# What rendering reads from run.json: key -> (required, allowed types). A
# list's items are checked by ITEMS; keys not named here are left alone.
REPORT_RECORD = {
    "rows": (True, list), "runs": (True, list), "finished": (True, (str, NONE)),
    "arch": (True, ANY), "started": (True, ANY), "mode": (True, dict),
    "interrupted": (False, (bool, NONE)), "expect": (False, (bool, NONE)),
    "any_report": (False, (bool, NONE)), "jobs": (False, (int, NONE)),
    "cut_off": (False, (list, NONE)), "prepare": (False, (list, NONE)),
    "kernels": (False, (list, NONE)),
}
GATE_RECORD = {
    "rows": (True, list), "runs": (True, list), "finished": (True, (str, NONE)),
    "interrupted": (False, (bool, NONE)), "kernels": (False, (list, NONE)),
}
ROW = {"repro": (True, str), "kernel": (True, str), "decision": (True, str), "cell": (True, str),
       "counts": (True, dict), "runs": (True, int), "role": (False, (str, NONE)),
       "expected": (False, (str, NONE)), "as_expected": (False, (bool, NONE)), "rate": (False, (dict, NONE)),
       "miss": (False, (*NUM, NONE)), "why": (False, (str, NONE))}
GATE_ROW = {k: ROW[k] for k in ("repro", "kernel", "decision", "cell")}
RUN = {"repro": (True, str), "kernel": (True, str), "outcome": (True, str), "run": (True, ANY),
       "evidence": (True, (str, NONE)), "log": (True, str), "seconds": (False, (*NUM, NONE)),
       "ktap": (False, (str, NONE)), "report": (False, (str, NONE)), "reports": (False, (list, NONE)),
       "lava_results": (False, (dict, NONE))}
GATE_RUN = {k: RUN[k] for k in ("repro", "kernel", "outcome", "evidence", "log")}
ITEMS = {
    "report": {"rows": ROW, "runs": RUN, "cut_off": {k: (True, ANY) for k in ("repro", "kernel", "run", "log")},
               "prepare": {"repro": (True, ANY), "outcome": (True, ANY), "log": (True, ANY),
                           "seconds": (True, NUM)},
               "kernels": {"label": (False, str)}},
    "gate": {"rows": GATE_ROW, "runs": GATE_RUN, "kernels": {"label": (False, str)}},
}
RATE = {"source": (True, str), "low": (True, NUM)}
CRASH = {"title": (False, (str, NONE)), "line": (False, int), "frames": (False, list)}
# The paths a record names, per list: each must stay inside the run directory.
PATHS = {"runs": ("log", "ktap", "report", "lava_log", "dir"), "cut_off": ("log",), "prepare": ("log",)}
JSON_TYPES = ((bool, "a boolean"), (int, "a number"), (float, "a number"), (str, "a string"),
              (list, "a list"), (dict, "an object"), (NONE, "null"))


def json_type(v):
    return next(name for t, name in JSON_TYPES if isinstance(v, t))


def type_names(types):
    types = types if isinstance(types, tuple) else (types,)
    names = []
    for t in types:
        n = dict(JSON_TYPES)[t]
        if n not in names:
            names.append(n)
    return " or ".join(names)


def mismatch(obj, schema, where):
    """Why obj does not fit schema (a sentence), or None."""
    if not isinstance(obj, dict):
        return f"{where or 'the record'} is {json_type(obj)}, not an object"
    for key, (required, types) in schema.items():
        if key not in obj:
            if required:
                return f"{where}{'.' if where else ''}{key} is missing"
            continue
        if types is not ANY and not isinstance(obj[key], types):
            return (f"{where}{'.' if where else ''}{key} is {json_type(obj[key])}, "
                    f"not {type_names(types)}")
    return None


def outside(item, key, i):
    """Why a path item names leads out of the run directory, or None: a
    record handed over could name /etc/passwd or ../../x as a log."""
    for field in PATHS.get(key, ()):
        v = item.get(field)
        if v is not None and not lexically_inside(v):
            return f"{key}[{i}].{field} is {cut(repr(v))}, not a path inside the run directory"
    return None


def record_mismatch(rec, kind):
    """Why rec is not a run record render() (kind "report") or gate() ("gate")
    can read, or None."""
    why = mismatch(rec, REPORT_RECORD if kind == "report" else GATE_RECORD, "")
    if why:
        return why
    for key, schema in ITEMS[kind].items():
        for i, item in enumerate(rec.get(key) or []):
            why = mismatch(item, schema, f"{key}[{i}]") or outside(item, key, i)
            if why:
                return why
            if kind != "report":
                continue
            if key == "rows" and item.get("rate"):
                why = mismatch(item["rate"], RATE, f"{key}[{i}].rate")
            if key == "runs":
                for j, crash in enumerate(item.get("reports") or []):
                    why = why or mismatch(crash, CRASH, f"{key}[{i}].reports[{j}]")
                    if not why and any(not isinstance(f, str) for f in crash.get("frames") or []):
                        why = f"{key}[{i}].reports[{j}].frames holds what is not a string"
            if why:
                return why
    if kind == "report":
        mode = rec["mode"]
        want = {"kind": (True, str), "repeat": (True, ANY)} if mode.get("kind") == "fixed" else \
            {"kind": (True, str), "miss": (True, NUM), "cap": (True, ANY)}
        why = mismatch(mode, want, "mode")
        if not why and "miss" in want and not 0 < mode["miss"] < 1:
            why = f"mode.miss is {mode['miss']}, not a probability"
        return why
    return None


def load(results, kind="report"):
    """run.json of a run directory, checked to be a run record that render()
    (kind "report") or gate() ("gate") can read; BadRun otherwise."""
    if not os.path.isdir(results):
        raise BadRun(f"{results}: {'not a directory' if os.path.exists(results) else 'no such directory'}")
    path = os.path.join(results, "run.json")
    try:
        inside(results, "run.json", path)
        text = read_bytes(path, RUN_JSON_MAX).decode("utf-8")
    except Refused as e:
        raise BadRun(f"{e}: not a krepro run record") from None
    except FileNotFoundError:
        raise BadRun(f"{path}: no such file (not a krepro run directory)") from None
    except IsADirectoryError:
        raise BadRun(f"{path}: is a directory, not a krepro run record") from None
    except UnicodeDecodeError:
        raise BadRun(f"{path}: not a krepro run record (not UTF-8 text)") from None
    except OSError as e:
        raise BadRun(f"{path}: cannot read it ({e.strerror or e})") from None
    if not text.strip():
        raise BadRun(f"{path}: not a krepro run record (empty file)")
    try:
        rec = json.loads(text)
    except json.JSONDecodeError as e:
        cut = "truncated JSON" if e.pos >= len(text.rstrip()) else "not JSON"
        raise BadRun(f"{path}: not a krepro run record ({cut}: {e.msg} at line {e.lineno} "
                     f"column {e.colno})") from None
    except RecursionError:
        raise BadRun(f"{path}: not a krepro run record (nested too deeply)") from None
    why = record_mismatch(rec, kind)
    if why:
        raise BadRun(f"{path}: not a krepro run record ({why})")
    return rec


def refuse(prog, err):
    print(f"{prog}: {say(err)}", file=sys.stderr)
    return USAGE


def guarded(prog, results, work):
    """work()'s status; a BadRun, or a fault of the record that the record
    check let through, as one line on stderr and USAGE."""
    try:
        return work()
    except (BadRun, Refused) as e:
        return refuse(prog, e)
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, ArithmeticError) as e:
        return refuse(prog, f"{os.path.join(results, 'run.json')}: not a krepro run record "
                            f"(unexpected content: {type(e).__name__}: {e})")


def write(path, text):
    """path written whole (a temporary file renamed over it). The temporary
    is made new, never opened through a link a run directory someone handed
    over may hold in its place."""
    try:
        write_whole(path, text)
    except OSError as e:
        raise BadRun(f"{path}: cannot write it ({e.strerror or e})") from None
