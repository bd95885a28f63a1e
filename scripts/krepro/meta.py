"""What each reproducer declares about itself: build/repro/<id>.json, which
the build writes from the reproducer's --describe. Read here, once."""
import glob
import json
import os
import subprocess

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
