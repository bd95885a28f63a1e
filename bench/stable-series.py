#!/usr/bin/env python3
"""A real stable update as a patch series, for the gate: the changes between
two Debian linux-source-6.1 versions (two stable point releases), split into
many patches, and the older version as a git tree to gate them on.

usage: bench/stable-series.py [--work DIR] [--bury PATCH --at N] [--check] OLD NEW OUT

  OLD, NEW   Debian versions of linux-source-6.1 (apt-cache madison
             linux-source-6.1: 6.1.190-1, 6.1.192-3, ...), each downloaded
             (apt-get download, never installed) and unpacked under --work;
             or a directory holding an unpacked kernel tree
  OUT        OUT/base: a git tree of OLD, one commit (gate.sh --base OUT/base);
             OUT/series/NNNN-*.patch: the series, git format-patch mails (From,
             Subject: git am takes them); OUT/series.tsv: each patch's files
  --work DIR where the packages are unpacked (default OUT/work; about 1.5 GB a
             version)
  --bury PATCH --at N   put PATCH (a git format-patch mail, e.g. one of
             kernel-patches/<id>/bug-*.patch) at position N (1-based) of the
             series; later patches that touch its files are applied as diffs
             on top of it, so it stays in the tip
  --check    git am the whole series onto a clone of OUT/base and compare the
             result with the tip (no build)

How the diff is split. Debian's source package carries no upstream history,
so the stable commits cannot be recovered. The split is by subsystem: a
file's group is its first two path components (fs/xfs, net/ipv4, mm), three
under drivers/, arch/ and sound/ (drivers/net/ethernet, arch/x86/kvm), where
subsystems are maintained and where stable patches mostly stay. A header
under include/ goes with the one group whose changed files include it; a
header included by several groups, or by none, is a unit of its own.

A split by subsystem alone leaves most intermediate trees unbuildable: a
stable update changes an API on both sides (a prototype in
include/linux/mm.h and its definition in mm/mmap.c), and every step between
the two patches fails to compile (measured: on 6.1.190-1..6.1.192-3 the
culprit search of such a series found no step near the middle that built).
Upstream's commits never leave that state, so units are coupled the way a
commit couples them: a changed header's declared names (a #define, a
function or a member, an enum constant) that a changed line of another
unit's file mentions put the two units in one patch. A name written more
than RARE times in the newer tree's include/ (addr, kfree, mutex_lock) is
vocabulary and couples nothing. The units holding a shared header go
first, then the others, each by name.
"""
import collections
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
from krepro.options import Parser  # noqa: E402

PKG = "linux-source-6.1"
AUTHOR = {"GIT_AUTHOR_NAME": "krepro stable-series", "GIT_AUTHOR_EMAIL": "krepro@localhost",
          "GIT_COMMITTER_NAME": "krepro stable-series", "GIT_COMMITTER_EMAIL": "krepro@localhost",
          "GIT_AUTHOR_DATE": "2000-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2000-01-01T00:00:00Z"}


def die(msg):
    print(f"stable-series: error: {msg}", file=sys.stderr)
    sys.exit(128)


def sh(*cmd, cwd=None, env=None, inp=None):
    p = subprocess.run(cmd, cwd=cwd, env=dict(os.environ, **(env or {})), input=inp,
                       capture_output=True, text=True)
    if p.returncode:
        die(f"{' '.join(cmd[:4])}: {(p.stderr.strip().splitlines() or ['failed'])[-1]}")
    return p.stdout


