#!/usr/bin/env python3
"""docs/reference.md is what the commands' own help prints.

scripts/gen-reference makes the page from run-in-qemu.sh --help, gate.sh
--help, kernels.sh --help, every python3 -m krepro subcommand's --help and
the Makefile's header. A changed option, a new subcommand or a reworded
help fails this test until the page is generated again. Also checked: the
page has a section for each command the generator must cover, so an empty
or truncated page cannot pass by matching an equally broken generator.

Standard library only; prints each failure, then "N passed, N failed", and
exits 1 when anything failed.
"""
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from tally import Tally  # noqa: E402

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GEN = os.path.join(TOP, "scripts", "gen-reference")
PAGE = os.path.join(TOP, "docs", "reference.md")
MUST = ("## run-in-qemu.sh", "## scripts/gate.sh", "## scripts/kernels.sh", "## python3 -m krepro\n",
        "## python3 -m krepro classify", "## python3 -m krepro bisect", "## python3 -m krepro bundle",
        "## make (the Makefile's header)", "usage: run-in-qemu.sh", "Exit status")

check = Tally("FAIL: ")


def main():
    p = subprocess.run([sys.executable, GEN, "--check"], capture_output=True, text=True, timeout=600)
    check(p.returncode == 0, f"scripts/gen-reference --check exited {p.returncode}:\n"
                             f"{p.stdout[-4000:]}{p.stderr[-2000:]}")
    with open(PAGE, encoding="utf-8") as f:
        text = f.read()
    for want in MUST:
        check(want in text, f"docs/reference.md has no {want.strip()!r}")
    bad = subprocess.run([sys.executable, GEN, "--no-such-option"], capture_output=True, text=True)
    check(bad.returncode == 128, f"gen-reference with a bad argument exited {bad.returncode}, not 128")
    return check.end()


if __name__ == "__main__":
    sys.exit(main())
