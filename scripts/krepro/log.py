"""The one line krepro says on standard error: "krepro: MESSAGE"."""
import sys

from .untrusted import clean


def log(msg):
    # A guest's words (a report's title, an error) reach the terminal: its
    # control characters are escaped, line by line.
    text = "\n".join(clean(line, tabs=True) for line in str(msg).split("\n"))
    print(f"krepro: {text}", file=sys.stderr, flush=True)
