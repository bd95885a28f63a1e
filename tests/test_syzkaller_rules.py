#!/usr/bin/env python3
"""syzkaller's rules the classifier follows beyond a report's title: when a
report is corrupted (its stacks cut, interleaved or missing; a line left of
a report whose header was lost), KMSAN's culprit, usb_submit_urb's WARNING
title, an inlined function (no culprit), SYZFAIL, an unexpected reboot, Rust panics, a bad page's allocator,
a stack overflow's deep stack and reports interleaved by task (caller ids). Every log here is
written for these tests in the kernel's report formats."""
import io
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from krepro.reports import classify, console, rustname  # noqa: E402
from krepro.verdict import decide  # noqa: E402
from krepro.meta import Reproducer  # noqa: E402

GPF = "general protection fault, probably for non-canonical address 0xdffffc0000000001: 0000 [#1]\n" \
      "RIP: 0010:victim_fn+0x1/0x2\nRSP: 0018:ffffc90000a0f8e8 EFLAGS: 00010246\n"
FRAMES = " victim_fn+0x1/0x2\n caller_fn+0x1/0x2\n do_syscall_64+0x1/0x2\n"
END = "---[ end trace 0000000000000000 ]---\n"


def first(log):
    return console.crashes(log)[0]


def verdict(log):
    c = first(log)
    return c["culprit"], c["corrupted"]


class Corrupted(unittest.TestCase):
    def test_a_whole_stack_is_not_corrupted(self):
        self.assertEqual(verdict(GPF + "Call Trace:\n <TASK>\n" + FRAMES + " </TASK>\n" + END),
                         ("general protection fault in victim_fn", False))

    def test_unsure_frames_do_not_count(self):
        # syzkaller drops the "? " lines of a timestamped report: the frames
        # after 20 of them are still soon enough after the heading; 16 lines
        # of registers are not.
        unsure = "".join(f" ? noise_{i}+0x1/0x2\n" for i in range(20))
        self.assertEqual(verdict(GPF + "Call Trace:\n" + unsure + FRAMES + END)[1], False)
        self.assertEqual(verdict(GPF + "Call Trace:\n" + "R10: 0\n" * 16 + FRAMES + END),
                         ("general protection fault in victim_fn", True))

    def test_a_log_that_ends_at_the_heading(self):
        self.assertEqual(verdict(GPF + "Call Trace:\n victim_fn+0x1/0x2\n"),
                         ("general protection fault in victim_fn", True))
        self.assertEqual(verdict(GPF + "Call Trace:\n victim_fn+0x1/0x2\n caller_fn+0x1/0x2\n"),
                         ("general protection fault in victim_fn", False))

    def test_no_stack_at_all(self):
        c = first("kernel BUG at fs/x.c:10!\ninvalid opcode: 0000 [#1] SMP\nRIP: 0010:x_fn+0x1/0x2\n" + END)
        self.assertEqual((c["culprit"], c["corrupted"]), ("kernel BUG in x_fn", True))
        # Cut at its length, the report's stack may come after: not decided.
        regs = "".join(f"R{i % 16}: 0000000000000000\n" for i in range(console.TRACE_LINES))
        c = first("kernel BUG at fs/x.c:10!\nRIP: 0010:x_fn+0x1/0x2\n" + regs + FRAMES)
        self.assertEqual((c["culprit"], c["corrupted"]), ("kernel BUG in x_fn", False))

    def test_a_stack_heading_right_after_another(self):
        log = ("BUG: KASAN: use-after-free in victim_fn+0x1/0x2\nRead of size 8 at addr ffff8880 by task t/1\n"
               "Call Trace:\n" + FRAMES + "\nAllocated by task 1:\nFreed by task 1:\n kfree+0x1/0x2\n"
               + "=" * 66 + "\n")
        self.assertEqual(verdict(log), ("KASAN: use-after-free Read in victim_fn", True))
        whole = log.replace("Allocated by task 1:\n", "Allocated by task 1:\n kmalloc+0x1/0x2\n\n")
        self.assertEqual(verdict(whole), ("KASAN: use-after-free Read in victim_fn", False))

    def test_a_report_that_needs_no_stack(self):
        log = "BUG: workqueue lockup - pool cpus=0 node=0 flags=0x0 nice=0 stuck for 40s!\n" + END
        self.assertEqual(verdict(log), ("BUG: workqueue lockup", False))

    def test_what_is_left_of_a_lost_report(self):
        for line, title in (("Kernel panic - not syncing: Fatal exception", "kernel panic: Fatal exception"),
                            ("Kernel panic - not syncing: panic_on_warn set ...", "kernel panic: panic_on_warn set"),
                            ("INFO: Freed in free_fn+0x1/0x2 age=3 cpu=0 pid=7", "INFO: Freed in free_fn age=NUM cpu=NUM pid=NUM"),
                            ("BUG: unable to handle kernel", "BUG: unable to handle kernel"),
                            ("BUG:", "BUG: corrupted"), ("WARNING:", "WARNING: corrupted")):
            with self.subTest(line):
                self.assertEqual(verdict(line + "\nCall Trace:\n" + FRAMES + END), (title, True))


