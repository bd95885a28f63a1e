"""krepro bundle: one row (a reproducer on one kernel) as a directory and a
tarball that reproduce it where only QEMU is installed, for a report to a
mailing list: the kernel image as built, its config, the reproducer's own
guest image compressed as the kernel can unpack it, its disk if it needs
one, a run.sh with the QEMU command line krepro boots it with, a README and
SHA256SUMS."""
import gzip
import lzma
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
import types

from .. import arches, branches
from . import readme
from .. import disks
from ..distro import kernel as distro_kernel
from .. import guest, meta as metamod, runner
from ..arches import ARCHES
from ..kernels import Kernel, UsageError, Undecidable, kernel_config, prepare_kernels
from ..paths import file_sha256, repro_dir
from ..untrusted import no_build

TEMPLATE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "run-bundle.sh.in")
INITRD = "initramfs.cpio"
CONFIG = "kernel.config"
DISK = "disk.qcow2"


class BundleError(Exception):
    """The bundle cannot be made as asked (said in one line)."""


def compression(cfg):
    """How to compress the initramfs for a kernel of options cfg (None:
    unknown): (suffix, compress(data) -> bytes, why). gzip where the kernel
    unpacks it (CONFIG_RD_GZIP: krepro's kernels and Debian's), else xz
    (its decompressor wants a CRC32 check, not xz's default CRC64), else
    none: the kernel unpacks a plain cpio whatever its options."""
    if cfg is None:
        return "", None, "left uncompressed: the kernel's config is unknown"
    if cfg.get("CONFIG_RD_GZIP") == "y":
        return ".gz", lambda b: gzip.compress(b, 9, mtime=0), "gzip (CONFIG_RD_GZIP=y)"
    if cfg.get("CONFIG_RD_XZ") == "y":
        return ".xz", lambda b: lzma.compress(b, check=lzma.CHECK_CRC32), "xz (CONFIG_RD_XZ=y)"
    return "", None, "left uncompressed: the kernel has neither CONFIG_RD_GZIP nor CONFIG_RD_XZ"


def build_id(kernel):
    """What names the kernel's build in the bundle's name: krepro's stamp
    for a flavour, else the image's own hash."""
    return (kernel.build_id or file_sha256(kernel.image))[:12]


# Placeholders the QEMU command line is made with; run.sh fills them in.
SHELL_VARS = {"@kernel@": "kernel", "@initrd@": "initrd", "@disk@": "disk", "@out@": "out"}
ACCEL = "@accel@"


def shell_word(arg):
    """One QEMU argument as run.sh's text: quoted as is, or in double quotes
    with its placeholders as the shell variables that fill them."""
    if arg == ACCEL:
        return "$accel_args"
    if not any(p in arg for p in SHELL_VARS):
        return shlex.quote(arg)
    text = re.sub(r'([\\"$`])', r"\\\1", arg)
    for p, var in SHELL_VARS.items():
        text = text.replace(p, "${" + var + "}")
    return f'"{text}"'


def qemu_words(arch, meta, has_disk):
    """krepro's command line for meta's guests (guest.qemu_argv, and the
    serial console as guest.boot() keeps it), without the QEMU binary, as
    run.sh's words; the accelerator's options are run.sh's to choose."""
    cmdline = guest.kernel_cmdline(arch, meta.name, meta.cmdline)
    argv = guest.qemu_argv(arch, "tcg", "@kernel@", "@initrd@", cmdline, meta.cpus, "@out@/ktap.txt")[1:]
    i = argv.index("-accel")
    argv[i:i + 4] = [ACCEL]
    if has_disk:
        # A run's copy-on-write view, as krepro's; qcow2, which keeps the
        # written blocks only.
        argv += guest.disk_args(arch, "@disk@", fmt="qcow2")
    argv += ["-chardev", "file,id=con,path=@out@/console.log", "-serial", "chardev:con"]
    return " ".join(shell_word(a) for a in argv)


def config_file(kernel):
    """(the kernel's options or None, the config file to ship or None, a
    note for the README or None)."""
    cfg, source = kernel_config(kernel)
    if cfg is None:
        return None, None, None
    if os.path.isfile(source):
        return cfg, source, None
    return cfg, None, f"read from the image ({source})"


