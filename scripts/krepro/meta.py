"""What each reproducer declares about itself: build/repro/<id>.json, which
the build writes from the reproducer's --describe. Read here, once."""
import dataclasses
import difflib
import glob
import json
import os
import re
import subprocess

from . import detectors
from .protocol import GUEST_CPUS
from . import paths
from .paths import TOP, build
from .protocol import DEFAULT_TIMEOUT, TIMEOUT_MARGIN


class MetaError(Exception):
    pass


@dataclasses.dataclass(frozen=True)
class Signature:
    """A kernel report that is the bug (struct krepro_signature)."""
    kind: str = None
    title: str = None       # regex searched in the report's title; None: any
    frame: str = None       # regex one function of its trace matches whole
    detectors: tuple = ()   # the options without which it is never printed

    @property
    def is_hang(self):
        return self.kind == "HANG"

    def label(self, n):
        """The signature as records name it: its place among the declared
        ones (1-based), its kind, title and frame ("#3 LIST
        /^list_(add|del) .../ in blk_mq_requeue_work")."""
        return (f"#{n} {self.kind}" + (f" /{self.title}/" if self.title else "")
                + (f" in {self.frame}" if self.frame else ""))


SIGNATURE_KEYS = frozenset(f.name for f in dataclasses.fields(Signature))


@dataclasses.dataclass(frozen=True)
class Reproducer:
    """What a reproducer declares (its --describe), with its defaults."""
    name: str
    summary: str = ""
    fix_commit: str = ""    # the upstream fix: "sha (\"subject\")"
    bug_commit: str = ""    # the upstream commit that brought the bug in
    seed: str = ""
    arches: tuple = ("x86_64",)
    not_in_matrix: str = ""   # why it is left out of the matrix; "": in it
    min_cpus: int = 1
    alone: bool = False       # its race odds were measured with the host to itself
    timeout: int = DEFAULT_TIMEOUT  # seconds for its whole run in the guest
    cmdline: str = ""         # its own kernel command line
    disk_mib: int = 0
    prepare: bool = False     # its disk is written once by the patched kernel
    needs_kconfigs: tuple = ()  # the options it needs to run
    cases: tuple = ()
    own_evidence: bool = True  # its cases can FAIL by themselves
    own_detectors: tuple = ()
    signatures: tuple = ()    # Signature

    @classmethod
    def from_json(cls, d):
        """From --describe's JSON; absent, null or empty fields take their
        defaults (metadata that predates a field means its default)."""
        fields = {f.name: f for f in dataclasses.fields(cls)}
        kw = {}
        for key, v in d.items():
            if key not in fields or v is None or (v == 0 and key in ("timeout", "min_cpus")):
                continue
            if key == "signatures":
                v = tuple(Signature(**{k: tuple(x) if k == "detectors" and x else x
                                       for k, x in s.items() if x is not None and k in SIGNATURE_KEYS})
                          for s in v)
            elif isinstance(v, list):
                v = tuple(v) or fields[key].default
            kw[key] = v
        return cls(**kw)

    @property
    def in_matrix(self):
        return not self.not_in_matrix

    @property
    def time_limit(self):
        """A guest's wall-clock limit: its run, and the boot and power-off."""
        return self.timeout + TIMEOUT_MARGIN

    @property
    def cpus(self):
        """A guest's vCPUs: the machine's usual, or more if it needs them."""
        return max(GUEST_CPUS, self.min_cpus)

    @property
    def hang_is_bug(self):
        """Its guest not ending in time is the bug (a HANG signature)."""
        return any(s.is_hang for s in self.signatures)

    @property
    def evidence_paths(self):
        """[(name, detectors)]: each signature, then its own evidence."""
        out = [(detectors.path_name(s), list(s.detectors)) for s in self.signatures]
        if self.own_evidence:
            out.append((detectors.OWN, list(self.own_detectors)))
        return out

    def missing_options(self, cfg):
        """The options it needs that a kernel's config cfg lacks."""
        return detectors.lacks(cfg, self.needs_kconfigs)


def json_problems(d):
    """What is wrong with a --describe's JSON d against Reproducer's fields
    (each present, of its type; no other key; each signature whole), as
    sentences; [] when nothing is."""
    out = []
    for f in dataclasses.fields(Reproducer):
        want = {tuple: list}.get(type(f.default), type(f.default)) if f.name != "name" else str
        v = d.get(f.name)
        if f.name not in d:
            out.append(f"no \"{f.name}\" in its --describe")
        elif not isinstance(v, want) or (want is int and isinstance(v, bool)):
            out.append(f"\"{f.name}\" is {v!r}, not a {want.__name__}")
    extra = set(d) - {f.name for f in dataclasses.fields(Reproducer)}
    if extra:
        out.append(f"unexpected keys {sorted(extra)}")
    keys = SIGNATURE_KEYS
    for i, sig in enumerate(d.get("signatures") or [] if isinstance(d.get("signatures"), list) else []):
        if not isinstance(sig, dict) or set(sig) != keys:
            out.append(f"signature {i + 1}: {sig!r} is not {{{', '.join(sorted(keys))}}}")
    return out


def read(path):
    try:
        with open(path) as f:
            d = json.load(f)
    except ValueError as e:
        raise MetaError(f"{path}: not JSON ({e}); rebuild with make build")
    if not isinstance(d, dict) or not isinstance(d.get("name"), str):
        raise MetaError(f"{path}: not a reproducer's description; rebuild with make build")
    # A key no field has is one an older build printed (a field since
    # renamed): from_json() would drop it and the field would read as unset.
    extra = sorted(set(d) - {f.name for f in dataclasses.fields(Reproducer)})
    if extra:
        raise MetaError(f"{path}: unknown key {extra[0]!r} (an older build's); rebuild with make build")
    return d


def load_all(build_dir=None):
    """{name: Reproducer} of every reproducer built."""
    build_dir = build_dir or build()
    metas = {}
    for path in sorted(glob.glob(os.path.join(build_dir, "repro", "*.json"))):
        r = Reproducer.from_json(read(path))
        metas[r.name] = r
    return metas


def ensure_built(quiet=True):
    """The reproducers and their metadata (make build): cheap when current."""
    p = subprocess.run(["make", "-C", TOP, "--no-print-directory", "-s", f"BUILD={build()}", "build"],
                       capture_output=quiet, text=True)
    if p.returncode != 0:
        raise MetaError("building the reproducers failed:\n" + (p.stdout or "") + (p.stderr or ""))


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
            # Names are lower case: XFS-NOWAIT-DIO is a typo of one.
            low = {k.lower(): k for k in table}
            close = ([low[n.lower()]] if n.lower() in low else
                     difflib.get_close_matches(n.lower(), table, n=3, cutoff=0.6))
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
