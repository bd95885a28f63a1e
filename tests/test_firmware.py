#!/usr/bin/env python3
"""What firmware and boot loaders print on a board's serial console is not
the kernel's: classify finds no report in it (scripts/krepro/reports/firmware.py).

The prologues here are lines written for this test in the manner of U-Boot,
coreboot, depthcharge, UEFI firmware, GRUB and Trusted Firmware, each with
a "WARNING:", "BUG:" or "error:" line that, were it the kernel's, would be a
report. They are put before, between and after real krepro guest consoles
(tests/console), whose own reports must come out the same."""
import io
import os
import sys
import tempfile
import unittest
from unittest import mock

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from krepro.reports import classify, firmware, logtext  # noqa: E402

CONSOLE = os.path.join(HERE, "console")
CLEAN = "real-xfs-nowait-dio-pass.log"          # a banner, no report, ends in "reboot:"
FAILING = "real-tcmu-uio-rmdir-unpatched.log"   # a banner and a KASAN report

PROLOGUES = {
    "u-boot": ("\nU-Boot SPL 2024.01 (Feb 02 2024 - 10:00:00 +0000)\nTrying to boot from MMC1\n\n"
               "U-Boot 2024.01 (Feb 02 2024 - 10:00:00 +0000)\n\nModel: Example Board\nDRAM:  2 GiB\n"
               "WARNING: the data cache is off, boot will be slow\nCore:  120 devices, 20 uclasses\n"
               "Hit any key to stop autoboot:  0\nLoading Environment from MMC... OK\n"
               "## Flattened Device Tree blob at 88000000\n   Loading Device Tree to 8ffe8000, end 8ffff2a1 ... OK\n\n"
               "Starting kernel ...\n\n"),
    "coreboot": ("\ncoreboot-4.22 Tue Mar 05 11:00:00 UTC 2024 bootblock starting (log level: 7)...\n"
                 "[INFO ]  CPU: Example(R) Core(TM) i3 @ 2.40GHz\n"
                 "[WARN ]  GPIO 44: pad configuration left as the strap set it\n"
                 "WARNING: GPIO 45 has no owner in the pad table\n"
                 "BUG: cbmem area for the timestamps table missing\n"
                 "[INFO ]  Jumping to boot code at 0x00200000(0x99f7a000)\n"),
    "depthcharge": ("Starting depthcharge on Example board...\nWARNING: vboot nonvolatile data is blank\n"
                    "Wipe memory regions:\n\t[0x00000000001000, 0x000000000a0000)\n"
                    "jumping to kernel\n"),
    "uefi": ("BdsDxe: loading Boot0001 \"UEFI Misc Device\" from PciRoot(0x0)/Pci(0x3,0x0)\n"
             "BdsDxe: starting Boot0001 \"UEFI Misc Device\" from PciRoot(0x0)/Pci(0x3,0x0)\n"
             "WARNING: no Secure Boot keys are enrolled\nEFI stub: Booting Linux Kernel...\n"
             "EFI stub: Using DTB from configuration table\nEFI stub: Exiting boot services...\n"),
    "grub": ("Welcome to GRUB!\n\nerror: file `/boot/grub/fonts/unicode.pf2' not found.\n"
             "error: no suitable video mode found.\nWARNING: no console will be available to OS\n"
             "Loading Linux 6.1.0 ...\nLoading initial ramdisk ...\n"),
    "tf-a": ("NOTICE:  BL31: v2.10.0(release):v2.10.0\nNOTICE:  BL31: Built : 10:00:00, Feb  2 2024\n"
             "WARNING: BL31: cortex_a53: CPU workaround for erratum 1530924 was missing!\n"
             "INFO:    BL31: Preparing for EL3 exit to normal world\n"),
    "x86 boot stub": ("SeaBIOS (version 1.16.3)\nBooting from ROM...\nWARNING: option ROM 2 skipped\n"
                      "Decompressing Linux... Parsing ELF... done.\nBooting the kernel.\n"),
    "arm boot stub": ("## Booting kernel from zImage at 0x61000000\nWARNING: ATAGs are not supported\n"
                      "Uncompressing Linux... done, booting the kernel.\n"),
}


def read(name):
    with open(os.path.join(CONSOLE, name)) as f:
        return f.read()


def found(text):
    return [(c["line"], c["culprit"]) for c, _ in classify.reports_of(io.StringIO(text))]


def shifted(reports, by):
    return [(n + by, title) for n, title in reports]


def lines(text):
    return text.count("\n")


class Prologue(unittest.TestCase):
    def test_each_prologue_alone_is_taken_for_the_kernels(self):
        # No banner at all: whose the lines are is not known, so they are
        # the kernel's, as before; each prologue holds a would-be report.
        for name, text in PROLOGUES.items():
            with self.subTest(name):
                if name.endswith("boot stub"):
                    continue   # it ends with the banner: what is before it is not the kernel's
                self.assertTrue(found(text), name)

    def test_no_report_before_the_first_banner(self):
        clean, failing = read(CLEAN), read(FAILING)
        want = found(failing)
        self.assertTrue(want)
        self.assertEqual(found(clean), [])
        for name, text in PROLOGUES.items():
            with self.subTest(name):
                self.assertEqual(found(text + clean), [])
                self.assertEqual(found(text + failing), shifted(want, lines(text)))

    def test_no_report_between_a_kernels_end_and_the_next_banner(self):
        clean, failing = read(CLEAN), read(FAILING)
        self.assertTrue(clean.rstrip().endswith("reboot: machine restart"))
        want = found(failing)
        for name, text in PROLOGUES.items():
            with self.subTest(name):
                log = clean + text + failing + text + clean
                self.assertEqual(found(log), shifted(want, lines(clean + text)))

    def test_a_quiet_boot_after_an_end_is_the_kernels(self):
        # A kernel booted quiet prints no banner: its messages, their
        # timestamps starting again, are a new kernel's.
        clean, failing = read(CLEAN), read(FAILING)
        quiet = failing[failing.index("\n") + 1:]
        self.assertNotIn("Linux version", quiet)
        want = found(quiet)
        self.assertTrue(want)
        text = PROLOGUES["coreboot"]
        self.assertEqual(found(clean + text + quiet), shifted(want, lines(clean + text)))

    def test_a_report_the_kernel_prints_is_kept_around_firmware(self):
        failing = read(FAILING)
        want = found(failing)
        text = PROLOGUES["u-boot"]
        log = text + failing + text + failing
        self.assertEqual(found(log), shifted(want, lines(text))
                         + shifted(want, 2 * lines(text) + lines(failing)))


