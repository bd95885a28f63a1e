"""Checks of run-in-qemu.sh's options that need nothing but the options:
each returns one line on the first problem, or None (cli.py calls them
before any work)."""

# The smallest target miss: one in a million is 20 clean runs even at a
# rate bound of 50%; below it a cap of runs, not the target, decides.
MISS_MIN = 1e-6


def check_miss(o):
    if o.miss and o.confidence:
        return "--miss and --confidence say the same thing: give one"
    miss = o.miss or (1 - o.confidence if o.confidence else None)
    if miss is not None and miss < MISS_MIN:
        # Said, not rounded: a cell would show such a target as "1%".
        given = f"--miss {o.miss:g}" if o.miss else f"--confidence {o.confidence!r}"
        return (f"{given} asks a miss below {MISS_MIN:g} (one in a million): no cap of runs "
                "reaches that; give a larger one")
    return None


# What --report reads besides DIR: the rest is a run's, and would be ignored.
REPORT_OPTIONS = ("--report", "--any-report")


def check_report(o, argv):
    """With --report DIR: nothing else a run would take (a reproducer, a
    kernel, --dry-run), which re-rendering would silently ignore."""
    extra = []
    for i, a in enumerate(argv):
        if a == "--":
            extra += argv[i + 1:]
            break
        if a.startswith("-") and a.split("=", 1)[0] not in REPORT_OPTIONS:
            extra.append(a.split("=", 1)[0])
    extra = extra or list(o.repros)
    if extra:
        return (f"--report DIR re-renders a past run and takes only --any-report, not "
                f"{extra[0]}: give the rest to a run of its own")
    return None


def check_repros(names):
    """A reproducer named twice would run two rows that write one log."""
    seen = set()
    for n in names:
        if n in seen:
            return f"{n} is given twice: name each reproducer once (--repeat N runs it more)"
        seen.add(n)
    return None