KMSAN = ("=====================================================\n"
         "BUG: KMSAN: uninit-value in aes_encrypt+0x1/0x2\n aes_encrypt+0x1/0x2\n crypto_cbc_encrypt+0x1/0x2\n"
         " fs_crypt_block+0x1/0x2\n do_syscall_64+0x1/0x2\n\nUninit was created at:\n"
         " kmalloc_fn+0x1/0x2\n made_it_fn+0x1/0x2\n\nCPU: 0 PID: 7 Comm: t Not tainted 6.1.0 #1\n"
         "=====================================================\n")


class Titles(unittest.TestCase):
    def test_kmsan_names_the_first_frame_after_the_header(self):
        # No "Call Trace:" heading; crypto helpers are skipped; the origin
        # stack ("Uninit was created at:") is not the culprit's.
        self.assertEqual(verdict(KMSAN), ("KMSAN: uninit-value in fs_crypt_block", False))
        usb = KMSAN.replace("uninit-value in aes_encrypt", "kernel-usb-infoleak in usb_submit_urb").replace(
            " aes_encrypt+0x1/0x2\n crypto_cbc_encrypt+0x1/0x2\n",
            " usb_submit_urb+0x1/0x2\n usb_start_wait_urb+0x1/0x2\n usb_bulk_msg+0x1/0x2\n")
        self.assertEqual(verdict(usb), ("KMSAN: kernel-usb-infoleak in fs_crypt_block", False))

    def test_usb_submit_urb_warning_names_its_caller(self):
        log = ("------------[ cut here ]------------\nusb 1-1: BOGUS urb xfer, pipe 1 != type 3\n"
               "WARNING: CPU: 1 PID: 7 at drivers/usb/core/urb.c:503 usb_submit_urb+0x1/0x2\n"
               "Modules linked in:\nRIP: 0010:usb_submit_urb+0x1/0x2\nCall Trace:\n usb_start_wait_urb+0x1/0x2\n"
               " usb_bulk_msg+0x1/0x2\n tablet_open+0x1/0x2\n input_open_device+0x1/0x2\n" + END)
        self.assertEqual(verdict(log), ("WARNING in tablet_open/usb_submit_urb", False))

    def test_an_inlined_function_is_no_culprit(self):
        # A symbolised report (syzbot's) names inlined functions with no
        # offset; syzkaller titles from the console's lines, which have no
        # frame for them.
        log = ("INFO: task syz.0.1:5000 blocked for more than 143 seconds.\n"
               "Call Trace:\n <TASK>\n context_switch kernel/sched/core.c:5401 [inline]\n"
               " __schedule+0x1/0x2 kernel/sched/core.c:6747\n schedule+0x1/0x2 kernel/sched/core.c:6822\n"
               " lock_buffer include/linux/buffer_head.h:404 [inline]\n"
               " block_read_full_folio+0x1/0x2 fs/buffer.c:2377\n filemap_read_folio+0x1/0x2 mm/filemap.c:2420\n"
               " </TASK>\n")
        found = [c for c, _ in classify.reports_of(io.StringIO(log))]
        self.assertEqual([c["culprit"] for c in found], ["INFO: task hung in block_read_full_folio"])

    def test_syzfail(self):
        log = "executing program 1:\nSYZFAIL: negative running\n (errno 0: Success)\n"
        self.assertEqual(first(log)["culprit"], "SYZFAIL: negative running")
        self.assertFalse(first(log)["corrupted"])

    def test_reboot_in_the_middle_of_a_log(self):
        log = ("[   50.1] some_driver: probe\nSeaBIOS (version 1.16.0)\nBooting from ROM..\n"
               "Decompressing Linux... Parsing ELF... done.\nBooting the kernel.\n"
               "[    0.000000] Linux version 6.1.0\n")
        self.assertEqual(verdict(log), ("unexpected kernel reboot", False))
        # Not the loader's other line, nor a quote of it in a kernel message.
        self.assertEqual(console.crashes(log.replace("kernel.\n", "kernel (entry_offset: 0x0).\n")), [])
        quoted = "[   56.0] fuse: Unknown parameter 'Decompressing Linux... Booting the kernel.'\n"
        self.assertEqual(console.crashes(quoted), [])

    def test_a_guests_own_boot_is_no_reboot(self):
        console = ("Decompressing Linux... Parsing ELF... done.\nBooting the kernel.\n"
                   "[    0.000000] Linux version 6.1.0\n[    2.0] krepro-init: started, uptime 2.0 s\n"
                   "[    2.2] krepro: x: start\n[    3.0] krepro: x: result exit=0\n")
        r = decide(console, Reproducer.from_json({"name": "x", "cases": ["a"], "signatures": []}))
        self.assertEqual(r["reports"], [])
        again = console + "Booting the kernel.\n"
        r = decide(again, Reproducer.from_json({"name": "x", "cases": ["a"], "signatures": []}))
        self.assertEqual([c["culprit"] for c in r["reports"]], ["unexpected kernel reboot"])

    def test_rust_panic_is_titled_by_its_message(self):
        log = ("rust_kernel: panicked at drivers/x/node.rs:877:13:\nattempt to subtract with overflow\n"
               "------------[ cut here ]------------\nkernel BUG at rust/helpers/bug.c:7!\n"
               "Oops: invalid opcode: 0000 [#1] PREEMPT SMP\nRIP: 0010:rust_helper_BUG+0x8/0x10\nCall Trace:\n <TASK>\n"
               " _RNvCscSpY9Juk0HT_7___rustc17rust_begin_unwind+0x15b/0x160\n"
               " ? _RNvMs0_NtCshgDM7dBCdno_7xdriver4nodeNtB5_4Node6unsure+0x1/0x2\n"
               " _RNvNtCs9jEwPDbx20M_4core9panicking9panic_fmt+0x84/0x90\n"
               " _RNvMs3_NtCshgDM7dBCdno_7xdriver7processNtB5_7Process10update_ref+0x17e5/0x1860\n"
               " do_syscall_64+0x1/0x2\n" + END)
        self.assertEqual(verdict(log),
                         ("attempt to subtract with overflow in <xdriver::process::Process>::update_ref", False))

    def test_rust_demangling(self):
        for sym, path in (
                ("_RNvMs3_NtCshgDM7dBCdno_11rust_binder7processNtB5_7Process10update_ref",
                 "<rust_binder::process::Process>::update_ref"),
                ("_RNvXs1_CscPPBqWtAqum_4ashmNtB5_6AshmemNtNtCs43vyB533jt3_6kernel10miscdevice10MiscDevice4mmap",
                 "<ashm::Ashmem as kernel::miscdevice::MiscDevice>::mmap"),
                ("_RNvNtNtCs9jEwPDbx20M_4core9panicking11panic_const24panic_const_add_overflow",
                 "core::panicking::panic_const::panic_const_add_overflow"),
                ("_RNvMNtNtCs43vyB533jt3_6kernel5alloc9allocatorNtB2_11ReallocFunc4call",
                 "<kernel::alloc::allocator::ReallocFunc>::call"),
                ("plain_c_function", "plain_c_function"),
                ("_RNvB0_1a", "_RNvB0_1a"),   # a back reference to itself: left as it is
                ("_RNv", "_RNv")):
            with self.subTest(sym):
                self.assertEqual(rustname.demangle(sym), path)