def guest_initrd(kernel, meta, base):
    """The initramfs the kernel boots: the reproducer's own image (the whole
    one where there is none), with a distribution kernel's modules appended
    as the runner appends them."""
    initrd = guest.own_image(base, meta.name)
    if kernel.distro_root:
        try:
            initrd = kernel.guest_image(initrd, [meta.name], {meta.name: meta})
        except distro_kernel.DistroError as e:
            raise BundleError(f"{kernel.label}'s guest image: {e}")
    return initrd


def make_disk(meta, arch, initrd, stage, jobs, branch=None):
    """meta's disk in the stage as qcow2 (None when it needs none), and a
    line for the README."""
    if meta.disk_mib <= 0:
        return None, None
    if not shutil.which("qemu-img"):
        raise BundleError(f"{meta.name} needs a {meta.disk_mib} MiB disk and qemu-img makes it "
                          "(Debian: apt-get install qemu-utils)")
    out = os.path.join(stage, DISK)
    if not meta.prepare:
        subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", out, f"{meta.disk_mib}M"], check=True)
        return out, f"`{DISK}`: the reproducer's blank {meta.disk_mib} MiB disk."
    with tempfile.TemporaryDirectory() as results:
        # The disk the runner prepares on the patched kernel (cached); this
        # boots a guest only when the cache has none for this build.
        config = types.SimpleNamespace(results=results, arch=arch, jobs=jobs, branch=branch)
        raw, err = disks.prepare(config, "tcg", initrd, meta, [])
    if err:
        raise BundleError(f"{meta.name}'s disk: {err}")
    # Compressed clusters: the filesystem's written blocks, a few MiB.
    subprocess.run(["qemu-img", "convert", "-c", "-O", "qcow2", raw, out], check=True)
    return out, (f"`{DISK}`: the reproducer's {meta.disk_mib} MiB disk as krepro prepares it "
                 "(written once by the kernel with the fix), as qcow2; every run sees it "
                 "copy-on-write (snapshot=on), so it never changes.")


def make(repro, spec, arch, out_dir, timeout=None, branch=None):
    """Write the bundle of repro on kernel spec into out_dir: (its directory,
    its tarball)."""
    branch = branch or branches.DEFAULT
    kernel, meta = ready(repro, spec, arch, branch)
    limit = timeout or meta.time_limit
    os.makedirs(out_dir, exist_ok=True)
    name = f"{repro}-{kernel.label}-{build_id(kernel)}"
    final = os.path.join(out_dir, name)
    stage = tempfile.mkdtemp(prefix=f".{name}.", dir=out_dir)
    os.chmod(stage, 0o755)  # mkdtemp's 0700 would go into the tarball
    try:
        with guest.flocked("machine.lock", False, "waiting for a kernel build to finish"):
            try:
                # A guest image of the user's (KREPRO_INITRD), as the runner's.
                base = os.environ.get("KREPRO_INITRD") or runner.build_guest(arch)
            except RuntimeError as e:
                raise BundleError(str(e))
            initrd = guest_initrd(kernel, meta, base)
            own = guest.own_image(base, meta.name) != base
            disk, disk_note = make_disk(meta, arch, base, stage, guest.default_jobs(), branch)
        cfg, config_src, config_note = config_file(kernel)
        files, initrd_name, comp_why = write_files(stage, meta, kernel, arch, initrd, own,
                                                   config_src, cfg, disk)
        with open(os.path.join(stage, "README.md"), "w", encoding="utf-8") as f:
            f.write(readme.readme_text(meta, kernel, build_id(kernel), CONFIG, arch, files, comp_why,
                                          disk_note, config_note, limit))
        with open(os.path.join(stage, "run.sh"), "w") as f:
            f.write(run_sh(meta, kernel, arch, limit, initrd_name, disk is not None))
        os.chmod(os.path.join(stage, "run.sh"), 0o755)
        write_sums(stage)
        shutil.rmtree(final, ignore_errors=True)
        os.replace(stage, final)
    except BaseException:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    tarball = final + ".tar.gz"
    with tarfile.open(tarball + ".tmp", "w:gz", compresslevel=9) as t:
        t.add(final, arcname=name, filter=owner_free)
    os.replace(tarball + ".tmp", tarball)
    return final, tarball