def unpacked(version, work):
    """The kernel tree of a Debian version (downloaded and unpacked once), or
    the directory given."""
    if os.path.isdir(version):
        return os.path.realpath(version)
    if not re.fullmatch(r"[0-9][0-9A-Za-z.+~-]*", version):
        die(f"{version!r} is neither a directory nor a Debian version")
    d = os.path.join(work, version)
    tree = os.path.join(d, "tree")
    if os.path.isfile(os.path.join(tree, "Makefile")):
        return tree
    os.makedirs(d, exist_ok=True)
    if not [f for f in os.listdir(d) if f.endswith(".deb")]:
        print(f"stable-series: downloading {PKG}={version}", file=sys.stderr)
        sh("apt-get", "download", f"{PKG}={version}", cwd=d)
    deb = [f for f in os.listdir(d) if f.endswith(".deb")][0]
    sh("dpkg-deb", "-x", deb, "root", cwd=d)
    os.makedirs(tree + ".tmp", exist_ok=True)
    sh("tar", "-xJf", os.path.join(d, "root", "usr", "src", PKG + ".tar.xz"), "-C", tree + ".tmp",
       "--strip-components=1")
    os.rename(tree + ".tmp", tree)
    sh("rm", "-rf", os.path.join(d, "root"))
    return tree


def tree_commit(repo, src, msg, parent=None):
    """src's files (all of them, .gitignore ignored) as a commit of repo."""
    with tempfile.TemporaryDirectory() as t:
        env = {"GIT_DIR": os.path.join(repo, ".git"), "GIT_WORK_TREE": src,
               "GIT_INDEX_FILE": os.path.join(t, "index"), **AUTHOR}
        sh("git", "add", "-A", "-f", ".", cwd=src, env=env)
        tree = sh("git", "write-tree", cwd=src, env=env).strip()
    return sh("git", "-C", repo, "commit-tree", tree, *(["-p", parent] if parent else []), "-m", msg,
              env=AUTHOR).strip()


def group_of(path):
    parts = path.split("/")
    n = 3 if parts[0] in ("drivers", "arch", "sound") else 2
    return "/".join(parts[:min(n, len(parts) - 1)]) or parts[0]


def includers(repo, new, files, headers):
    """header -> the groups whose changed (new) files include it."""
    names = {h: h.split("/", 1)[1] for h in headers}        # include/linux/x.h -> linux/x.h
    by = collections.defaultdict(set)
    for f in files:
        if not f.endswith((".c", ".h")) or f in headers:
            continue
        p = subprocess.run(["git", "-C", repo, "show", f"{new}:{f}"], capture_output=True, text=True,
                           errors="replace")
        for inc in re.findall(r'#\s*include\s*[<"]([^>"]+)[>"]', p.stdout):
            for h, n in names.items():
                if inc == n:
                    by[h].add(group_of(f))
    return by


# A C name; and one being declared on a header's line: a macro, a struct,
# union or enum tag, a function, variable or member after its type (not a
# call or an assignment in an inline body), an enum constant.
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DECLARED = (
    re.compile(r"^#\s*define\s+([A-Za-z_]\w*)"),
    re.compile(r"^(?:struct|union|enum)\s+([A-Za-z_]\w*)\s*\{"),
    re.compile(r"^(?!(?:return|else|case|goto|if|while|for|do|switch|sizeof)\b)"
               r"(?:(?:extern|static|inline|const|volatile|unsigned|signed|struct|union|enum)\s+)*"
               r"[A-Za-z_]\w*(?:\s+|\s*\*+\s*)(?:const\s+)?\**\s*([A-Za-z_]\w*)\s*(?:\(|\[|;|:\s*\d|=)"),
    re.compile(r"^([A-Z][A-Z0-9_]{3,})\s*(?:=[^;]*)?,?$"),
)
KEYWORDS = set("""auto break case char const continue default do double else enum extern float for
goto if inline int long register restrict return short signed sizeof static struct switch typedef
union unsigned void volatile while bool true false NULL defined include ifdef ifndef endif elif
undef define __init __exit __user __iomem __rcu __must_check asmlinkage noinline
u8 u16 u32 u64 s8 s16 s32 s64 size_t loff_t""".split())
# A name written more often than this in the newer tree's include/ is
# everyday vocabulary (addr, list, kfree, mutex_lock), not one API's.
RARE = 50


