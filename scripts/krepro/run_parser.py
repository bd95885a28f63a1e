"""run-in-qemu.sh's command line parsed: every option, with no
abbreviations, and the kernels in the order given (cli.py checks them)."""
import argparse
import os
import sys

from .options import bounded, empty_value, given_rate, option_hint, probability
from .protocol import USAGE
from .untrusted import say

PROG = "krepro"


class Parser(argparse.ArgumentParser):
    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        empty_value(self, args)
        return super().parse_known_args(args, namespace)

    def error(self, message):
        hint = option_hint(self, message)
        print(f"{PROG}: error: {say(message)}{hint} (see run-in-qemu.sh --help)", file=sys.stderr)
        sys.exit(USAGE)


def parse(argv):
    # No abbreviations: `--kern patched` must not pass for another option,
    # nor `--tre .` run a flavour under git bisect.
    p = Parser(prog="run-in-qemu.sh", add_help=False, usage=argparse.SUPPRESS, allow_abbrev=False)
    p.add_argument("-h", "--help", action="store_true")
    p.add_argument("--version", action="store_true")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--arch", default=os.environ.get("KREPRO_ARCH") or "x86_64")
    p.add_argument("--branch")
    p.add_argument("--rate", type=given_rate)
    p.add_argument("--kernel", action="append", dest="kernels", default=[])
    p.add_argument("--tree", action="append", dest="trees", default=[])
    p.add_argument("--miss", type=probability)
    p.add_argument("--confidence", type=probability)
    p.add_argument("--max-runs", type=bounded("--max-runs"), default=20)
    p.add_argument("--repeat", type=bounded("--repeat"))
    p.add_argument("--timeout", type=bounded("--timeout"))
    p.add_argument("-j", "--jobs", type=bounded("--jobs"))
    p.add_argument("--via", default="qemu")
    p.add_argument("--artifacts")
    p.add_argument("--accel", choices=("tcg", "kvm", "auto"), default="tcg")
    p.add_argument("--results")
    p.add_argument("--replace", action="store_true")
    p.add_argument("--expect", action="store_true")
    p.add_argument("--any-report", action="store_true")
    p.add_argument("--record-rates", action="store_true")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--append", default="")
    p.add_argument("--qemu-opts", default="")
    p.add_argument("--gdb", nargs="?", const=1234, type=bounded("--gdb"))
    p.add_argument("--vmlinux")
    p.add_argument("--list", action="store_true")
    p.add_argument("--report")
    p.add_argument("repros", nargs="*")
    o = p.parse_args(argv)
    o.kernel_specs = kernel_specs(argv)
    return o


def kernel_specs(argv):
    """The --kernel and --tree values, a tree as "tree:DIR", in their
    command-line order."""
    # Kernels keep their command-line order, --tree among --kernel. Only the
    # exact spellings reach here: abbreviations were refused by parse().
    order = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--":
            break
        if a in ("--kernel", "--tree") and i + 1 < len(argv):
            order.append((a, argv[i + 1]))
            i += 1
        elif a.startswith(("--kernel=", "--tree=")):
            k, _, v = a.partition("=")
            order.append((k, v))
        i += 1
    return [v if k == "--kernel" else "tree:" + v for k, v in order]
