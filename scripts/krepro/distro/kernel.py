"""A distribution kernel with its modules (--kernel linux-image-*.deb, an
unpacked package, or a vmlinuz beside its /lib/modules): the image, and a
guest image that carries the modules each reproducer needs.

Which modules: the kernel tree's own Makefiles say which object a CONFIG_
option builds (`obj-$(CONFIG_XFS_FS) += xfs.o`); the options a reproducer
declares (with those they imply: nf_tables and nfnetlink for nftables'
families, IMPLIED) that the distribution builds as modules (=m in its
config-<release>) are loaded before it starts, each after what it needs:
their modules.dep closure, and their soft dependencies, which modprobe
follows only when it finds them and busybox's not at all: modules.softdep's
pre: and post: names (libcrc32c's crc32c) and the algorithms a module asks
for by name (REQUESTS), resolved through modules.alias. The guest's init
loads them one by one with modprobe (kmod's on a native guest; on a foreign
one, busybox's, with the modules decompressed here) and names the one that
failed, with the kernel's words, as the reproducer's BROKEN; an =m option
whose module the package lacks is its SKIP. The modules beside those (the
same directory: nf_tables' nft_*, can's protocols) are in the image too, for
the kernel to load on demand. The config itself goes in as
/boot/config-<release>, where the harness reads it when the kernel has no
/proc/config.gz.
"""
import glob
import gzip
import hashlib
import lzma
import os
import shutil
import subprocess

from ..arches import ARCHES
from .deb import DistroError, check_deb, parse_config, release_problem
from .modules import MODULE_EXT, Modules, closure, implied, mod_name, module_index, option_objects
from ..paths import TOP, cache, file_sha256
from ..untrusted import say

# What every guest needs from the kernel before a reproducer runs: the
# virtio transport, the KTAP channel (virtio console), the scratch disk.
GUEST = {"x86_64": ["CONFIG_VIRTIO_PCI", "CONFIG_VIRTIO_CONSOLE"],
         "arm": ["CONFIG_VIRTIO_MMIO", "CONFIG_VIRTIO_CONSOLE"]}
DISK = ["CONFIG_VIRTIO_BLK"]


def unpack_deb(deb):
    """A linux-image .deb unpacked once into the cache (never installed),
    with the modules.dep its postinst would have made (depmod -b); its
    members checked first (check_deb)."""
    root = os.path.join(cache(), "distro", f"{os.path.basename(deb)[:-4]}-{file_sha256(deb)[:12]}")
    if not os.path.isdir(root):
        check_deb(deb)
        tmp = root + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        os.makedirs(tmp)
        p = subprocess.run(["dpkg-deb", "-x", deb, tmp], capture_output=True, text=True)
        if p.returncode:
            shutil.rmtree(tmp, ignore_errors=True)
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
        if release_problem(release):
            raise DistroError(f"{say(spec)}: {release_problem(release)}")
        return os.path.realpath(spec), release, root
    images = sorted(glob.glob(os.path.join(root, "boot", "vmlinuz-*")))
    if len(images) != 1:
        raise DistroError(f"{spec}: want one boot/vmlinuz-<release>, found {len(images)}")
    release = os.path.basename(images[0])[len("vmlinuz-"):]
    if release_problem(release):
        raise DistroError(f"{say(spec)}: boot/vmlinuz-<release>: {release_problem(release)}")
    if not os.path.isdir(os.path.join(root, "lib", "modules", release)):
        raise DistroError(f"{spec}: no lib/modules/{release} beside {images[0]}")
    check_links(root, ["boot", os.path.join("lib", "modules", release)])
    return images[0], release, root


def check_links(root, subs):
    """DistroError when something under root/sub (for each sub) is a link
    out of root, or neither a file, a directory nor a link: what goes into
    a guest image (and a bundle) comes from the package, not the host."""
    top = os.path.realpath(root)
    paths = [os.path.join(root, sub) for sub in subs]
    paths += [os.path.join(d, n) for p in list(paths) for d, ds, fs in os.walk(p) for n in ds + fs]
    for p in paths:
        real = os.path.realpath(p)
        if os.path.commonpath([top, real]) != top:
            raise DistroError(f"{say(p)}: a link out of {say(root)}")
        if not (os.path.isfile(real) or os.path.isdir(real)):
            raise DistroError(f"{say(p)}: not a regular file or a directory")


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
    with open(path, errors="replace") as f:
        return parse_config(f)


def ensure_depmod(root, release):
    moddir = os.path.join(root, "lib", "modules", release)
    if not os.path.exists(os.path.join(moddir, "modules.dep")):
        p = subprocess.run(["depmod", "-b", root, release], capture_output=True, text=True)
        if p.returncode:
            raise DistroError(f"depmod -b {root} {release}: {p.stderr.strip()}")
    return moddir


class Plan:
    """Per reproducer: the modules to load, in order, and why a reproducer
    cannot run (an =m option whose module the package lacks)."""

    def __init__(self, arch, release, root, tree, metas, repros):
        self.release, self.root = release, root
        self.moddir = ensure_depmod(root, release)
        cfg_path = os.path.join(root, "boot", f"config-{release}")
        self.config_path = cfg_path if os.path.isfile(cfg_path) else None
        cfg = read_config(cfg_path) if self.config_path else {}
        objs = option_objects(tree)
        mods = Modules(self.moddir)
        self.load, self.missing, self.entries = {}, {}, {}
        tops_all, wanted = set(), set()
        for r in repros:
            m = metas[r]
            opts = implied(GUEST[arch] + (DISK if m.disk_mib else []) +
                           [k.split("=")[0] for k in m.needs_kconfigs])
            tops, missing = [], []
            for opt in opts:
                if cfg.get(opt) != "m":
                    continue  # built in, or absent (the harness then says SKIP)
                found = [mods.files[o] for o in objs.get(opt, []) if o in mods.files]
                if not found:
                    kos = " or ".join(o + ".ko" for o in objs.get(opt, []))
                    missing.append(f"{opt}=m, but the package has no {kos}" if kos
                                   else f"{opt}=m, but no Makefile of the tree builds it")
                tops += [f for f in found if f not in tops]
            self.entries[r] = mods.order(tops)
            self.load[r] = [f for f, _, _ in self.entries[r]]
            self.missing[r] = missing
            tops_all.update(top for _, _, top in self.entries[r])
            wanted.update(self.load[r])
        # The other modules of the options' modules' directories, for the
        # kernel to load on demand (nft expressions, can protocols), with what
        # they need; not those of their dependencies' (lib/, crypto/, scsi/).
        dirs = {os.path.dirname(m) for m in tops_all}
        extra = [f for f in mods.deps if os.path.dirname(f) in dirs]
        self.files = closure(sorted(wanted) + sorted(extra), mods.deps)

    def names(self, repro):
        return [mod_name(f) for f in self.load[repro]]

    def modules_file(self, repro):
        """What the guest's init reads (guest-image/init, load_modules), a
        line each: "need|try MODULE TOP" in load order, need for what TOP
        cannot load without (its failure is the reproducer's BROKEN), try for
        a soft dependency (its failure is logged); then "skip WHY" for a
        module the package lacks (the reproducer SKIPs), after the virtio
        console its KTAP line goes to."""
        lines = [f"{'need' if req else 'try'} {mod_name(f)} {mod_name(top)}"
                 for f, req, top in self.entries[repro]]
        lines += [f"skip {why}" for why in self.missing[repro]]
        return "".join(line + "\n" for line in lines)


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
                 *[f"{r}={plan.modules_file(r)}" for r in sorted(plan.load)]):
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
            f.write(plan.modules_file(r))
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
