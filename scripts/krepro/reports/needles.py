"""Pieces of fixed text a regex's every match holds ("needles"): a log's
lines are passed over a block at a time by str.find() for them, and only
the lines holding one are read by the regexes (logtext.marked_lines(),
search()). A regex is asked of a line only when the line holds one of its
needles: most lines of a report hold none of a given regex's, and a regex
led by a character class tries every position of a line before it says no."""
import functools


def needle(regex):
    """A piece of text every line a regex matches contains (its longest run of
    plain characters that no group, class or quantifier makes optional), or
    None when there is no such piece of 3 characters or more."""
    runs = required_runs(regex)
    best = max(runs, key=len) if runs else ""
    return best if len(best) >= 3 else None


def required_runs(regex):
    """The runs of plain characters every match of a regex contains, or None
    for a top-level alternation."""
    runs, cur, i, depth = [], "", 0, 0
    while i < len(regex):
        c = regex[i]
        nxt = regex[i + 1] if i + 1 < len(regex) else ""
        if c == "|" and depth == 0:
            return None    # a top-level alternation: no one piece
        if c == "\\" and nxt and not nxt.isalnum():
            atom, i = nxt, i + 2
        elif c == "\\" and nxt:
            # \s, \d, \b, \1: no one character, so the run ends there.
            runs.append(cur)
            cur, i = "", i + 2
            continue
        elif c in "()[.^$\\{|*+?":
            runs.append(cur)
            cur = ""
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
            elif c == "[":
                i = regex.index("]", i + 2 if regex[i + 1:i + 2] in ("]", "^") else i + 1)
            elif c == "{":
                i = regex.index("}", i)   # a count, {2} or {0,2}: no text
            i += 1
            continue
        else:
            atom, i = c, i + 1
        if depth:
            continue
        if regex[i:i + 1] in ("?", "*", "{"):
            runs.append(cur)
            cur = ""
        else:
            cur += atom
    runs.append(cur)
    return [r for r in runs if r]


def alternatives(regex):
    """regex split at its top-level "|"s."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(regex):
        c = regex[i]
        if c == "\\":
            i += 1
        elif c == "[":
            i = regex.index("]", i + 2 if regex[i + 1:i + 2] in ("]", "^") else i + 1)
        elif c in "()":
            depth += 1 if c == "(" else -1
        elif c == "|" and depth == 0:
            out.append(regex[start:i])
            start = i + 1
        i += 1
    return out + [regex[start:]]


def any_needles(regex):
    """One needle() for each top-level alternative of regex: a line the
    regex finds something in holds one of them. None when some alternative
    has none."""
    found = [needle(a) for a in alternatives(regex)]
    return None if None in found else found


NEEDLE_MIN = 10


def needles(patterns):
    """Few pieces of text one of which every header line of the report table
    (reports.load_patterns()) contains, each a piece of a row's required runs
    of NEEDLE_MIN characters or more (fewer where the row has no longer run),
    chosen greedily to cover the most rows: each is one find() pass over the
    text. None when some row has no run of 3 characters."""
    found = _needles(tuple(row[1].pattern for row in patterns))
    return None if found is None else list(found)


@functools.lru_cache(maxsize=4)
def _needles(sources):
    """needles() of the rows' regexes: worked out once a table (some
    hundredths of a second), however many logs are read."""
    rows, candidates = [], set()
    for src in sources:
        if src.startswith("^(?:") and src.endswith(")"):
            src = src[4:-1]
        runs = required_runs(src) or []
        longest = max(map(len, runs), default=0)
        if longest < 3:
            return None
        least = min(NEEDLE_MIN, longest)
        candidates |= {r[a:b] for r in runs for a in range(len(r)) for b in range(a + least, len(r) + 1)}
        rows.append(runs)
    # The rows a candidate is in: looked up by each row's pieces (every
    # candidate has 3 characters or more), not searched for in every row.
    covers = {c: set() for c in candidates}
    for i, runs in enumerate(rows):
        for piece in {r[a:b] for r in runs for a in range(len(r)) for b in range(a + 3, len(r) + 1)}:
            if piece in covers:
                covers[piece].add(i)
    covers = _one_each(covers)
    chosen, left = [], set(range(len(rows)))
    while left:
        best = max(covers, key=lambda c: (len(covers[c]), len(c), c))
        chosen.append(best)
        left -= covers[best]
        # What is left to cover, all a candidate is still worth.
        covers = {c: has & left for c, has in covers.items() if not has.isdisjoint(left)}
    return tuple(sorted(chosen))


def _one_each(covers):
    """covers, of the candidates that cover the same rows only the one the
    greedy choice would take: such candidates stay alike to the end (each
    step takes the same rows from all), so no other of them is ever taken.
    Most candidates go: what is left is quicker to choose from."""
    best = {}
    for c, has in covers.items():
        key = frozenset(has)
        if key not in best or (len(c), c) > (len(best[key]), best[key]):
            best[key] = c
    return {c: covers[c] for c in best.values()}


def offsets(text, s):
    """Where s stands in text, each offset in order."""
    at = text.find(s)
    while at >= 0:
        yield at
        at = text.find(s, at + 1)


def hit_lines(block, lines, hits, needles, other_ends):
    """The indexes in lines (block.splitlines()) of the lines holding a hit
    (hits: the needles' offsets in block, sorted). Counting newlines up to
    each offset is quicker, but only right where "\n" is the one line end."""
    if hits and other_ends:
        return [i for i, l in enumerate(lines) if any(s in l for s in needles)]
    out, seen, at = [], 0, 0
    for p in hits:
        seen += block.count("\n", at, p)
        at = p
        if not out or out[-1] != seen:
            out.append(seen)
    return out


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
    text = "\n".join(lines)
    hits = sorted(p for s in needles for p in offsets(text, s))
    # A line with a line end in it: offsets no longer tell the line.
    return hit_lines(text, lines, hits, needles, text.count("\n") != len(lines) - 1)


@functools.lru_cache(maxsize=64)
def needles_of(pattern):
    """One needle of each top-level alternative of a regex, or None when
    some has none."""
    found = any_needles(pattern)
    return None if found is None else tuple(found)


@functools.lru_cache(maxsize=64)
def each_needle(patterns):
    """One needle of each of several regexes (their patterns, a tuple), or
    None when one has none."""
    found = tuple(needle(p) for p in patterns)
    return None if None in found else found
