"""A regex asked of a line only when the line holds one of the regex's
needles (logtext.any_needles: fixed text one of which every match holds).
Most lines of a report hold none of a given regex's, and a regex led by a
character class tries every position of a line before it says no."""
import functools


def search(regex, line):
    """regex.search(line), None at once for a line with none of its needles."""
    return regex.search(line) if has_needle(line, needles_of(regex.pattern)) else None


def has_needle(line, needles):
    """Whether line holds one of needles (None: no needles, it may)."""
    if needles is None:
        return True
    for s in needles:
        if s in line:
            return True
    return False


def lines_holding(lines, needles):
    """The indexes of lines (no line ends in them) that hold one of needles
    (None: every line), in order: one find() pass a needle over the lines
    joined, not one test a line, for needles few lines hold."""
    if needles is None:
        return range(len(lines))
    from . import logtext
    text = "\n".join(lines)
    hits = sorted(p for s in needles for p in logtext._all(text, s))
    # A line with a line end in it: offsets no longer tell the line.
    return logtext._hit_lines(text, lines, hits, needles, text.count("\n") != len(lines) - 1)


@functools.lru_cache(maxsize=64)
def needles_of(pattern):
    """One needle of each top-level alternative of a regex, or None when
    some has none. logtext imports reports, which imports syztitle, which
    imports this module: logtext is imported at first use."""
    from . import logtext
    found = logtext.any_needles(pattern)
    return None if found is None else tuple(found)


@functools.lru_cache(maxsize=64)
def each_needle(patterns):
    """One needle of each of several regexes (their patterns, a tuple), or
    None when one has none."""
    from . import logtext
    found = tuple(logtext.needle(p) for p in patterns)
    return None if None in found else found
