"""The kernels a run boots: krepro's flavours (built by scripts/kernels.sh
when missing or stale), a --tree built the same way, or a kernel of the
user's; their build stamps, configs and debug information."""
import difflib
import os
import subprocess

from . import arches, branches
from .distro import deb, kernel as distro_kernel
from . import detectors
from .log import log
from .paths import SCRIPTS, cache, kernels as kernels_dir
from .options import UsageError
from .untrusted import Refused, check_path_input, no_build, say

FLAVOURS = ("unpatched", "patched")


class Undecidable(Exception):
    """The commit cannot be judged (a --tree that does not build)."""


def kernels_sh(arch, *args, branch=None, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
               env_extra=None):
    """scripts/kernels.sh for arch and branch (None: the default); its output
    captured unless told not to."""
    env = dict(os.environ, KREPRO_ARCH=arch, KREPRO_BRANCH=branch or branches.DEFAULT,
               **(env_extra or {}))
    return subprocess.run([os.path.join(SCRIPTS, "kernels.sh"), *args], env=env,
                          stdout=stdout, stderr=stderr, text=True)


def flavour_image(arch, flavour, branch=None):
    return os.path.join(kernels_dir(),
                        f"{arches.image_name(arch)}-{branch or branches.DEFAULT}-{arch}-{flavour}")


def read_stamp(image):
    try:
        with open(image + ".stamp") as f:
            return f.read().strip() or None
    except OSError:
        return None


def unpatched_build(arch, branch=None):
    """The branch's unpatched flavour's build stamp, when it is built:
    recorded rates are valid for it."""
    return read_stamp(flavour_image(arch, "unpatched", branch))



# A kernel image or package is tens of MB; a -dbg package or a vmlinux
# with its debug information about a GB.
IMAGE_MAX = 512 << 20
DEBUG_MAX = 4 << 30


def is_elf(path):
    try:
        with open(path, "rb") as f:
            return f.read(4) == b"\x7fELF"
    except OSError:
        return False


