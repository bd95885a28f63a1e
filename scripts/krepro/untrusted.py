"""Input from someone else: a results directory and its run.json, a log, an
argument, a variable. A path it names stays inside its directory, only a
regular file is read, and only so much of it; what it says is escaped before
it is written anywhere (docs/design-notes.md, "Input from someone else")."""
import errno
import os
import re
import shutil
import stat
import subprocess

# A run of the whole matrix at its caps is a few MB of run.json.
RUN_JSON_MAX = 64 << 20
# What a report quotes of one guest's console, KTAP or decoded report: more
# is cut, not refused (a long log is still the run's).
LOG_MAX = 64 << 20
# An echoed word (a name, a path) longer than this is cut in a message.
WORD_MAX = 200


class Refused(Exception):
    """An input krepro will not read; str() says which and why, in one line."""


# C0 and C1 controls, DEL, the Unicode line and paragraph separators, the
# bidirectional overrides and lone surrogates: each could end a line, move
# the cursor or reorder what a terminal, KTAP, Markdown or XML shows.
CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]")
TABLESS = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff]")


def escape_char(m):
    o = ord(m.group())
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}"


def clean(s, tabs=False):
    """s as one line of printable text: every control character written as
    \\xNN (\\uNNNN), so nothing in it ends a line or drives a terminal."""
    return (TABLESS if tabs else CONTROL).sub(escape_char, s if isinstance(s, str) else str(s))


def cut(s, n=WORD_MAX):
    """s, cleaned, at most about n characters: a name of 100,000 characters
    is not echoed whole."""
    s = clean(s)
    # The tail is kept too: it may hold the quote or colon the message goes on with.
    return s if len(s) <= n else f"{s[:n // 2]}...({len(s)} characters)...{s[-8:]}"


def md_cell(s):
    """A table cell: one line, its pipes escaped, at most 160 characters."""
    s = clean("" if s is None else s).replace("|", "\\|")
    return s if len(s) <= 160 else s[:157] + "..."


def say(msg):
    """A message that may echo input, made one safe line: controls escaped,
    every word over WORD_MAX characters cut."""
    return re.sub(r"\S{%d,}" % (WORD_MAX + 1), lambda m: cut(m.group()), clean(msg))


def inside(base, rel, what):
    """base/rel with every symlink resolved, when rel is a relative path that
    stays inside base; Refused otherwise (an absolute path, "..", a symlink
    out of base)."""
    if not isinstance(rel, str) or not rel or "\0" in rel:
        raise Refused(f"{what}: {cut(repr(rel))} is not a path")
    if os.path.isabs(rel):
        raise Refused(f"{what}: {cut(rel)} is an absolute path, not one inside the run directory")
    root = os.path.realpath(base)
    full = os.path.realpath(os.path.join(root, rel))
    if full != root and os.path.commonpath([root, full]) != root:
        raise Refused(f"{what}: {cut(rel)} leads out of the run directory")
    return full


def lexically_inside(rel):
    """Whether rel, a relative path, stays inside its directory on its face
    (no symlink looked at): the check of a record before anything is read."""
    if not isinstance(rel, str) or not rel or "\0" in rel or os.path.isabs(rel):
        return False
    n = os.path.normpath(rel)
    return n != os.pardir and not n.startswith(os.pardir + os.sep)


