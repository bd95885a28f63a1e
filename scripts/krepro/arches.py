"""The guest arch table, scripts/arches.tsv (the shell scripts read it too)."""
import os

from .paths import SCRIPTS

TABLE = os.path.join(SCRIPTS, "arches.tsv")


def load(path=TABLE):
    arches, header = {}, None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#arch\t"):
                header = line[1:].split("\t")
                continue
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if header is None or len(cols) != len(header):
                raise ValueError(f"{path}: row {cols[0]!r} does not fit the #arch header")
            arches[cols[0]] = {k: ("" if v == "-" else v) for k, v in zip(header, cols)}
    return arches


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


def image_kind(arch):
    return {"x86_64": "an x86 bzImage (no HdrS boot header)",
            "arm": "an ARM zImage (no zImage magic at 0x24)"}.get(arch, f"a {arch} kernel image")