class Kernel:
    def __init__(self, spec, arch, branch=None):
        self.spec, self.arch = spec, arch
        self.run_branch = branch or branches.DEFAULT  # --branch: the flavours' branch
        self.flavour = spec if spec in FLAVOURS else None
        self.tree = spec[5:] if spec.startswith("tree:") else None
        self.image = None
        self.release = self.distro_root = None
        self.debug = None     # --vmlinux: (vmlinux, its modules' debug directory)
        self.initrd = None    # the run's guest image, unless this kernel needs its own
        # Its options {CONFIG_X: value}, or None; and where they were read,
        # or why they could not be (kernel_config()).
        self.config = self.config_source = None
        self.peeked = None    # a dry run's (config, source) of a .deb it did not unpack
        if self.flavour:
            self.label = spec
        elif self.tree:
            self.label = os.path.basename(os.path.realpath(self.tree))
        else:
            self.label = os.path.basename(spec)

    def check(self, dry=False):
        """Bad input, before anything is built or booted. dry: a dry run,
        which writes nothing (a .deb is read, not unpacked)."""
        if self.tree is not None:
            if not os.path.isdir(self.tree):
                raise UsageError(f"--tree {self.tree}: " + ("not a directory" if os.path.lexists(self.tree)
                                                          else "no such directory"))
            self.check_label(f"--tree {self.tree}")
        elif not self.flavour:
            if not os.path.exists(self.spec):
                close = difflib.get_close_matches(self.spec, FLAVOURS, n=1, cutoff=0.6)
                raise UsageError(f"--kernel {self.spec}: no such file, and not a flavour "
                                 f"({' or '.join(FLAVOURS)})"
                                 + (f"; did you mean {close[0]}?" if close else ""))
            try:
                check_path_input(self.spec, IMAGE_MAX)
                if dry and self.spec.endswith(".deb") and os.path.isfile(self.spec):
                    return self.check_deb()
                found = distro_kernel.resolve(self.spec)
            except (distro_kernel.DistroError, Refused) as e:
                raise UsageError(f"--kernel {e}")
            if found:
                # A distribution kernel with its modules.
                self.image, self.release, self.distro_root = found
                self.label = self.release
            if not os.path.isfile(self.image or self.spec) or \
                    not arches.is_kernel_image(self.arch, self.image or self.spec):
                raise UsageError(self.not_an_image())
            self.image = os.path.realpath(self.image or self.spec)
            self.check_label(f"--kernel {self.spec}")

    def check_label(self, what):
        """A label names the kernel's run directories and is a word of the
        reports and of a bundle's run.sh: a release's characters only (a
        distribution kernel's release is checked where it is read)."""
        if not deb.RELEASE.fullmatch(self.label):
            raise UsageError(f"{what}: its name is the kernel's label, which is {deb.RELEASE_CHARS}; "
                             f"not '{say(self.label)}' (rename or link it)")

    def not_an_image(self):
        return (f"--kernel {self.spec}: not {arches.image_kind(self.arch)}"
                + (", a linux-image .deb, or an unpacked one" if self.arch == "x86_64" else ""))

    def check_deb(self):
        """A dry run's --kernel .deb: what check() finds in the unpacked
        package, read from the package (distro/deb.py)."""
        self.release, head, cfg = deb.peek_image(self.spec)
        if head is None or not arches.is_kernel_head(self.arch, head):
            raise UsageError(self.not_an_image())
        self.label = self.release
        self.image = os.path.realpath(self.spec)
        # Without its config, a run would read the unpacked image's: not here.
        self.peeked = (cfg, f"{self.spec}: boot/config-{self.release}") if cfg is not None else \
            (None, f"no boot/config-{self.release} in the package (a run reads the image's own)")

    def tree_problem(self):
        """Why kernels.sh build-tree would not build this --tree (exit 125,
        git bisect's skip), or None: said before any work, by a dry run too."""
        if self.tree is None:
            return None
        kb = arches.ARCHES[self.arch]["kbuild"]
        merge = os.path.join(self.tree, "scripts", "kconfig", "merge_config.sh")
        if os.path.isfile(os.path.join(self.tree, "Makefile")) and branches.of_tree(self.tree) and \
                os.path.isdir(os.path.join(self.tree, "arch", kb)) and os.access(merge, os.X_OK):
            return None
        return (f"--tree {self.tree}: not a kernel tree (no Makefile with VERSION and PATCHLEVEL, "
                f"arch/{kb}/ or scripts/kconfig/merge_config.sh); nothing built")

    def prepare(self):
        """Build what is missing (flavours, trees); the image path."""
        if self.flavour:
            self.image = flavour_image(self.arch, self.flavour, self.run_branch)
            if no_build():
                if not os.path.isfile(self.image):
                    raise Undecidable(f"KREPRO_NO_BUILD=1 and there is no {self.image}")
            elif not os.path.isfile(self.image) or \
                    kernels_sh(self.arch, "stale", self.flavour, branch=self.run_branch).stdout.strip():
                log(f"the {self.run_branch} {self.flavour} kernel is missing or stale: building it first")
                if kernels_sh(self.arch, "build", self.flavour, branch=self.run_branch, stdout=None,
                              stderr=None, env_extra={"KREPRO_DIE_CODE": "125"}).returncode:
                    raise Undecidable(f"building the {self.flavour} kernel failed")
        elif self.tree is not None:
            # kernels.sh prints the image's path; its progress goes to the terminal.
            p = kernels_sh(self.arch, "build-tree", self.tree, branch=self.run_branch, stderr=None,
                           env_extra={"KREPRO_DIE_CODE": "125"})
            if p.returncode:
                raise Undecidable(f"--tree {self.tree} was not built")
            self.image = p.stdout.strip().splitlines()[-1]
        self.image = os.path.realpath(self.image)
        return self.image

    def set_debug(self, spec, dry=False):
        """--vmlinux: a vmlinux with debug information, or Debian's
        linux-image-*-dbg package (.deb or unpacked) holding one. dry: a
        .deb is read, not unpacked."""
        is_deb = spec.endswith(".deb") and os.path.isfile(spec)
        try:
            check_path_input(spec, DEBUG_MAX)
            if dry and is_deb:
                return self.peek_debug(spec)
            root = distro_kernel.unpack_deb(spec) if is_deb else spec
        except FileNotFoundError:
            raise UsageError(f"--vmlinux {spec}: no such file")
        except (distro_kernel.DistroError, Refused, OSError) as e:
            raise UsageError(f"--vmlinux {say(e)}")
        if os.path.isdir(root):
            found = distro_kernel.debug_vmlinux(root, self.release)
            if not found:
                raise UsageError(f"--vmlinux {spec}: no usr/lib/debug/boot/vmlinux-"
                                 f"{self.release or '*'} in it")
            self.debug = found
        elif os.path.isfile(spec):
            if not is_elf(spec):
                raise UsageError(f"--vmlinux {spec}: not an ELF file (a vmlinux, not a bzImage "
                                 "or zImage), nor a -dbg .deb")
            self.debug = (os.path.realpath(spec), None)
        else:
            raise UsageError(f"--vmlinux {spec}: no such file")

    def peek_debug(self, spec):
        found = deb.peek_debug(spec, self.release)
        if not found:
            raise UsageError(f"--vmlinux {spec}: no usr/lib/debug/boot/vmlinux-{self.release or '*'} in it")
        # Named, not unpacked: a dry run decodes nothing.
        self.debug = (f"{spec}: {found}", None)

    def vmlinux(self):
        """(vmlinux, modules' debug directory) for this kernel, or (None, None):
        --vmlinux's; the one kernels.sh keeps beside each image it builds; a
        distribution's -dbg package installed on this host."""
        if self.debug:
            return self.debug
        cands = [self.image + ".vmlinux", os.path.join(os.path.dirname(self.image), "vmlinux")] \
            if self.image else []
        found = next((c for c in cands if os.path.isfile(c)), None)
        if found:
            return found, None
        if self.release:
            return distro_kernel.debug_vmlinux("/", self.release) or (None, None)
        return None, None

    @property
    def build_id(self):
        return read_stamp(self.image) if self.flavour else None

    @property
    def branch(self):
        """The stable branch this kernel is of (major.minor), or None when it
        cannot be told: a flavour's is the run's --branch; a distribution
        kernel's its release; a tree's its Makefile; an x86 image's its
        version string. It may be a branch krepro has no patches for."""
        if self.flavour:
            return self.run_branch
        if self.release:
            return branches.of_release(self.release)
        if self.tree is not None:
            return branches.of_tree(self.tree)
        if self.image and self.arch == "x86_64":
            return branches.of_bzimage(self.image)
        return None

    def source_tree(self):
        """krepro's tree of this kernel's branch (or the default branch's when
        krepro has none of it): kbuild's scripts and the Kconfig that maps
        options to modules."""
        b = self.branch if self.branch in branches.BRANCHES else self.run_branch
        return branches.tree_path(cache(), b), b

    def record(self):
        return {"label": self.label, "spec": self.spec, "image": self.image, "branch": self.branch,
                "build": self.build_id, "modules": self.release, "initrd": self.initrd,
                "config": self.config_source if self.config is not None else None}

    def load_config(self):
        self.config, self.config_source = kernel_config(self)
        return self.config

    def guest_image(self, base, repros, metas):
        """A distribution kernel's guest image: krepro's with the modules its
        reproducers need (scripts/krepro/distro/kernel.py)."""
        tree, branch = self.source_tree()
        if not os.path.isdir(tree) and kernels_sh(self.arch, "tree", branch=branch, stdout=None,
                                                  stderr=None).returncode:
            raise Undecidable("the kernel tree (scripts/kernels.sh tree) is needed to map options to modules")
        plan = distro_kernel.Plan(self.arch, self.release, self.distro_root, tree, metas, repros)
        for r in repros:
            for why in plan.missing[r]:
                log(f"warning: {self.label}: {why} ({r})")
            log(f"{self.label}: {r} gets {len(plan.load[r])} modules loaded before it starts"
                + (f" ({' '.join(plan.names(r))})" if plan.load[r] else ""))
        self.initrd = distro_kernel.guest_image(plan, base, self.arch)
        return self.initrd


