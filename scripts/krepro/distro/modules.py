"""A distribution package's modules (distro/kernel.py): the objects each CONFIG_
option builds (the kernel tree's Makefiles), modules.dep and its closure,
the soft dependencies modprobe follows only when it finds them
(modules.softdep, and the algorithms a module asks for by name: REQUESTS),
aliases, and the order to load them in."""
import os
import re

MODULE_EXT = re.compile(r"\.ko(\.xz|\.zst|\.gz)?$")


def option_objects(tree):
    """{CONFIG_X: [dir/obj, ...]} from every Makefile and Kbuild file of the
    kernel tree: the objects `obj-$(CONFIG_X) += obj.o` builds."""
    out = {}
    rx = re.compile(r"^obj-\$\((CONFIG_[A-Za-z0-9_]+)\)\s*[+:]?=\s*(.*)$")
    for d, subdirs, files in os.walk(tree):
        rel = os.path.relpath(d, tree)
        subdirs[:] = [x for x in subdirs if not x.startswith(".") and
                      not (rel == "." and x in ("Documentation", "tools", "scripts"))]
        for name in files:
            if name not in ("Makefile", "Kbuild"):
                continue
            with open(os.path.join(d, name), errors="replace") as f:
                text = f.read().replace("\\\n", " ")
            for line in text.splitlines():
                m = rx.match(line.strip())
                if not m:
                    continue
                for tok in m.group(2).split():
                    if tok.endswith(".o"):
                        out.setdefault(m.group(1), []).append(os.path.normpath(os.path.join(rel, tok[:-2])))
    return out


def module_index(moddir):
    """{path under kernel/ without extension: file path under moddir} and
    modules.dep as {file: [files it needs]}."""
    files, deps = {}, {}
    with open(os.path.join(moddir, "modules.dep")) as f:
        for line in f:
            mod, _, rest = line.strip().partition(":")
            deps[mod] = rest.split()
            files[MODULE_EXT.sub("", mod)[len("kernel/"):]] = mod
    return files, deps


def closure(mods, deps):
    """mods and everything they need, each after what it needs."""
    out, seen = [], set()

    def visit(m):
        if m in seen:
            return
        seen.add(m)
        for d in deps.get(m, []):
            visit(d)
        out.append(m)
    for m in mods:
        visit(m)
    return out


def mod_name(f):
    """A module file's name as the kernel and modprobe know it."""
    return os.path.basename(MODULE_EXT.sub("", f)).replace("-", "_")


def read_softdeps(moddir):
    """modules.softdep (depmod writes it from the modules' MODULE_SOFTDEP):
    {module: (pre names, post names)}; a name is a module's or an alias.
    A word before any pre: or post: is ignored, as modprobe ignores it."""
    out = {}
    path = os.path.join(moddir, "modules.softdep")
    if not os.path.isfile(path):
        return out
    with open(path) as f:
        for line in f:
            words = line.split()
            if len(words) < 3 or words[0] != "softdep":
                continue
            pre, post = out.setdefault(words[1].replace("-", "_"), ([], []))
            into = None
            for w in words[2:]:
                if w in ("pre:", "post:"):
                    into = pre if w == "pre:" else post
                elif into is not None and w not in into:
                    into.append(w)
    return out


def read_aliases(moddir):
    """modules.alias as {alias: [module names]} (exact aliases only)."""
    out = {}
    path = os.path.join(moddir, "modules.alias")
    if os.path.isfile(path):
        with open(path, errors="replace") as f:
            for line in f:
                words = line.split()
                if len(words) == 3 and words[0] == "alias" and not any(c in words[1] for c in "*?["):
                    out.setdefault(words[1], []).append(words[2])
    return out


# What a module asks for by name when it loads or first works, with no
# modules.dep or modules.softdep line to say so: crypto algorithms (the
# crypto API requests "crypto-<name>"), read from kernel 6.1's sources.
# libcrc32c's init fails without crc32c ("could not insert 'libcrc32c'").
REQUESTS = {
    "libcrc32c": ["crc32c"],    # lib/libcrc32c.c, at load
    "rdma_rxe": ["crc32"],      # rxe_icrc_init(), when a link is added
    "nvme_tcp": ["crc32c"],     # header and data digests
    "nvmet_tcp": ["crc32c"],
    "crc_t10dif": ["crct10dif"],  # lib/crc-t10dif.c: a slower table without it
}
# Options that are code inside a module no Makefile line of theirs names:
# nf_tables' families are bools in nf_tables, which needs nfnetlink (a
# NETLINK_NETFILTER socket is "Protocol not supported" without it).
IMPLIED = ((re.compile(r"^CONFIG_(NF_TABLES|NFT)_"), ["CONFIG_NETFILTER_NETLINK", "CONFIG_NF_TABLES"]),)


def implied(opts):
    """opts with the options they imply (IMPLIED) after each, once each."""
    out = []
    for opt in opts:
        out.append(opt)
        for rx, more in IMPLIED:
            if rx.match(opt):
                out += more
    return list(dict.fromkeys(out))


class Modules:
    """A package's modules: files by name, modules.dep, soft dependencies
    (modules.softdep and REQUESTS), aliases."""

    def __init__(self, moddir):
        self.files, self.deps = module_index(moddir)
        self.byname = {mod_name(f): f for f in self.deps}
        self.soft = read_softdeps(moddir)
        for m, names in REQUESTS.items():
            pre, _ = self.soft.setdefault(m, ([], []))
            pre += [n for n in names if n not in pre]
        self.aliases = read_aliases(moddir)

    def lookup(self, name):
        """The files a soft dependency's name loads: the module of that name,
        or every module of the alias (crc32c: crc32c_generic, crc32c_intel);
        none when it is built in or the package lacks it."""
        n = name.replace("-", "_")
        if n in self.byname:
            return [self.byname[n]]
        names = [m.replace("-", "_") for a in (name, "crypto-" + name) for m in self.aliases.get(a, [])]
        return [self.byname[m] for m in dict.fromkeys(names) if m in self.byname]

    def order(self, tops):
        """[(file, required, top)]: tops and their modules.dep closure
        (required), with the soft dependencies of each (not required: modprobe
        too goes on without one), each after what it needs, a soft pre:
        dependency before its module and a post: one after; top is the first
        of tops that needs the file."""
        required = set(closure(tops, self.deps))
        out, seen = [], set()

        def visit(f, top):
            if f in seen:
                return
            seen.add(f)
            pre, post = self.soft.get(mod_name(f), ([], []))
            for d in [x for n in pre for x in self.lookup(n)] + self.deps.get(f, []):
                visit(d, top)
            out.append((f, f in required, top))
            for d in [x for n in post for x in self.lookup(n)]:
                visit(d, top)
        for t in tops:
            visit(t, t)
        return out