class Reading(unittest.TestCase):
    def test_the_first_line_is_read_whatever_the_block(self):
        # Whose the log is is told by its first line: the reader hands it
        # on even when it holds no needle, at any block size.
        text = "[    1.000000] a kernel line\n" + "plain\n" * 30 + "WARNING: x\n" + "plain\n" * 5
        for size in (7, 64, 1 << 20):
            got = [(n, hit) for n, _, hit in
                   logtext.marked_lines(io.StringIO(text), ["WARNING:"], 2, size, first=True)]
            self.assertEqual(got[0], (1, True), size)
            self.assertEqual([n for n, hit in got if hit], [1, 32], size)

    def test_the_command_says_no_report(self):
        with tempfile.NamedTemporaryFile("w", suffix=".log") as f:
            f.write(PROLOGUES["coreboot"] + read(CLEAN))
            f.flush()
            out = io.StringIO()
            with mock.patch("sys.stdout", out):
                code = classify.main([f.name])
        self.assertEqual((code, out.getvalue()), (0, "no kernel report\n"))


class Reboot(unittest.TestCase):
    """syzkaller's "unexpected kernel reboot": the boot stub's line after
    the kernel's own output, not in a first boot's prologue nor after an
    orderly end."""
    STUB = "SeaBIOS (version 1.16.3)\nBooting from ROM..\nDecompressing Linux... Parsing ELF... done.\nBooting the kernel.\n"

    def test_a_reboot_in_a_running_kernel_is_reported(self):
        running = "[   50.100000] some_driver: probe of 0000:00:03.0 failed\n"
        log = running + self.STUB + read(CLEAN)
        self.assertEqual(found(log), [(lines(running + self.STUB), "unexpected kernel reboot")])

    def test_after_a_banner_too(self):
        clean = read(CLEAN)
        cut = clean[:clean.index("reboot: Restarting system")]
        cut = cut[:cut.rindex("\n") + 1]
        log = cut + self.STUB + clean
        self.assertEqual(found(log), [(lines(cut + self.STUB), "unexpected kernel reboot")])

    def test_the_first_boots_stub_is_no_reboot(self):
        self.assertEqual(found(self.STUB + read(CLEAN)), [])

    def test_a_stub_after_an_orderly_end_is_no_reboot(self):
        clean = read(CLEAN)
        self.assertEqual(found(clean + self.STUB + clean), [])


class NoBanner(unittest.TestCase):
    def test_a_pasted_report_without_a_banner_is_the_kernels(self):
        # No timestamps, no banner: held to the end of the log, then shown.
        with open(os.path.join(HERE, "pasted", "unrelated-blk-mq-bug-no-timestamps.log")) as f:
            text = f.read()
        self.assertNotIn("Linux version", text)
        self.assertTrue(found(text))

    def test_a_report_with_a_call_trace_before_a_banner_is_the_kernels(self):
        # A log that starts in a running kernel without timestamps: its
        # panic, then the board's next boot. No firmware prints a call
        # trace, so the report stays, though a banner comes first.
        with open(os.path.join(HERE, "pasted", "unrelated-blk-mq-bug-no-timestamps.log")) as f:
            text = f.read()
        want = found(text)
        self.assertTrue(want)
        # After a BUG the kernel may run on: whose the next lines are is not
        # known. After a panic's last line it does not: they are firmware's.
        panic = "Kernel panic - not syncing: Fatal exception\n---[ end Kernel panic - not syncing: Fatal exception ]---\n"
        self.assertEqual(found(text + panic)[:1], want)
        for name, prologue in PROLOGUES.items():
            with self.subTest(name):
                self.assertEqual(found(text + prologue + read(CLEAN))[:1], want)
                self.assertEqual(found(text + panic + prologue + read(CLEAN)), found(text + panic))

    def test_a_long_prologue_with_no_banner_is_the_kernels(self):
        # A log that has no banner within PROLOGUE_LINES: its lines are the
        # kernel's even if a banner comes after, and the reports before it
        # are not held longer.
        text = PROLOGUES["depthcharge"]
        filler = "noise\n" * 40
        with mock.patch.object(firmware, "PROLOGUE_LINES", 20):
            got = found(text + filler + read(CLEAN))
        self.assertEqual(got, [(2, found(text)[0][1])])

    def test_a_kernel_message_first_makes_the_log_the_kernels(self):
        # A log that starts inside a running kernel (printk's timestamp):
        # its reports before a later banner are the kernel's.
        warn = ("[  100.000000] WARNING: CPU: 0 PID: 1 at drivers/x/y.c:10 f+0x1/0x2\n"
                "[  100.000001] Modules linked in:\n")
        got = found(warn + read(CLEAN))
        self.assertEqual([n for n, _ in got], [1])


if __name__ == "__main__":
    unittest.main()