def kernel_config(kernel):
    """(options {CONFIG_X: value}, where they were read), or (None, why not):
    a distribution kernel's boot/config-<release>; the .config kernels.sh
    keeps beside each image it installs (<image>.config; a kernel of the
    user's may have one there too) or in a --tree build's object directory;
    else the config the image carries (CONFIG_IKCONFIG)."""
    if kernel.peeked is not None:
        return kernel.peeked
    if kernel.distro_root:
        path = os.path.join(kernel.distro_root, "boot", f"config-{kernel.release}")
        if os.path.isfile(path):
            return distro_kernel.read_config(path), path
    image = kernel.image or (flavour_image(kernel.arch, kernel.flavour, kernel.run_branch)
                             if kernel.flavour else None)
    if not image or not os.path.isfile(image):
        return None, "no image yet"
    cands = [image + ".config"]
    in_obj = arches.ARCHES[kernel.arch]["image"]
    if kernel.tree is not None and image.endswith("/" + in_obj):
        cands.append(os.path.join(image[:-len(in_obj)], ".config"))
    found = next((c for c in cands if os.path.isfile(c)), None)
    if found:
        return distro_kernel.read_config(found), found
    return ikconfig(kernel, image)


def ikconfig(kernel, image):
    """The config an image carries, read by kbuild's scripts/extract-ikconfig
    (the --tree's own, else the cache tree's): (options, "CONFIG_IKCONFIG")
    or (None, why not)."""
    cands = [os.path.join(kernel.source_tree()[0], "scripts", "extract-ikconfig")]
    if kernel.tree:
        cands.insert(0, os.path.join(kernel.tree, "scripts", "extract-ikconfig"))
    x = next((c for c in cands if os.access(c, os.X_OK)), None)
    if not x:
        return None, "no scripts/extract-ikconfig (kernels.sh tree installs one)"
    p = subprocess.run([x, image], capture_output=True, text=True)
    cfg = distro_kernel.parse_config(p.stdout.splitlines()) if p.returncode == 0 else {}
    if not cfg:
        return None, "it carries no config (CONFIG_IKCONFIG)"
    return cfg, "CONFIG_IKCONFIG"


