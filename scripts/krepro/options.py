"""The command lines' shared pieces: the option parser of the subcommands
and bench scripts, whose usage errors exit USAGE; the usage error found
after parsing; the bounded types the options take."""
import argparse
import difflib
import re
import sys

from .protocol import USAGE
from .untrusted import say

LIMITS = {"--max-runs": 1000, "--repeat": 1000, "--timeout": 86400, "--jobs": 64,
          "--gdb": 65535, "KREPRO_JOBS": 64}


def option_hint(parser, message):
    """"; did you mean --X?" for the first unknown option of an argparse
    error message, when one of parser's options is close (a prefix of it:
    options are never abbreviated, so the whole one is named)."""
    if not message.startswith("unrecognized arguments:"):
        return ""
    opts = [s for a in parser._actions for s in a.option_strings if s.startswith("--")]
    for word in message.split(":", 1)[1].split():
        word = word.split("=", 1)[0][:100]
        close = [s for s in opts if s.startswith(word)] if word.startswith("--") else []
        close = close or difflib.get_close_matches(word, opts, n=1)
        if close:
            return f"; did you mean {close[0]}? (options are never abbreviated)"
    return ""


def empty_value(parser, args):
    """An option given an empty value (--results= or --out ""), refused: it
    would pass for the option not given, and its default be used."""
    takes = {s for a in parser._actions if a.nargs != 0 for s in a.option_strings}
    for i, a in enumerate(args):
        if a == "--":
            return
        name, eq, value = a.partition("=")
        if name in takes and ((eq and not value) or (not eq and i + 1 < len(args) and args[i + 1] == "")):
            parser.error(f"{name} wants a value, not an empty one")


def unknown_first(parser, args):
    """An unknown --option before "--", as the error argparse would give
    after its other checks: a typo is named (with the option meant) rather
    than the required option it hid."""
    opts = {s for a in parser._actions for s in a.option_strings}
    for a in args:
        if a == "--":
            return
        if a.startswith("--") and a.split("=", 1)[0] not in opts:
            parser.error(f"unrecognized arguments: {a.split('=', 1)[0]}")


class Parser(argparse.ArgumentParser):
    """Options whose errors say "krepro: PROG: message" and exit USAGE (128:
    git bisect run stops instead of marking a commit bad); --opt=value and
    --opt value alike; an unknown option named with the one meant."""

    def parse_known_args(self, args=None, namespace=None):
        args = sys.argv[1:] if args is None else list(args)
        unknown_first(self, args)
        empty_value(self, args)
        return super().parse_known_args(args, namespace)

    def error(self, message):
        print(f"krepro: {self.prog.split()[-1]}: {say(message)}{option_hint(self, message)} (see --help)",
              file=sys.stderr)
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
