"""A distribution kernel with its modules (--kernel linux-image-*.deb, an
unpacked package, or a vmlinuz beside its /lib/modules): the image, and a
guest image that carries the modules each reproducer needs.

Which modules: the kernel tree's own Makefiles say which object a CONFIG_
option builds (`obj-$(CONFIG_XFS_FS) += xfs.o`); the options a reproducer
declares that the distribution builds as modules (=m in its config-<release>)
are loaded with modprobe before it starts (kmod's on a native guest;
on a foreign one, busybox's, with the modules decompressed here), their modules.dep closure
with them. The modules beside those (the same directory: nf_tables' nft_*,
can's protocols) are in the image too, for the kernel to load on demand.
The config itself goes in as /boot/config-<release>, where the harness reads
it when the kernel has no /proc/config.gz.
"""
import glob
import gzip
import hashlib
import lzma
import os
import re
import shutil
import subprocess

from .arches import ARCHES
from .paths import TOP, cache

MODULE_EXT = re.compile(r"\.ko(\.xz|\.zst|\.gz)?$")
# What every guest needs from the kernel before a reproducer runs: the
# virtio transport, the KTAP channel (virtio console), the scratch disk.
GUEST = {"x86_64": ["CONFIG_VIRTIO_PCI", "CONFIG_VIRTIO_CONSOLE"],
         "arm": ["CONFIG_VIRTIO_MMIO", "CONFIG_VIRTIO_CONSOLE"]}
DISK = ["CONFIG_VIRTIO_BLK"]


class DistroError(Exception):
    pass


def unpack_deb(deb):
    """A linux-image .deb unpacked once into the cache (never installed),
    with the modules.dep its postinst would have made (depmod -b)."""
    h = hashlib.sha256()
    with open(deb, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    root = os.path.join(cache(), "distro", f"{os.path.basename(deb)[:-4]}-{h.hexdigest()[:12]}")
    if not os.path.isdir(root):
        tmp = root + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        p = subprocess.run(["dpkg-deb", "-x", deb, tmp], capture_output=True, text=True)
        if p.returncode:
            raise DistroError(f"{deb}: dpkg-deb -x failed: {p.stderr.strip()}")
        os.replace(tmp, root)
    return root


def resolve(spec):
    """(image, release, root) for a distribution kernel spec, or None when
    spec is a plain image with no modules beside it."""
    if spec.endswith(".deb") and os.path.isfile(spec):
        root = unpack_deb(spec)
    elif os.path.isdir(spec):
        root = spec
    else:
        # <root>/boot/vmlinuz-<release> beside <root>/lib/modules/<release>
        name = os.path.basename(spec)
        if not name.startswith("vmlinuz-"):
            return None
        root = os.path.dirname(os.path.dirname(os.path.realpath(spec)))
        release = name[len("vmlinuz-"):]
        if not os.path.isdir(os.path.join(root, "lib", "modules", release)):
            return None
        return os.path.realpath(spec), release, root
    images = sorted(glob.glob(os.path.join(root, "boot", "vmlinuz-*")))
    if len(images) != 1:
        raise DistroError(f"{spec}: want one boot/vmlinuz-<release>, found {len(images)}")
    release = os.path.basename(images[0])[len("vmlinuz-"):]
    if not os.path.isdir(os.path.join(root, "lib", "modules", release)):
        raise DistroError(f"{spec}: no lib/modules/{release} beside {images[0]}")
    return images[0], release, root


def debug_vmlinux(root, release=None):
    """(vmlinux, modules' debug directory or None) of a -dbg package unpacked
    at root (or installed, root "/"), for release or the only one there."""
    boot = os.path.join(root, "usr", "lib", "debug", "boot")
    names = sorted(glob.glob(os.path.join(boot, f"vmlinux-{release or '*'}")))
    if len(names) != 1:
        return None
    rel = os.path.basename(names[0])[len("vmlinux-"):]
    mods = os.path.join(root, "usr", "lib", "debug", "lib", "modules", rel)
    return names[0], (mods if os.path.isdir(mods) else None)


def read_config(path):
    """{CONFIG_X: value} of a kernel config file."""
    out = {}
    with open(path, errors="replace") as f:
        for line in f:
            k, sep, v = line.strip().partition("=")
            if sep and k.startswith("CONFIG_"):
                out[k] = v
    return out


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


def ensure_depmod(root, release):
    moddir = os.path.join(root, "lib", "modules", release)
    if not os.path.exists(os.path.join(moddir, "modules.dep")):
        p = subprocess.run(["depmod", "-b", root, release], capture_output=True, text=True)
        if p.returncode:
            raise DistroError(f"depmod -b {root} {release}: {p.stderr.strip()}")
    return moddir


class Plan:
    """Per reproducer: the modules to load and why a reproducer cannot run."""

    def __init__(self, arch, release, root, tree, metas, repros):
        self.release, self.root = release, root
        self.moddir = ensure_depmod(root, release)
        cfg_path = os.path.join(root, "boot", f"config-{release}")
        self.config_path = cfg_path if os.path.isfile(cfg_path) else None
        cfg = read_config(cfg_path) if self.config_path else {}
        objs = option_objects(tree)
        files, deps = module_index(self.moddir)
        self.load, self.missing = {}, {}
        wanted = set()
        for r in repros:
            m = metas[r]
            opts = list(dict.fromkeys(GUEST[arch] + (DISK if int(m.get("disk_mib") or 0) else []) +
                                      [k.split("=")[0] for k in m.get("kconfig", [])]))
            mods, missing = [], []
            for opt in opts:
                if cfg.get(opt) != "m":
                    continue  # built in, or absent (the harness then says SKIP)
                found = [files[o] for o in objs.get(opt, []) if o in files]
                if not found:
                    missing.append(f"{opt}=m, but no module of it found among the package's")
                mods += found
            self.load[r] = [m for m in closure(mods, deps)]
            self.missing[r] = missing
            wanted.update(self.load[r])
        # The directories' other modules, for the kernel to load on demand
        # (nft expressions, can protocols), with what they need.
        dirs = {os.path.dirname(m) for m in wanted}
        extra = [f for f in deps if os.path.dirname(f) in dirs]
        self.files = closure(sorted(wanted) + sorted(extra), deps)

    def names(self, repro):
        return [os.path.basename(MODULE_EXT.sub("", f)) for f in self.load[repro]]


def native(arch):
    """Does the guest run the host's Debian architecture (and so its kmod)?"""
    p = subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True)
    return ARCHES[arch]["debarch"] == p.stdout.strip()


