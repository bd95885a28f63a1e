"""A kernel report with every frame decoded to file:line, by the kernel's own
scripts/decode_stacktrace.sh and the vmlinux of the kernel that printed it."""
import os
import re
import subprocess

from .arches import ARCHES
from . import branches
from .paths import cache

# A decoded frame names its source line: "j1939_can_recv (net/can/j1939/main.c:108)".
SOURCE_LINE = re.compile(r"[\w./-]+\.[chS]:\d+")
DOT_PREFIX = re.compile(r"(?<![\w./-])(?:\./)+(?=[\w-])")


def report_lines(console, crash, lines=40):
    """The console lines of one crash (reports.crashes()), timestamps kept:
    from its first header to its end-of-trace line, at most `lines`."""
    out = []
    for raw in console.splitlines()[crash["line"] - 1:]:
        out.append(raw.rstrip("\r"))
        if "---[ end " in raw or len(out) >= lines:
            break
    return out


def tool(arch, name):
    return ARCHES[arch]["cross"] + name


def has_line_info(vmlinux, arch):
    """Does vmlinux carry DWARF line tables (.debug_line)?"""
    try:
        p = subprocess.run([tool(arch, "readelf"), "-S", "--wide", vmlinux],
                           capture_output=True, text=True)
    except OSError:
        return False
    return p.returncode == 0 and ".debug_line" in p.stdout


def script(tree=None):
    """decode_stacktrace.sh and the tree it belongs to: a --tree's own, else
    one of krepro's branch trees (the script decodes any kernel's vmlinux)."""
    for t in (tree, *(branches.tree_path(cache(), b) for b in branches.BRANCHES)):
        if t and os.path.isfile(os.path.join(t, "scripts", "decode_stacktrace.sh")):
            return os.path.join(t, "scripts", "decode_stacktrace.sh"), t
    return None, None


def decode(lines, vmlinux, arch, tree=None, modules=None, timeout=300):
    """(decoded lines, None), or (None, why not)."""
    if not vmlinux or not os.path.isfile(vmlinux):
        return None, "no vmlinux for this kernel (--vmlinux gives one)"
    if not has_line_info(vmlinux, arch):
        return None, f"{vmlinux} has no line information (.debug_line)"
    s, base = script(tree)
    if not s:
        return None, "no scripts/decode_stacktrace.sh (scripts/kernels.sh tree unpacks one)"
    # krepro's and a --tree's builds name their sources under `base`; a
    # distribution's debug vmlinux names its own build directory ("auto").
    ours = tree or os.path.realpath(vmlinux).startswith(os.path.realpath(cache()) + os.sep)
    argv = ["bash", s, vmlinux, base if ours else "auto"] + ([modules] if modules else [])
    env = dict(os.environ, CROSS_COMPILE=ARCHES[arch]["cross"])
    try:
        p = subprocess.run(argv, input="\n".join(lines) + "\n", capture_output=True, text=True,
                           env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        return None, f"decode_stacktrace.sh took over {timeout} s"
    if p.returncode != 0 or not p.stdout.strip():
        why = (p.stderr.strip().splitlines() or [f"exit {p.returncode}"])[-1]
        return None, f"decode_stacktrace.sh failed: {why}"
    # krepro's builds map the object directory to "." in the debug info
    # (kernels.sh ccache_paths): addr2line then says ././kernel/fork.c.
    return [DOT_PREFIX.sub("", l) for l in p.stdout.rstrip("\n").splitlines()], None


def decoded_frames(lines):
    """How many lines name a source line."""
    return sum(1 for l in lines if SOURCE_LINE.search(l))