def changed_lines(repo, old, new):
    """file -> its changed lines, both sides, comments left out (one -U0 diff)."""
    out = subprocess.run(["git", "-C", repo, "diff", "-U0", "--no-renames", old, new],
                         capture_output=True, text=True, errors="replace", check=True).stdout
    by, cur = collections.defaultdict(list), None
    for l in out.splitlines():
        if l.startswith("diff --git "):
            cur = l.rsplit(" b/", 1)[1]
        elif cur and l[:1] in "+-" and not l.startswith(("+++ ", "--- ")):
            t = l[1:].strip()
            if t and not t.startswith(("*", "/*", "//")):
                by[cur].append(t)
    return by


def declared(lines):
    """{header: the names its changed lines declare}."""
    out = {}
    for f, ls in lines.items():
        if f.endswith(".h"):
            out[f] = {m.group(1) for l in ls for m in filter(None, (d.match(l) for d in DECLARED))
                      if m.group(1) not in KEYWORDS and len(m.group(1)) >= 4}
    return out


def rare(repo, new, names):
    """The names written at most RARE times in include/ at commit new (its
    headers are where the kernel's vocabulary is said; the whole tree would
    take minutes to count)."""
    listed = sh("git", "-C", repo, "ls-tree", "-r", "--object-only", new, "--", "include/")
    p = subprocess.run(["git", "-C", repo, "cat-file", "--batch"], input=listed, capture_output=True,
                       text=True, errors="replace")
    seen = collections.Counter(w for w in WORD.findall(p.stdout) if w in names)
    return {n for n in names if seen[n] <= RARE}


def coupled(nodes, lines, distinct):
    """nodes: {name: files}; the connected units, each [names]: a node whose
    changed header declares a name in `distinct` that a changed line of
    another node's file mentions is in one unit with it."""
    node_of = {f: n for n, fs in nodes.items() for f in fs}
    who = collections.defaultdict(set)             # name -> nodes mentioning it
    for f, ls in lines.items():
        if f in node_of:
            for w in set(WORD.findall(" ".join(ls))) & distinct:
                who[w].add(node_of[f])
    parent = {n: n for n in nodes}

    def root(n):
        while parent[n] != n:
            parent[n] = parent[parent[n]]
            n = parent[n]
        return n
    for f, names in declared(lines).items():
        for name in names & distinct:
            for other in who.get(name, ()):
                if f in node_of:
                    parent[root(other)] = root(node_of[f])
    units = collections.defaultdict(list)
    for n in sorted(nodes):
        units[root(n)].append(n)
    return list(units.values())


def split(repo, old, new):
    """[(name, files)] in series order: the units holding a shared header
    first, then the others (see the header of this file)."""
    out = sh("git", "-C", repo, "diff", "--no-renames", "--name-only", "-z", old, new)
    files = [f for f in out.split("\0") if f]
    headers = {f for f in files if f.startswith("include/") and f.endswith(".h")}
    users = includers(repo, new, files, headers)
    nodes, shared = collections.defaultdict(list), set()
    for f in files:
        if f in headers and len(users.get(f, ())) == 1:
            nodes[next(iter(users[f]))].append(f)
        elif f in headers:
            nodes[f].append(f)
            shared.add(f)
        else:
            nodes[group_of(f)].append(f)
    units = []
    lines = changed_lines(repo, old, new)
    names = set().union(*declared(lines).values()) if lines else set()
    for names in coupled(nodes, lines, rare(repo, new, names)):
        groups = [n for n in names if n not in shared]
        label = ", ".join(groups[:3]) + (f" and {len(groups) - 3} more" if len(groups) > 3 else "")
        if not groups:
            label = names[0] + (f" and {len(names) - 1} more" if len(names) > 1 else "")
        units.append((not any(n in shared for n in names), label,
                      sorted(f for n in names for f in nodes[n])))
    return [(label, fs) for _, label, fs in sorted(units)]


