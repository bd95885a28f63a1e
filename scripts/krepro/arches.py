"""The guest arch table, scripts/arches.tsv (the shell scripts read it too)."""
import os

from . import tables
from .paths import SCRIPTS

TABLE = os.path.join(SCRIPTS, "arches.tsv")


def load(path=TABLE):
    return tables.load(path, "arch")


ARCHES = load()


def image_name(arch):
    return os.path.basename(ARCHES[arch]["image"])


def is_kernel_image(arch, path):
    a = ARCHES[arch]
    want = bytes.fromhex(a["magic_hex"])
    try:
        with open(path, "rb") as f:
            f.seek(int(a["magic_off"]))
            return f.read(len(want)) == want
    except OSError:
        return False


def is_kernel_head(arch, head):
    """is_kernel_image() of an image's first bytes."""
    a = ARCHES[arch]
    off, want = int(a["magic_off"]), bytes.fromhex(a["magic_hex"])
    return head[off:off + len(want)] == want


def image_kind(arch):
    return {"x86_64": "an x86 bzImage (no HdrS boot header)",
            "arm": "an ARM zImage (no zImage magic at 0x24)"}.get(arch, f"a {arch} kernel image")
