"""Where things are: the repository, the build, the cache."""
import hashlib
import os

from .untrusted import Refused, cut, safe_git, unwritable

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(TOP, "scripts")


def cache():
    """$KREPRO_CACHE, else the user's cache directory's krepro/. Checked
    where it is used: a file there is a usage error (untrusted.Refused)."""
    c = os.environ.get("KREPRO_CACHE")
    what = f"KREPRO_CACHE={cut(c)}" if c else None
    if not c:
        c = os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "krepro")
        what = f"the cache {cut(c)}"
    if os.path.exists(c) and not os.path.isdir(c):
        raise Refused(f"{what}: not a directory (krepro keeps its kernels, disks and locks there)")
    if not os.path.isabs(c):
        # Each command would find it elsewhere: make and the scripts change directory.
        raise Refused(f"{what}: not an absolute path")
    place = unwritable(c)
    if place:
        raise Refused(f"{what}: {place}")
    return c


def repro_dir():
    """The reproducers' sources: repro/, or KREPRO_REPRO_DIR (the runner's
    tests use fakes)."""
    return os.environ.get("KREPRO_REPRO_DIR") or os.path.join(TOP, "repro")


def build():
    return os.environ.get("KREPRO_BUILD") or os.path.join(TOP, "build")


def kernels():
    return os.environ.get("KREPRO_KERNELS") or os.path.join(cache(), "kernels")


def read(path):
    """A text file's contents, or "" when it is missing (a run cut short)."""
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def file_sha256(path):
    """The sha256 of a file's bytes, read in 1 MiB pieces (kernel images,
    .debs, disks), as hex."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def git_commit():
    """krepro's own commit, for the records."""
    p = safe_git(TOP, "rev-parse", "--short=12", "HEAD")
    return p.stdout.strip() if p.returncode == 0 else "unknown"
