"""A Debian package someone handed over (--kernel, --vmlinux): its members
read and checked from dpkg-deb's stream, before anything is unpacked; and
what a dry run needs of it, read the same way, so that it writes nothing."""
import os
import re
import subprocess
import tarfile

from ..untrusted import say


class DistroError(Exception):
    pass


# What a package may unpack to: a -dbg package is about 5 GB unpacked.
UNPACKED_MAX = 16 << 30
MEMBERS_MAX = 200000
# What a dry run reads of a member: an image's boot header (x86's is at
# 0x202, ARM's magic at 0x24), a kernel config (a few hundred KB).
HEAD_MAX = 4096
CONFIG_MAX = 8 << 20
KEPT_MAX = 16 << 20
IMAGE = re.compile(r"boot/vmlinuz-([^/]+)")
# A kernel release (6.1.0-18-cloud-amd64): it becomes the kernel's label,
# which names run directories and is a word of a bundle's run.sh.
RELEASE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,99}")
RELEASE_CHARS = "letters, digits, '.', '_', '+' and '-', at most 100, from a letter or digit"


def release_problem(release):
    """Why release is no kernel release (a newline, a quote, a $ in it), or None."""
    if RELEASE.fullmatch(release):
        return None
    return f"'{say(release)}' is no kernel release ({RELEASE_CHARS})"


def scan_deb(deb, keep=lambda name, m: None):
    """A .deb's members, every one checked (each a regular file, a
    directory or a link, every name and link inside the package's root,
    their sizes bounded): {name: (member, its first keep(name) bytes or
    None)} of those keep(name, member) is not None for (a file's), names
    normalized (no "./"). DistroError says what is wrong with it."""
    p = subprocess.Popen(["dpkg-deb", "--fsys-tarfile", deb], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    out = {}
    try:
        total = 0
        with tarfile.open(fileobj=p.stdout, mode="r|") as tar:
            for n, m in enumerate(tar):
                why = member_problem(m)
                total += m.size
                if why or n >= MEMBERS_MAX or total > UNPACKED_MAX:
                    raise DistroError(f"{say(deb)}: not unpacked: " + (
                        why or f"more than {MEMBERS_MAX} members or {UNPACKED_MAX >> 30} GiB"))
                name = os.path.normpath(m.name)
                want = keep(name, m)
                if want is not None:
                    out[name] = (m, tar.extractfile(m).read(want) if want and m.isreg() else None)
    except tarfile.TarError as e:
        p.kill()
        err = p.communicate()[1].decode(errors="replace").strip().splitlines()
        raise DistroError(f"{say(deb)}: not a Debian package ({say(err[0] if err else e)})")
    finally:
        if p.poll() is None:
            p.kill()
        p.wait()
        p.stdout.close()
        p.stderr.close()
    return out


def check_deb(deb):
    """A .deb's members read before anything is written (it is input from
    someone else); DistroError says what is wrong with it."""
    scan_deb(deb)


def member_problem(m):
    """Why a package member must not be unpacked, or None."""
    name = os.path.normpath(m.name)
    if os.path.isabs(m.name) or name == ".." or name.startswith("../"):
        return f"member {say(m.name)} leads out of the package"
    if not (m.isreg() or m.isdir() or m.issym() or m.islnk()):
        return f"member {say(m.name)} is not a regular file, a directory or a link"
    image = IMAGE.fullmatch(name)
    if image and not RELEASE.fullmatch(image.group(1)):
        return f"member {say(m.name)} names no kernel release ({RELEASE_CHARS})"
    if m.issym() or m.islnk():
        base = os.path.dirname(name) if m.issym() else ""
        to = os.path.normpath(os.path.join(base, m.linkname))
        if os.path.isabs(m.linkname) or to == ".." or to.startswith("../"):
            return f"link {say(m.name)} -> {say(m.linkname)} leads out of the package"
    return None


def parse_config(lines):
    """{CONFIG_X: value} of a kernel config's lines."""
    out = {}
    for line in lines:
        k, sep, v = line.strip().partition("=")
        if sep and k.startswith("CONFIG_"):
            out[k] = v
    return out


def peek_image(deb):
    """What distro.kernel.resolve() finds in a linux-image .deb, read from
    the package without unpacking it: (release, the image's first bytes or
    None, its boot/config-<release> as {CONFIG_X: value} or None). The
    same refusals as resolve()'s."""
    budget, mods = [KEPT_MAX], set()

    def keep(name, m):
        # The files in boot/ (the image may be a link to one of them), as
        # much of them as the budget allows: the package is someone else's;
        # of lib/modules/, the directories in it (a member inside one says
        # it is one, as an unpack would make it).
        parts = name.split("/")
        if parts[:2] == ["lib", "modules"] and len(parts) > 2 and (len(parts) > 3 or m.isdir()):
            mods.add(parts[2])
        if os.path.dirname(name) != "boot":
            return None
        want = min(budget[0], CONFIG_MAX if name.startswith("boot/config-") else HEAD_MAX)
        budget[0] -= want
        return want
    members = scan_deb(deb, keep)
    images = sorted(n for n in members if IMAGE.fullmatch(n))
    if len(images) != 1:
        raise DistroError(f"{say(deb)}: want one boot/vmlinuz-<release>, found {len(images)}")
    release = IMAGE.fullmatch(images[0]).group(1)
    if release not in mods:
        raise DistroError(f"{say(deb)}: no lib/modules/{say(release)} beside {images[0]}")
    cfg = members.get(f"boot/config-{release}", (None, None))[1]
    return (release, link_target(members, images[0])[1],
            parse_config(cfg.decode(errors="replace").splitlines()) if cfg is not None else None)


def link_target(members, name, hops=8):
    """(member, head) that name is, its links followed inside the package."""
    m, head = members[name]
    for _ in range(hops):
        if not (m.issym() or m.islnk()):
            break
        to = os.path.normpath(os.path.join(os.path.dirname(name), m.linkname) if m.issym() else m.linkname)
        if to not in members:
            return None, None
        name, (m, head) = to, members[to]
    return m, head


def peek_debug(deb, release=None):
    """The usr/lib/debug/boot/vmlinux-<release> (or the only one) of a -dbg
    .deb, named without unpacking it, or None: distro.kernel.debug_vmlinux()'s
    answer on the unpacked package."""
    pat = re.compile(r"usr/lib/debug/boot/vmlinux-" + (re.escape(release) if release else r"[^/]+"))
    names = list(scan_deb(deb, lambda n, m: 0 if pat.fullmatch(n) else None))
    return names[0] if len(names) == 1 else None