def plain_modules(plan, mods):
    """The plan's modules decompressed, with a modules.dep and modules.alias
    naming them so: a foreign guest has only busybox's modprobe, which is
    not sure to read xz (Debian's modules are xz-compressed)."""
    names = {}
    for f in plan.files:
        plain = MODULE_EXT.sub(".ko", f)
        names[f] = plain
        os.makedirs(os.path.join(mods, os.path.dirname(plain)), exist_ok=True)
        src = os.path.join(plan.moddir, f)
        opener = lzma.open if f.endswith(".xz") else gzip.open if f.endswith(".gz") else open
        if f.endswith(".zst"):
            raise DistroError(f"{f}: zstd modules are not handled for a foreign guest")
        with opener(src, "rb") as i, open(os.path.join(mods, plain), "wb") as o:
            shutil.copyfileobj(i, o)
    _, deps = module_index(plan.moddir)
    with open(os.path.join(mods, "modules.dep"), "w") as o:
        for f in plan.files:
            o.write(f"{names[f]}: {' '.join(names[d] for d in deps.get(f, []) if d in names)}\n")
    alias = os.path.join(plan.moddir, "modules.alias")
    if os.path.isfile(alias):
        shutil.copy(alias, mods)


def guest_image(plan, base_initrd, arch):
    """krepro's initramfs with the modules overlay appended (the kernel
    unpacks concatenated cpio archives in order). Cached by content."""
    h = hashlib.sha256()
    for part in (base_initrd, plan.release, *plan.files,
                 *[f"{r}={' '.join(v)}" for r, v in sorted(plan.load.items())]):
        h.update(part.encode() if isinstance(part, str) else part)
    with open(base_initrd, "rb") as f:
        h.update(hashlib.sha256(f.read()).digest())
    out = os.path.join(cache(), "distro", f"initrd-{plan.release}-{h.hexdigest()[:16]}.cpio")
    if os.path.isfile(out):
        return out
    stage = out + ".stage"
    shutil.rmtree(stage, ignore_errors=True)
    mods = os.path.join(stage, "lib", "modules", plan.release)
    os.makedirs(mods)
    if native(arch):
        for meta in glob.glob(os.path.join(plan.moddir, "modules.*")):
            shutil.copy(meta, mods)
        for f in plan.files:
            os.makedirs(os.path.join(mods, os.path.dirname(f)), exist_ok=True)
            shutil.copy(os.path.join(plan.moddir, f), os.path.join(mods, f))
    else:
        plain_modules(plan, mods)
    os.makedirs(os.path.join(stage, "etc", "krepro", "modules"))
    for r in plan.load:
        with open(os.path.join(stage, "etc", "krepro", "modules", r), "w") as f:
            f.write("".join(n + "\n" for n in plan.names(r)))
    if plan.config_path:
        os.makedirs(os.path.join(stage, "boot"))
        shutil.copy(plan.config_path, os.path.join(stage, "boot", f"config-{plan.release}"))
    overlay = out + ".overlay"
    p = subprocess.run([os.path.join(TOP, "guest-image", "build.sh"), "--arch", arch,
                        "--overlay", stage, overlay], capture_output=True, text=True)
    if p.returncode:
        raise DistroError(f"guest-image/build.sh --overlay: {(p.stdout + p.stderr).strip()}")
    with open(out + ".tmp", "wb") as o:
        for part in (base_initrd, overlay):
            with open(part, "rb") as f:
                shutil.copyfileobj(f, o)
    os.replace(out + ".tmp", out)
    os.remove(overlay)
    shutil.rmtree(stage)
    return out
