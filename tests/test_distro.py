#!/usr/bin/env python3
"""Distribution kernels with their modules (scripts/krepro/distro/kernel.py), on a
fake package and a fake kernel tree: finding the image and its modules in a
.deb, an unpacked package or beside a vmlinuz; the options -> modules map
from the tree's Makefiles, with the options they imply (nf_tables and
nfnetlink for nftables); the modules.dep closure and the soft dependencies
(modules.softdep, the algorithms a module asks for), in load order; what the
guest's init is told to load, SKIP or try; the overlay the guest image gets.
Boots nothing."""
import lzma
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro.distro import deb as debmod, kernel as distro, modules  # noqa: E402
from krepro.meta import Reproducer  # noqa: E402

REL = "6.1.0-99-test-amd64"


def write(path, text=""):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class Distro(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        os.environ["KREPRO_CACHE"] = os.path.join(self.tmp, "cache")
        # The kernel tree: which object each option builds.
        self.tree = os.path.join(self.tmp, "linux")
        write(os.path.join(self.tree, "fs/xfs/Makefile"), "obj-$(CONFIG_XFS_FS)\t+= xfs.o\nxfs-y += xfs_aops.o\n")
        write(os.path.join(self.tree, "lib/Makefile"), "obj-$(CONFIG_LIBCRC32C) += \\\n\tlibcrc32c.o\n")
        write(os.path.join(self.tree, "drivers/block/Makefile"), "obj-$(CONFIG_BLK_DEV_LOOP) += loop.o\n")
        write(os.path.join(self.tree, "drivers/virtio/Makefile"),
              "obj-$(CONFIG_VIRTIO) += virtio.o virtio_ring.o\nobj-$(CONFIG_VIRTIO_PCI) += virtio_pci.o\n")
        write(os.path.join(self.tree, "drivers/char/Makefile"), "obj-$(CONFIG_VIRTIO_CONSOLE) += virtio_console.o\n")
        write(os.path.join(self.tree, "Documentation/Makefile"), "obj-$(CONFIG_XFS_FS) += nonsense.o\n")
        write(os.path.join(self.tree, "net/netfilter/Makefile"),
              "nf_tables-objs := nf_tables_core.o\nobj-$(CONFIG_NETFILTER_NETLINK) += nfnetlink.o\n"
              "obj-$(CONFIG_NF_TABLES) += nf_tables.o\nobj-$(CONFIG_NFT_FIB) += nft_fib.o\n")
        # The package: image, config, modules (not ELF: modules.dep given).
        self.root = os.path.join(self.tmp, "pkg")
        os.makedirs(os.path.join(self.root, "boot"))
        with open(os.path.join(self.root, "boot", f"vmlinuz-{REL}"), "wb") as f:
            f.write(b"\0" * 514 + b"HdrS" + b"\0" * 64)
        write(os.path.join(self.root, "boot", f"config-{REL}"),
              "CONFIG_XFS_FS=m\nCONFIG_BLK_DEV_LOOP=y\nCONFIG_VIRTIO_PCI=m\nCONFIG_VIRTIO_CONSOLE=m\n"
              "CONFIG_VIRTIO=m\nCONFIG_LIBCRC32C=m\n# CONFIG_CAN is not set\nCONFIG_CRYPTO_CRC32C=m\n"
              "CONFIG_NETFILTER_NETLINK=m\nCONFIG_NF_TABLES=m\nCONFIG_NF_TABLES_IPV4=y\nCONFIG_NFT_FIB=m\n")
        mods = os.path.join(self.root, "lib", "modules", REL)
        for m in ("fs/xfs/xfs.ko.xz", "fs/xfs/xfs_other.ko.xz", "lib/libcrc32c.ko.xz",
                  "drivers/virtio/virtio.ko.xz", "drivers/virtio/virtio_ring.ko.xz",
                  "drivers/virtio/virtio_pci.ko.xz", "drivers/char/virtio_console.ko.xz",
                  "drivers/gpu/big.ko.xz", "crypto/crc32c_generic.ko.xz", "arch/x86/crypto/crc32c-intel.ko.xz",
                  "net/netfilter/nfnetlink.ko.xz", "net/netfilter/nf_tables.ko.xz",
                  "net/netfilter/nft_fib.ko.xz", "lib/libother.ko.xz"):
            write(os.path.join(mods, "kernel", m), m)
        write(os.path.join(mods, "modules.dep"), "\n".join([
            "kernel/fs/xfs/xfs.ko.xz: kernel/lib/libcrc32c.ko.xz",
            "kernel/fs/xfs/xfs_other.ko.xz:",
            "kernel/lib/libcrc32c.ko.xz:",
            "kernel/drivers/virtio/virtio.ko.xz:",
            "kernel/drivers/virtio/virtio_ring.ko.xz:",
            "kernel/drivers/virtio/virtio_pci.ko.xz: kernel/drivers/virtio/virtio_ring.ko.xz "
            "kernel/drivers/virtio/virtio.ko.xz",
            "kernel/drivers/char/virtio_console.ko.xz: kernel/drivers/virtio/virtio_ring.ko.xz "
            "kernel/drivers/virtio/virtio.ko.xz",
            "kernel/drivers/gpu/big.ko.xz:",
            "kernel/lib/libother.ko.xz:",
            "kernel/crypto/crc32c_generic.ko.xz:",
            "kernel/arch/x86/crypto/crc32c-intel.ko.xz:",
            "kernel/net/netfilter/nfnetlink.ko.xz:",
            "kernel/net/netfilter/nf_tables.ko.xz: kernel/net/netfilter/nfnetlink.ko.xz kernel/lib/libcrc32c.ko.xz",
            "kernel/net/netfilter/nft_fib.ko.xz: kernel/net/netfilter/nf_tables.ko.xz", ""]))
        # crc32c by two modules' aliases, as the crypto API names algorithms.
        write(os.path.join(mods, "modules.alias"),
              "alias fs-xfs xfs\nalias crypto-crc32c crc32c_intel\nalias crc32c crc32c_intel\n"
              "alias crypto-crc32c crc32c_generic\nalias crc32c crc32c_generic\n"
              "alias net-pf-16-proto-12 nfnetlink\nalias pci:v00001AF4d*sv*sd*bc*sc*i* virtio_pci\n")
        self.metas = {r.name: r for r in (
            Reproducer("xfs-thing", needs_kconfigs=("CONFIG_XFS_FS", "CONFIG_BLK_DEV_LOOP")),
            Reproducer("can-thing", needs_kconfigs=("CONFIG_CAN",)),
            Reproducer("nft-thing", needs_kconfigs=("CONFIG_NF_TABLES_IPV4",)))}

    def tearDown(self):
        shutil.rmtree(self.tmp)
        del os.environ["KREPRO_CACHE"]

    def plan(self):
        return distro.Plan("x86_64", REL, self.root, self.tree, self.metas, ["xfs-thing", "can-thing"])

    def deb(self, root, name="linux-image-test"):
        deb = os.path.join(self.tmp, name + ".deb")
        os.makedirs(os.path.join(root, "DEBIAN"))
        write(os.path.join(root, "DEBIAN", "control"),
              f"Package: {name}\nVersion: 1\nArchitecture: amd64\nMaintainer: k <k@k>\nDescription: t\n")
        subprocess.run(["dpkg-deb", "--root-owner-group", "-b", root, deb], check=True,
                       stdout=subprocess.DEVNULL)
        shutil.rmtree(os.path.join(root, "DEBIAN"))
        return deb

    def test_a_dry_run_reads_a_deb_as_an_unpack_would_find_it(self):
        deb = self.deb(self.root)
        rel, head, cfg = debmod.peek_image(deb)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "cache")), "a peek writes nothing")
        image, rel2, root = distro.resolve(deb)
        with open(image, "rb") as f:
            self.assertEqual((rel, head), (rel2, f.read(debmod.HEAD_MAX)))
        self.assertEqual(cfg, distro.read_config(os.path.join(root, "boot", f"config-{REL}")))
        # The image a link to another file of boot/: its bytes, as the unpacked link's.
        boot = os.path.join(self.root, "boot")
        os.rename(os.path.join(boot, f"vmlinuz-{REL}"), os.path.join(boot, "real"))
        os.symlink("real", os.path.join(boot, f"vmlinuz-{REL}"))
        self.assertEqual(debmod.peek_image(self.deb(self.root, "linked"))[:2], (rel, head))
        # No lib/modules/<release>: refused, as resolve() refuses it.
        shutil.rmtree(os.path.join(self.root, "lib"))
        no_mods = self.deb(self.root, "no-modules")
        for f in (debmod.peek_image, distro.resolve):
            with self.assertRaisesRegex(distro.DistroError, f"no lib/modules/{REL}"):
                f(no_mods)
        dbg = os.path.join(self.tmp, "dbg")
        write(os.path.join(dbg, "usr/lib/debug/boot", f"vmlinux-{REL}"), "elf")
        dbg_deb = self.deb(dbg, "dbg")
        self.assertEqual(debmod.peek_debug(dbg_deb, REL), f"usr/lib/debug/boot/vmlinux-{REL}")
        self.assertIsNone(debmod.peek_debug(dbg_deb, "6.1.0-1-amd64"))

    def test_found_in_a_deb_an_unpacked_package_and_beside_a_vmlinuz(self):
        deb = self.deb(self.root)
        image, rel, root = distro.resolve(deb)
        self.assertEqual(rel, REL)
        self.assertTrue(root.startswith(os.path.join(self.tmp, "cache", "distro")))
        self.assertTrue(os.path.isfile(os.path.join(root, "lib", "modules", REL, "kernel", "fs", "xfs", "xfs.ko.xz")))
        self.assertEqual(distro.resolve(self.root)[1:], (REL, self.root))
        vmlinuz = os.path.join(self.root, "boot", f"vmlinuz-{REL}")
        self.assertEqual(distro.resolve(vmlinuz), (vmlinuz, REL, self.root))
        # A plain image, nothing beside it: not a distribution kernel.
        plain = os.path.join(self.tmp, "bzImage")
        shutil.copy(vmlinuz, plain)
        self.assertIsNone(distro.resolve(plain))

    def test_debug_vmlinux_of_a_dbg_package(self):
        dbg = os.path.join(self.tmp, "dbg")
        self.assertIsNone(distro.debug_vmlinux(dbg, REL))
        write(os.path.join(dbg, "usr/lib/debug/boot", f"vmlinux-{REL}"), "elf")
        self.assertEqual(distro.debug_vmlinux(dbg, REL),
                         (os.path.join(dbg, "usr/lib/debug/boot", f"vmlinux-{REL}"), None))
        write(os.path.join(dbg, "usr/lib/debug/lib/modules", REL, "kernel/fs/xfs/xfs.ko"), "elf")
        self.assertEqual(distro.debug_vmlinux(dbg)[1], os.path.join(dbg, "usr/lib/debug/lib/modules", REL))
        # Another release's package is not this kernel's.
        self.assertIsNone(distro.debug_vmlinux(dbg, "6.1.0-1-amd64"))

    def test_options_map_to_objects_by_the_trees_makefiles(self):
        objs = modules.option_objects(self.tree)
        self.assertEqual(objs["CONFIG_XFS_FS"], ["fs/xfs/xfs"])
        self.assertEqual(objs["CONFIG_LIBCRC32C"], ["lib/libcrc32c"])  # a continued line
        self.assertEqual(objs["CONFIG_VIRTIO"], ["drivers/virtio/virtio", "drivers/virtio/virtio_ring"])

    def test_modules_to_load_in_order_and_what_is_missing(self):
        p = self.plan()
        # virtio first (the KTAP channel), each module after what it needs;
        # loop is built in, CAN absent (the harness says SKIP in the guest).
        self.assertEqual(p.names("xfs-thing"),
                         ["virtio_ring", "virtio", "virtio_pci", "virtio_console",
                          "crc32c_intel", "crc32c_generic", "libcrc32c", "xfs"])
        self.assertEqual(p.names("can-thing"), ["virtio_ring", "virtio", "virtio_pci", "virtio_console"])
        self.assertEqual(p.missing["xfs-thing"], [])
        # The options' modules' directories' other modules come along
        # (on-demand loading), not those of a dependency's (lib/), no others.
        self.assertIn("kernel/fs/xfs/xfs_other.ko.xz", p.files)
        self.assertNotIn("kernel/lib/libother.ko.xz", p.files)
        self.assertNotIn("kernel/drivers/gpu/big.ko.xz", p.files)

    def drop_xfs(self):
        os.remove(os.path.join(self.root, "lib", "modules", REL, "kernel", "fs", "xfs", "xfs.ko.xz"))
        with open(os.path.join(self.root, "lib", "modules", REL, "modules.dep")) as f:
            dep = f.read().replace("kernel/fs/xfs/xfs.ko.xz: kernel/lib/libcrc32c.ko.xz\n", "")
        write(os.path.join(self.root, "lib", "modules", REL, "modules.dep"), dep)

    def test_a_module_the_package_lacks_is_named(self):
        self.drop_xfs()
        self.assertEqual(self.plan().missing["xfs-thing"], ["CONFIG_XFS_FS=m, but the package has no fs/xfs/xfs.ko"])

    def softdep(self, text):
        write(os.path.join(self.root, "lib", "modules", REL, "modules.softdep"), text)

    def test_softdeps_parsed_as_modprobe_reads_them(self):
        self.softdep("# Soft dependencies extracted from modules themselves.\n"
                     "softdep libcrc32c pre: crc32c\n"
                     "softdep ipmi_msghandler post: ipmi_devintf\n"
                     "softdep cifs gcm\n"                     # no pre:/post: ignored, as by kmod
                     "softdep crc-t10dif pre: crct10dif post: a b\n"
                     "softdep ksmbd pre: crc32\nsoftdep ksmbd pre: gcm\n"   # lines add up
                     "softdep\n")
        soft = modules.read_softdeps(os.path.join(self.root, "lib", "modules", REL))
        self.assertEqual(soft, {"libcrc32c": (["crc32c"], []), "ipmi_msghandler": ([], ["ipmi_devintf"]),
                                "cifs": ([], []), "crc_t10dif": (["crct10dif"], ["a", "b"]),
                                "ksmbd": (["crc32", "gcm"], [])})
        # No file (a package whose depmod wrote none): no soft dependencies.
        self.assertEqual(modules.read_softdeps(self.tmp), {})

    def test_soft_dependencies_load_first_by_alias_and_may_fail(self):
        # modules.softdep names crc32c (an alias of two modules); loop's post:
        # names a module the package lacks, xfs' pre: a module (nfnetlink).
        self.softdep("softdep libcrc32c pre: crc32c\nsoftdep xfs pre: nfnetlink post: nosuch crc32c-intel\n")
        p = self.plan()
        # As modprobe orders them: a module's pre: dependencies, its
        # modules.dep ones, itself, its post: ones.
        self.assertEqual(p.modules_file("xfs-thing").splitlines()[4:], [
            "try nfnetlink xfs", "try crc32c_intel xfs", "try crc32c_generic xfs",
            "need libcrc32c xfs", "need xfs xfs"])
        # An algorithm module comes alone, not with its directory.
        self.assertIn("kernel/crypto/crc32c_generic.ko.xz", p.files)
        self.assertNotIn("kernel/drivers/gpu/big.ko.xz", p.files)

    def test_known_requests_without_a_softdep_file(self):
        # An older depmod writes no modules.softdep: libcrc32c still gets the
        # crc32c its init asks the crypto API for, before it.
        names = self.plan().names("xfs-thing")
        self.assertLess(names.index("crc32c_generic"), names.index("libcrc32c"))
        self.assertLess(names.index("crc32c_intel"), names.index("libcrc32c"))

    def test_a_built_in_algorithm_is_nothing_to_load(self):
        # The cloud kernel builds crc32c in: no module has its alias.
        mods = os.path.join(self.root, "lib", "modules", REL)
        write(os.path.join(mods, "modules.alias"), "alias fs-xfs xfs\n")
        self.softdep("softdep libcrc32c pre: crc32c\n")
        self.assertEqual(self.plan().names("xfs-thing")[4:], ["libcrc32c", "xfs"])

    def test_nftables_gets_nfnetlink_and_nf_tables(self):
        # CONFIG_NF_TABLES_IPV4 is a bool inside nf_tables, no Makefile line of
        # its own: nfnetlink (for the NETLINK_NETFILTER socket) and nf_tables
        # are loaded all the same, nfnetlink first; nft_* come along.
        p = distro.Plan("x86_64", REL, self.root, self.tree, self.metas, ["nft-thing"])
        self.assertEqual(p.names("nft-thing")[4:],
                         ["nfnetlink", "crc32c_intel", "crc32c_generic", "libcrc32c", "nf_tables"])
        self.assertEqual(p.missing["nft-thing"], [])
        self.assertIn("kernel/net/netfilter/nft_fib.ko.xz", p.files)
        self.assertEqual(modules.implied(["CONFIG_NFT_FIB", "CONFIG_NF_TABLES", "CONFIG_VETH"]),
                         ["CONFIG_NFT_FIB", "CONFIG_NETFILTER_NETLINK", "CONFIG_NF_TABLES", "CONFIG_VETH"])

    def test_init_is_told_what_to_load_and_what_is_missing(self):
        self.drop_xfs()
        p = self.plan()
        lines = p.modules_file("xfs-thing").splitlines()
        # Needed modules in order, tries for the algorithm; the SKIP comes
        # last, once the virtio console (the KTAP channel) is loaded.
        self.assertEqual(lines[:4], ["need virtio_ring virtio_pci", "need virtio virtio_pci",
                                     "need virtio_pci virtio_pci", "need virtio_console virtio_console"])
        self.assertEqual(lines[-1], "skip CONFIG_XFS_FS=m, but the package has no fs/xfs/xfs.ko")
        self.assertEqual(p.modules_file("can-thing").count("\n"), 4)

    def test_overlay_appended_to_the_guest_image(self):
        base = os.path.join(self.tmp, "initramfs.cpio")
        stage = os.path.join(self.tmp, "base")
        write(os.path.join(stage, "init"), "#!/bin/sh\n")
        subprocess.run(f"cd {stage} && find . | cpio -o -H newc --quiet > {base}", shell=True, check=True)
        out = distro.guest_image(self.plan(), base, "x86_64")
        with open(base, "rb") as f:
            head = f.read()
        with open(out, "rb") as f:
            whole = f.read()
        self.assertTrue(whole.startswith(head))
        listing = subprocess.run(["cpio", "-t", "--quiet"], input=whole[len(head):],
                                 capture_output=True, check=True).stdout.decode().split()
        for want in (f"lib/modules/{REL}/kernel/fs/xfs/xfs.ko.xz", f"lib/modules/{REL}/modules.dep",
                     f"lib/modules/{REL}/modules.alias", "etc/krepro/modules/xfs-thing",
                     f"boot/config-{REL}", "usr/sbin/modprobe"):
            self.assertIn(want, listing)
        self.assertNotIn(f"lib/modules/{REL}/kernel/drivers/gpu/big.ko.xz", listing)
        # Cached: the same inputs give the same file without a rebuild.
        self.assertEqual(distro.guest_image(self.plan(), base, "x86_64"), out)

    def test_a_foreign_guest_gets_its_modules_decompressed_for_busybox(self):
        # As for the ARM guest: real xz modules, a plan for arm's transport.
        mods = os.path.join(self.root, "lib", "modules", REL)
        plan = distro.Plan("arm", REL, self.root, self.tree, self.metas, ["xfs-thing"])
        for m in plan.files:
            with lzma.open(os.path.join(mods, m), "wb") as f:
                f.write(b"\x7fELF " + m[len("kernel/"):].encode())
        stage = os.path.join(self.tmp, "stage")
        distro.plain_modules(plan, stage)
        with open(os.path.join(stage, "kernel", "fs", "xfs", "xfs.ko"), "rb") as f:
            self.assertEqual(f.read(), b"\x7fELF fs/xfs/xfs.ko.xz")
        self.assertFalse(os.path.exists(os.path.join(stage, "kernel", "fs", "xfs", "xfs.ko.xz")))
        with open(os.path.join(stage, "modules.dep")) as f:
            dep = f.read()
        self.assertIn("kernel/fs/xfs/xfs.ko: kernel/lib/libcrc32c.ko\n", dep)
        self.assertNotIn(".xz", dep)
        self.assertTrue(os.path.isfile(os.path.join(stage, "modules.alias")))


if __name__ == "__main__":
    unittest.main(verbosity=2)
