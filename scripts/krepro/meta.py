"""What each reproducer declares about itself: build/repro/<id>.json, which
the build writes from the reproducer's --describe. Read here, once."""
import difflib
import glob
import json
import os
import re
import subprocess

from . import paths
from .paths import TOP, build


class MetaError(Exception):
    pass


def load_all(build_dir=None):
    build_dir = build_dir or build()
    metas = {}
    for path in sorted(glob.glob(os.path.join(build_dir, "repro", "*.json"))):
        try:
            with open(path) as f:
                m = json.load(f)
        except ValueError as e:
            raise MetaError(f"{path}: not JSON ({e}); rebuild with make build")
        metas[m["name"]] = m
    return metas


def ensure_built(quiet=True):
    """The reproducers and their metadata (make build): cheap when current."""
    p = subprocess.run(["make", "-C", TOP, "--no-print-directory", "-s", f"BUILD={build()}", "build"],
                       capture_output=quiet, text=True)
    if p.returncode != 0:
        raise MetaError("building the reproducers failed:\n" + (p.stdout or "") + (p.stderr or ""))


def for_arch(metas, arch, matrix_only=False):
    return [n for n, m in sorted(metas.items())
            if arch in (m.get("arches") or ["x86_64"])
            and not (matrix_only and m.get("not_in_matrix"))]


# --- what the source tree says, before anything is built ---------------------

_ARCHES_RE = re.compile(r"^\s*krepro_reproducer\s*\(([^)]*)\)", re.M)
_NOT_IN_MATRIX_RE = re.compile(r"\.not_in_matrix\s*=")


def _source_arches(cmake_text):
    """The ARCHES krepro_reproducer() is called with (default x86_64)."""
    m = _ARCHES_RE.search(cmake_text)
    if not m:
        return None
    words = m.group(1).split()
    arches, on = [], False
    for w in words:
        if w in ("ARCHES", "LIBS", "DYNAMIC", "PROGRAMS"):
            on = w == "ARCHES"
        elif on:
            arches.append(w)
    return arches or ["x86_64"]


def sources(repro_dir=None):
    """Every reproducer of the source tree: {name: {"arches": [...],
    "in_matrix": bool}}, read from repro/<id>/CMakeLists.txt (its
    krepro_reproducer() call) and repro/<id>/<id>.c (a .not_in_matrix
    field). Names and arches are checked against this before any build.
    KREPRO_REPRO_DIR names another repro/ (the runner's tests use fakes)."""
    repro_dir = repro_dir or paths.repro_dir()
    table = {}
    for path in sorted(glob.glob(os.path.join(repro_dir, "*", "CMakeLists.txt"))):
        d = os.path.dirname(path)
        name = os.path.basename(d)
        if name == "lib":
            continue
        with open(path, errors="replace") as f:
            arches = _source_arches(f.read())
        if arches is None:
            continue
        src = os.path.join(d, name + ".c")
        try:
            with open(src, errors="replace") as f:
                in_matrix = not _NOT_IN_MATRIX_RE.search(f.read())
        except OSError:
            in_matrix = False
        table[name] = {"arches": arches, "in_matrix": in_matrix}
    return table


def source_names(table, arch, matrix_only=False):
    return [n for n, s in sorted(table.items())
            if arch in s["arches"] and (s["in_matrix"] or not matrix_only)]


def check_names(table, arch, names):
    """None when every name is a reproducer for arch; else one line saying
    what is wrong with the first bad one and what would be right."""
    for n in names:
        s = table.get(n)
        if s is None:
            close = difflib.get_close_matches(n, table, n=3, cutoff=0.6)
            hint = (f"; did you mean {' or '.join(close)}?" if close
                    else f"; the reproducers for {arch}: {' '.join(source_names(table, arch))}")
            return f"unknown reproducer '{n}'{hint}"
        if arch not in s["arches"]:
            runs = " ".join(s["arches"])
            hint = " ".join(f"--arch {a}" for a in s["arches"])
            return (f"'{n}' runs on {runs} guests, not {arch}: add {hint}"
                    if arch == "x86_64" else
                    f"'{n}' runs on {runs} guests, not {arch}: drop --arch {arch}"
                    + ("" if "x86_64" in s["arches"] else f" and add {hint}"))
    return None