def apply_mail(repo, env, mail, parent):
    """PATCH (a mail) on the index, committed with its author and message:
    (commit, the files it touches)."""
    with tempfile.TemporaryDirectory() as t:
        with open(mail, "rb") as f:
            info = subprocess.run(["git", "mailinfo", os.path.join(t, "msg"), os.path.join(t, "patch")],
                                  stdin=f, capture_output=True, text=True, errors="replace").stdout
        head = dict(l.split(": ", 1) for l in info.splitlines() if ": " in l)
        sh("git", "-C", repo, "apply", "--cached", os.path.join(t, "patch"), env=env)
        with open(os.path.join(t, "msg"), errors="replace") as f:
            msg = head.get("Subject", os.path.basename(mail)) + "\n\n" + f.read()
        files = sh("git", "-C", repo, "apply", "--numstat", os.path.join(t, "patch")).splitlines()
    tree = sh("git", "-C", repo, "write-tree", env=env).strip()
    who = dict(AUTHOR, GIT_AUTHOR_NAME=head.get("Author", "unknown"), GIT_AUTHOR_EMAIL=head.get("Email", ""))
    c = sh("git", "-C", repo, "commit-tree", tree, "-p", parent, "-F", "-", env=who, inp=msg).strip()
    return c, {l.split("\t", 2)[2] for l in files}


def take(repo, env, old, new, files, buried):
    """files as they are in new, on the index; those the buried patch
    touches as the diff old..new on top of it."""
    plain = [f for f in files if f not in buried]
    if plain:
        listed = sh("git", "-C", repo, "ls-tree", "-r", "-z", new, "--", *plain)
        have, lines = set(), []
        for ent in filter(None, listed.split("\0")):
            meta, path = ent.split("\t", 1)
            mode, _, sha = meta.split()
            have.add(path)
            lines.append(f"{mode} {sha}\t{path}")
        lines += [f"0 {'0' * 40}\t{f}" for f in plain if f not in have]
        sh("git", "-C", repo, "update-index", "-z", "--index-info", env=env, inp="\0".join(lines) + "\0")
    for f in files:
        if f in buried:
            diff = sh("git", "-C", repo, "diff", "--binary", "--no-renames", old, new, "--", f)
            p = subprocess.run(["git", "-C", repo, "apply", "--cached", "-"], input=diff, text=True,
                               env=dict(os.environ, **env), capture_output=True)
            if p.returncode:
                die(f"{f}: the stable change does not apply on top of the buried patch: bury it elsewhere")


def commits(repo, old, new, groups, label, bury=None, at=None):
    """The series as commits on old; returns the tip."""
    with tempfile.TemporaryDirectory() as t:
        env = {"GIT_INDEX_FILE": os.path.join(t, "index")}
        sh("git", "-C", repo, "read-tree", old, env=env)
        parent, buried = old, set()
        for i, (name, files) in enumerate(groups + [(None, [])], 1):
            if bury and i == at:
                parent, buried = apply_mail(repo, env, bury, parent)
            if name is None:
                break
            take(repo, env, old, new, files, buried)
            tree = sh("git", "-C", repo, "write-tree", env=env).strip()
            shown = files[:40] + ([f"... and {len(files) - 40} more"] if len(files) > 40 else [])
            msg = (f"{name}: stable changes {label} ({len(files)} files)\n\n"
                   "Split by subsystem (bench/stable-series.py); the files:\n" + "\n".join(shown) + "\n")
            parent = sh("git", "-C", repo, "commit-tree", tree, "-p", parent, "-F", "-", env=AUTHOR,
                        inp=msg).strip()
    return parent