def check_kconfig(kernel, repros, metas):
    """A kernel of the user's: warn about options a reproducer needs and its
    config lacks (in the guest the harness says SKIP), and about evidence it
    cannot show (the rows say so too)."""
    cfg = kernel.config
    if cfg is None:
        log(f"warning: {kernel.label}'s options not checked, nor the detectors the "
            f"reproducers' evidence needs: {kernel.config_source}")
        return
    if kernel.config_source == "CONFIG_IKCONFIG" and cfg.get("CONFIG_IKCONFIG_PROC") != "y":
        log(f"warning: {kernel.label} lacks CONFIG_IKCONFIG_PROC=y: in the guest the harness "
            "cannot check options either")
    for r in repros:
        missing = metas[r].missing_options(cfg)
        if missing:
            log(f"warning: {kernel.label} lacks {' '.join(missing)}, which {r} needs: it will SKIP")
        blind = detectors.Sight(metas[r], cfg).note()
        if blind:
            log(f"warning: {kernel.label}: {r}: {blind}")


def prepare_kernels(kernels):
    """Build what is missing, then read each kernel's config (the rows need
    it to know what each kernel can show). False when a kernel cannot be had
    (logged)."""
    for k in kernels:
        try:
            k.prepare()
        except Undecidable as e:
            log(str(e))
            return False
        k.load_config()
    return True

