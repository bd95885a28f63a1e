"""The stable branch table, scripts/branches.tsv (the shell scripts read it
too), and which branch a kernel of the user's belongs to."""
import os
import re
import subprocess

from . import tables
from .paths import SCRIPTS

TABLE = os.path.join(SCRIPTS, "branches.tsv")


def load(path=TABLE):
    return tables.load(path, "branch")


BRANCHES = load()
DEFAULT = next(iter(BRANCHES))


def of_release(release):
    """The stable branch (major.minor) a kernel release string names
    ("6.12.118+deb12-cloud-amd64" -> "6.12"), or None."""
    m = re.match(r"(\d+)\.(\d+)(?:[.\-+~ ]|$)", release or "")
    return f"{m.group(1)}.{m.group(2)}" if m else None


def of_bzimage(path):
    """The branch of an x86 bzImage, from the kernel version string its boot
    header points at (Documentation/arch/x86/boot.rst: kernel_version at
    0x20e, an offset from 0x200), or None."""
    try:
        with open(path, "rb") as f:
            f.seek(0x20E)
            off = int.from_bytes(f.read(2), "little")
            if not off:
                return None
            f.seek(0x200 + off)
            text = f.read(128).split(b"\0", 1)[0].decode("ascii", "replace")
    except (OSError, ValueError):
        return None
    return of_release(text)


def of_tree(tree):
    """The branch of a kernel source tree, from its top Makefile's VERSION
    and PATCHLEVEL, or None."""
    got = {}
    try:
        with open(os.path.join(tree, "Makefile"), errors="replace") as f:
            for _, line in zip(range(20), f):
                m = re.match(r"(VERSION|PATCHLEVEL)\s*=\s*(\d+)\s*$", line)
                if m:
                    got[m.group(1)] = m.group(2)
    except OSError:
        return None
    return f"{got['VERSION']}.{got['PATCHLEVEL']}" if len(got) == 2 else None


def tree_path(cache, branch):
    """The branch's kernel tree under krepro's cache."""
    return os.path.join(cache, f"linux-{branch}")


def installed_version(branch):
    """The Debian version of the branch's source package on this host, or None."""
    p = subprocess.run(["dpkg-query", "-W", "-f=${Version}", BRANCHES[branch]["package"]],
                       capture_output=True, text=True)
    return p.stdout.strip() or None if p.returncode == 0 else None