def base_repo(old_tree, base, version):
    """OUT/base: OLD's files, one commit on branch master."""
    if not os.path.isdir(os.path.join(base, ".git")):
        sh("cp", "-a", "--reflink=auto", old_tree + "/.", base + ".tmp")
        sh("git", "init", "-q", "-b", "master", base + ".tmp")
        sh("git", "-C", base + ".tmp", "config", "gc.auto", "0")
        sh("git", "-C", base + ".tmp", "add", "-A", "-f", ".")
        sh("git", "-C", base + ".tmp", "commit", "-q", "-m", f"Debian {PKG} {version}", env=AUTHOR)
        os.rename(base + ".tmp", base)
    return sh("git", "-C", base, "rev-parse", "HEAD").strip()


def check(base, series, tip):
    """git am of every patch on a clone of base gives tip's tree."""
    with tempfile.TemporaryDirectory(dir=os.path.dirname(base)) as t:
        clone = os.path.join(t, "am")
        sh("git", "clone", "-q", "--shared", base, clone)
        patches = sorted(os.path.join(series, f) for f in os.listdir(series) if f.endswith(".patch"))
        sh("git", "-C", clone, "am", "-q", "--no-3way", *patches, env=AUTHOR)
        got = sh("git", "-C", clone, "rev-parse", "HEAD^{tree}").strip()
    want = sh("git", "-C", base, "rev-parse", tip + "^{tree}").strip()
    if got != want:
        die(f"git am of the series gives tree {got[:12]}, not the tip's {want[:12]}")
    print(f"stable-series: git am of {len(patches)} patches on the base: the tip's tree, exactly")


def main():
    p = Parser(prog="bench/stable-series.py", usage=__doc__.split("\n\n")[1].removeprefix("usage: "),
               allow_abbrev=False)
    p.add_argument("old")
    p.add_argument("new")
    p.add_argument("out")
    p.add_argument("--work")
    p.add_argument("--bury")
    p.add_argument("--at", type=int)
    p.add_argument("--check", action="store_true")
    o = p.parse_args()
    if bool(o.bury) != bool(o.at) or (o.bury and not os.path.isfile(o.bury)):
        die("--bury PATCH and --at N go together, PATCH a file")
    series = os.path.join(o.out, "series")
    if os.path.exists(series):
        die(f"{series} exists: give a new OUT (OUT/base may be kept)")
    work = o.work or os.path.join(o.out, "work")
    os.makedirs(work, exist_ok=True)
    old_tree, new_tree = unpacked(o.old, work), unpacked(o.new, work)
    os.makedirs(o.out, exist_ok=True)
    base = os.path.join(os.path.realpath(o.out), "base")
    old = base_repo(old_tree, base, os.path.basename(o.old))
    new = tree_commit(base, new_tree, f"Debian {PKG} {os.path.basename(o.new)}")
    sh("git", "-C", base, "tag", "-f", "stable-new", new)
    groups = split(base, old, new)
    if o.at and not 1 <= o.at <= len(groups) + 1:
        die(f"--at {o.at}: the series has {len(groups)} patches (1-{len(groups) + 1})")
    tip = commits(base, old, new, groups, f"{os.path.basename(o.old)}..{os.path.basename(o.new)}",
                  o.bury and os.path.realpath(o.bury), o.at)
    sh("git", "-C", base, "tag", "-f", "stable-series", tip)
    sh("git", "-C", base, "format-patch", "-q", "--binary", "--no-signature", "-o", series, f"{old}..{tip}")
    with open(os.path.join(o.out, "series.tsv"), "w") as f:
        f.write("#patch\tgroup\tfiles\n")
        for i, (name, files) in enumerate(groups, 1):
            f.write(f"{i + (1 if o.at and i >= o.at else 0)}\t{name}\t{len(files)}\n")
    n = len(os.listdir(series))
    print(f"stable-series: {n} patches ({sum(len(fs) for _, fs in groups)} files changed"
          + (f"; {os.path.basename(o.bury)} buried at {o.at}" if o.bury else "")
          + f") in {series}; base: {base} ({old[:12]}), gate.sh --base {base}")
    if o.check:
        check(base, series, tip)


if __name__ == "__main__":
    main()