class BadPage(unittest.TestCase):
    """A bad page is named by who allocated it (page_owner's stack), past
    the allocator's own frames; without that stack it is corrupted."""
    HEAD = ("BUG: Bad page state in process syz-executor209  pfn:7deea\n"
            "page dumped because: PAGE_FLAGS_CHECK_AT_FREE flag(s) set\n")
    OWNER = ("page_owner tracks the page as allocated\n"
             "page last allocated via order 0, migratetype Unmovable, gfp_mask 0x40c40(GFP_NOFS), pid 5096\n"
             " post_alloc_hook+0x1/0x2\n get_page_from_freelist+0x1/0x2\n __folio_alloc+0x1/0x2\n"
             " pagecache_get_page+0x1/0x2\n __get_metapage+0x1/0x2\n diNewExt+0x1/0x2\n"
             "page last free pid 5083 tgid 5083 stack trace:\n free_unref_page+0x1/0x2\n pipe_read+0x1/0x2\n")
    TRACE = ("Call Trace:\n <TASK>\n dump_stack_lvl+0x1/0x2\n bad_page+0x1/0x2\n free_unref_folios+0x1/0x2\n"
             " folio_add_lru+0x1/0x2\n shmem_get_folio_gfp+0x1/0x2\n </TASK>\n")

    def test_named_by_the_allocating_stack(self):
        self.assertEqual(verdict(self.HEAD + self.OWNER + self.TRACE),
                         ("BUG: Bad page state in __get_metapage", False))

    def test_without_page_owner(self):
        self.assertEqual(verdict(self.HEAD + self.TRACE), ("BUG: Bad page state in corrupted", True))


