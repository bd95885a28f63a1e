"""The command lines' shared pieces: the option parser of the subcommands
and bench scripts, whose usage errors exit USAGE; the usage error found
after parsing; the bounded types the options take."""
import argparse
import re
import sys

from .protocol import USAGE
from .untrusted import say

LIMITS = {"--max-runs": 1000, "--repeat": 1000, "--timeout": 86400, "--jobs": 64,
          "--gdb": 65535, "KREPRO_JOBS": 64}


class Parser(argparse.ArgumentParser):
    """Options whose errors say "krepro: PROG: message" and exit USAGE (128:
    git bisect run stops instead of marking a commit bad)."""

    def error(self, message):
        print(f"krepro: {self.prog.split()[-1]}: {say(message)} (see --help)", file=sys.stderr)
        sys.exit(USAGE)


class UsageError(Exception):
    """A usage error found once the options are parsed (a kernel or a commit
    that does not exist, say): the command prints it in one line and returns
    USAGE."""


def bounded(name):
    """A whole number from 1 to the option's limit."""
    hi = LIMITS[name]

    def conv(v):
        # ASCII digits only: int() also takes "1_0", " 3" and "٣".
        if not re.fullmatch(r"[0-9]{1,9}", v):
            raise argparse.ArgumentTypeError(f"wants a whole number from 1 to {hi}, not '{v}'")
        x = int(v)
        if not 1 <= x <= hi:
            raise argparse.ArgumentTypeError(f"wants a whole number from 1 to {hi}, not '{v}'")
        return x
    return conv


def given_rate(v):
    """--rate FAILS/RUNS: a FAIL rate measured elsewhere (ASCII digits, as
    bounded() takes them)."""
    m = re.fullmatch(r"([0-9]{1,6})/([0-9]{1,6})", v)
    if not (m and 0 < int(m[1]) <= int(m[2]) <= 100000):
        raise argparse.ArgumentTypeError(f"wants FAILS/RUNS with 0 < FAILS <= RUNS <= 100000, "
                                         f"not '{v[:40]}'")
    return int(m[1]), int(m[2])


NUMBER = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][-+]?[0-9]+)?")


def probability(v):
    # ASCII decimals only: float() also takes "0_1", "nan" and other scripts' digits.
    if not NUMBER.fullmatch(v):
        raise argparse.ArgumentTypeError(f"wants a probability, not '{v}'")
    x = float(v)
    if not 0 < x < 1:
        raise argparse.ArgumentTypeError(f"wants a probability between 0 and 1, not '{v}'")
    return x