def kind(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a FIFO"),
                       (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "something else"


def check_regular(path):
    """Refused unless path is a regular file (symlinks followed)."""
    if "\0" in path:
        raise Refused(f"{cut(repr(path))}: not a path (a NUL in it)")
    st = os.stat(path)
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"{cut(path)}: is {kind(st.st_mode)}, not a regular file")


def read_bytes(path, limit, truncate=False):
    """A regular file's bytes, at most limit of them (more: Refused, or cut
    with truncate). A FIFO, a device or a directory is Refused before it is
    opened, and checked again once open (non-blocking, so a FIFO swapped in
    cannot hang the open). OSError as open() raises it."""
    check_regular(path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{cut(path)}: is {kind(st.st_mode)}, not a regular file")
        if st.st_size > limit and not truncate:
            raise Refused(f"{cut(path)}: {st.st_size} bytes, more than the {limit >> 20} MiB "
                          "krepro reads of it")
        data = f.read(limit + 1)
    if len(data) > limit and not truncate:
        raise Refused(f"{cut(path)}: more than the {limit >> 20} MiB krepro reads of it")
    return data[:limit]


def create(path):
    """path as a new empty file, open for writing (a file object): whatever
    was there (a link out of a run directory handed over, a FIFO) removed
    first, never followed (O_EXCL, O_NOFOLLOW). OSError as open() raises it."""
    if os.path.lexists(path):
        replaceable(path)
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    return os.fdopen(fd, "w")


def write_whole(path, text):
    """path written whole: a new temporary file renamed over it (which
    replaces a link at path, not what it points to)."""
    if os.path.lexists(path):
        replaceable(path)
    with create(path + ".tmp") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def replaceable(path):
    """OSError unless what is at path is a regular file or a link (a link is
    replaced, never followed): an output given as /dev/null, a FIFO or a
    directory is not renamed over or unlinked (as root, that would replace
    the device). An OSError, as a write that fails is: every writer says it."""
    mode = os.lstat(path).st_mode
    if not (stat.S_ISREG(mode) or stat.S_ISLNK(mode)):
        raise OSError(errno.EISDIR if stat.S_ISDIR(mode) else errno.EEXIST,
                      f"{kind(mode)} is there, not a regular file", path)


def fresh_dir(d, names):
    """d as a real directory of its own (a link in its place removed), with
    each of names in it new and empty: a run writes there, so nothing a
    past run's directory held may lead its writes elsewhere."""
    if os.path.islink(d):
        os.unlink(d)
    os.makedirs(d, exist_ok=True)
    for name in os.listdir(d):
        # A past run's files (report.txt...) would pass for this run's.
        p = os.path.join(d, name)
        shutil.rmtree(p) if os.path.isdir(p) and not os.path.islink(p) else os.unlink(p)
    for name in names:
        create(os.path.join(d, name)).close()


def read_text(path, limit, truncate=False):
    return read_bytes(path, limit, truncate).decode("utf-8", errors="replace")


def env_flag(name):
    """An on/off variable, one rule for every command: unset, empty or 0 is
    off, 1 is on, anything else Refused (a "no" or "false" read as on would
    do the opposite of what was meant). Read where it is used."""
    v = os.environ.get(name, "")
    if v not in ("", "0", "1"):
        raise Refused(f"{name} is 1 (on) or 0, empty or unset (off), not '{cut(v)}'")
    return v == "1"


def no_build():
    """KREPRO_NO_BUILD=1: use what is built, build nothing."""
    return env_flag("KREPRO_NO_BUILD")


def unwritable(path):
    """Why a run cannot write path, a directory it makes or fills (its
    nearest existing ancestor not a writable directory), or None: said before
    any work, not after a build."""
    p = os.path.abspath(path)
    while not os.path.lexists(p):
        p = os.path.dirname(p)
    if not os.path.isdir(p):
        return f"{p} is not a directory"
    if not os.access(p, os.W_OK | os.X_OK) or not os.access(p, os.R_OK):
        return f"{p} is not a directory this user can write"
    return None


def check_path_input(path, limit):
    """A path argument that names a file or a directory (a --kernel, a
    --vmlinux): Refused when it is neither (a FIFO would hang the read, a
    device read without end) or a file larger than limit."""
    if "\0" in path:
        raise Refused(f"{cut(repr(path))}: not a path (a NUL in it)")
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        return
    if not stat.S_ISREG(st.st_mode):
        raise Refused(f"{cut(path)}: is {kind(st.st_mode)}, not a regular file or a directory")
    if st.st_size > limit:
        raise Refused(f"{cut(path)}: {st.st_size} bytes, more than the {limit >> 20} MiB "
                      "krepro reads of it")


# What a repository's configuration can make git run on its own: its hooks,
# an fsmonitor hook, an ssh command. A --tree, a --base, and a clone
# sharing one's objects are someone else's, their .git/config too. The
# shell scripts' safe_git (scripts/common.sh) passes the same.
GIT_OFF = ("-c", "core.fsmonitor=", "-c", "core.hooksPath=/dev/null", "-c", "core.sshCommand=false")


def safe_git(repo, *args, env=None, input=None):
    """git -C repo args, every git krepro runs: nothing of the repository's
    configuration runs, no optional lock is taken (a status never rewrites
    a tree's index), and what krepro commits in its clones is krepro's. A
    CompletedProcess, its output captured as text."""
    return subprocess.run(["git", "--no-optional-locks", *GIT_OFF, "-c", "user.name=krepro",
                           "-c", "user.email=krepro@localhost", "-C", repo, *args],
                          env=env, input=input, capture_output=True, text=True)