class CallerIds(unittest.TestCase):
    """With printk's caller id on each line, a report is read from its own
    task's lines, as syzkaller reads it: another task's lines in between
    neither cut nor name it, and its header is still among the headers."""
    OWN = ["general protection fault, probably for non-canonical address 0xdffffc0000000019: 0000 [#1]",
           "RIP: 0010:refcount_sub_and_test_checked+0x8e/0x200", "Call Trace:",
           " x25_connect+0x1/0x2", " __sys_connect+0x1/0x2", " do_syscall_64+0x1/0x2"]
    OTHER = ["BUG: KASAN: null-ptr-deref in other_fn+0x1/0x2", "Read of size 4 at addr 00000000000000c8",
             "Call Trace:", " other_fn+0x1/0x2", " other_caller+0x1/0x2", "---[ end trace 0 ]---"]

    def interleaved(self, own, other):
        lines = []
        for i in range(max(len(own), len(other))):
            lines += [f"[  10.{i:06d}][ T{tid}] {part[i]}" for tid, part in ((1560, own), (1533, other))
                      if i < len(part)]
        return "\n".join(lines) + "\n"

    def test_the_headers_task_names_it(self):
        found = list(classify.reports_of(io.StringIO(self.interleaved(self.OWN, self.OTHER))))
        self.assertEqual([(classify.title_of(c), c["corrupted"]) for c, _ in found][:1],
                         [("general protection fault in x25_connect", False)])
        self.assertIn(["KASAN", "KASAN: null-ptr-deref in other_fn"], found[0][0]["headers"])

    def test_without_caller_ids_every_line_counts(self):
        text = "".join(line.split("] ", 1)[1] + "\n" for line in self.interleaved(self.OWN, self.OTHER).splitlines())
        found = [classify.title_of(c) for c, _ in classify.reports_of(io.StringIO(text))]
        self.assertNotEqual(found[:1], ["general protection fault in x25_connect"])

    def test_a_backtrace_of_every_cpu_is_read(self):
        own = ["INFO: rcu_sched self-detected stall on CPU", "Sending NMI from CPU 0 to CPUs 1:"]
        text = "".join(f"[  10.{i:06d}][    C0] {line}\n" for i, line in enumerate(own))
        text += "[  10.100000][    C1] NMI backtrace for cpu 1\n"
        text += "".join(f"[  10.2{i:05d}][    C1] {f}\n" for i, f in enumerate(
            ["Call Trace:", " <IRQ>", " apic_timer_interrupt+0x1/0x2", " </IRQ>", " stalled_fn+0x1/0x2",
             " vfs_write+0x1/0x2", " ksys_write+0x1/0x2", " do_syscall_64+0x1/0x2"]))
        found = [classify.title_of(c) for c, _ in classify.reports_of(io.StringIO(text))]
        self.assertEqual(found[:1], ["INFO: rcu detected stall in stalled_fn"])


class DeepStack(unittest.TestCase):
    """A stack overflow is named by the frame before the syscall's or the
    work's dispatch, below hundreds of lines of recursion: such a report is
    read to console.DEEP_TRACE_LINES, however the log reaches krepro."""
    HEAD = ("BUG: TASK stack guard page was hit at ffffc90000a0fff8 (stack is ffffc90000a10000..ffffc90000a18000)\n"
            "stack guard page: 0000 [#1] PREEMPT SMP KASAN\nRIP: 0010:mark_lock+0x1/0x2\nCall Trace:\n <TASK>\n")
    TAIL = " rtnl_newlink+0x1/0x2\n rtnetlink_rcv_msg+0x1/0x2\n netlink_rcv_skb+0x1/0x2\n" + END

    def log(self, depth):
        recursion = "".join(f" {'recurse_a' if i % 2 else 'recurse_b'}+0x1/0x2\n" for i in range(depth))
        noise = "".join(f"[{i:5}.000000] noise line {i}\n" for i in range(20000))
        return noise + self.HEAD + recursion + self.TAIL

    def titles(self, text):
        return ([(c["culprit"], c["corrupted"]) for c in console.crashes(text)],
                [(classify.title_of(c), c["corrupted"]) for c, _ in classify.reports_of(io.StringIO(text))])

    def test_the_culprit_below_the_recursion(self):
        want = [("BUG: stack guard page was hit in rtnl_newlink", False)]
        self.assertEqual(self.titles(self.log(600)), (want, want))

    def test_a_deeper_stack_is_still_read_to_its_window_only(self):
        want = [("BUG: stack guard page was hit in corrupted", True)]
        self.assertEqual(self.titles(self.log(console.DEEP_TRACE_LINES)), (want, want))

    def test_other_reports_keep_their_window(self):
        recursion = "".join(" recurse_a+0x1/0x2\n" for _ in range(300))
        log = GPF + "Call Trace:\n" + recursion + FRAMES + END
        self.assertEqual([len(c["frames"]) for c in console.crashes(log)], [2])


if __name__ == "__main__":
    unittest.main(verbosity=2)