def ready(repro, spec, arch, branch):
    """The kernel (checked, built or fetched, with the patched one a
    disk is prepared on) and repro's metadata (built): (kernel, meta)."""
    err = metamod.check_names(metamod.sources(), arch, [repro])
    if err:
        raise UsageError(err)
    kernel = Kernel(spec, arch, branch)
    kernel.check()
    if not no_build():
        metamod.ensure_built()
    meta = metamod.load_all().get(repro)
    if meta is None:
        raise BundleError(f"{repro}: in the source tree but not built: run make build")
    extra = (Kernel("patched", arch, branch),) if meta.prepare else ()
    if not prepare_kernels((kernel,) + extra):
        raise Undecidable(f"the kernel {spec} could not be had (above)")
    return kernel, meta


def owner_free(info):
    # Nobody's user name in a tarball meant for a mailing list.
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def write_files(stage, meta, kernel, arch, initrd, own, config_src, cfg, disk):
    """The kernel, its config, the initramfs and the reproducer's source in
    the stage: ([(name, size, what)], the initramfs's name, its compression)."""
    img_name = arches.image_name(arch)
    shutil.copyfile(kernel.image, os.path.join(stage, img_name))
    files = [(img_name, os.path.getsize(kernel.image), f"the kernel image as built ({kernel.label})")]
    if config_src:
        shutil.copyfile(config_src, os.path.join(stage, CONFIG))
    elif cfg is not None:
        with open(os.path.join(stage, CONFIG), "w") as f:
            f.write("".join(f"{k}={v}\n" for k, v in sorted(cfg.items())))
    if cfg is not None:
        files.append((CONFIG, os.path.getsize(os.path.join(stage, CONFIG)), "the kernel's config"))
    suffix, compress, why = compression(cfg)
    with open(initrd, "rb") as f:
        data = f.read()
    with open(os.path.join(stage, INITRD + suffix), "wb") as f:
        f.write(compress(data) if compress else data)
    files.append((INITRD + suffix, os.path.getsize(os.path.join(stage, INITRD + suffix)),
                  (f"the guest's initramfs: busybox, the init, {meta.name} and the programs it runs"
                   if own else "krepro's whole guest image (every reproducer)")
                  + (", and the distribution kernel's modules" if kernel.distro_root else "")
                  + f" ({readme.human(len(data))} unpacked)"))
    if disk:
        files.append((DISK, os.path.getsize(disk), "the reproducer's disk"))
    src = os.path.join(repro_dir(), meta.name, meta.name + ".c")
    if os.path.isfile(src):
        shutil.copyfile(src, os.path.join(stage, meta.name + ".c"))
        files.append((meta.name + ".c", os.path.getsize(src),
                      "the reproducer's source, to read (it builds with krepro's repro/lib)"))
    return files, INITRD + suffix, why


def run_sh(meta, kernel, arch, limit, initrd_name, has_disk):
    """run.sh: the template, with what it is for as a block of variable
    assignments, each value one shell-quoted word (a label or a name is
    data, whatever it holds), and QEMU's words, each quoted."""
    a = ARCHES[arch]
    with open(TEMPLATE) as f:
        text = f.read()
    values = {"repro": meta.name, "label": kernel.label, "limit": str(limit), "arch": arch,
              "hang_is_bug": "1" if meta.hang_is_bug else "0", "qemu": a["qemu"],
              "qemu_pkg": a["qemu_pkg"], "cpu": a["cpu"], "image": arches.image_name(arch),
              "initrd_name": initrd_name, "disk_name": DISK if has_disk else ""}
    block = "\n".join(f"{k}={shlex.quote(v)}" for k, v in values.items())
    return text.replace("@VALUES@", block, 1).replace("@ARGV@", qemu_words(arch, meta, has_disk), 1)


def write_sums(stage):
    names = sorted(n for n in os.listdir(stage) if n != "SHA256SUMS")
    with open(os.path.join(stage, "SHA256SUMS"), "w") as f:
        for n in names:
            f.write(f"{file_sha256(os.path.join(stage, n))}  {n}\n")


def summary(directory, tarball):
    """What make() wrote, with the sizes (said when the bundle is made)."""
    lines = [f"bundle: {directory}/"]
    for n in sorted(os.listdir(directory)):
        lines.append(f"  {n:<24} {readme.human(os.path.getsize(os.path.join(directory, n)))}")
    lines.append(f"tarball: {tarball} ({readme.human(os.path.getsize(tarball))}); "
                 f"run: tar xzf {os.path.basename(tarball)} && "
                 f"{os.path.basename(directory)}/run.sh")
    return "\n".join(lines)
