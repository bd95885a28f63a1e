"""syzkaller's title rules as krepro keeps them: what a frame name must
not be (SKIP), the lines a rule's steps look for (STEPS), and a row's
rule, column 5 of repro/lib/kernel-reports.tsv, parsed (parse_rule()).
reports/syztitle.py applies them to a report's lines.

A row's rule (column 5) is words: steps, done in order through the report's
lines, each finding the first line that matches it after the previous one:

  head     the function the header line names (" in FUNC")
  site     the crash site: RIP:, IP:, pc :, PC is at, MIPS's epc
  calls    a call trace heading (or 6.1 ARM's first unwinder entry)
  stack    the frames of the lines that follow, up to the next stack
  at, pc   a lockdep "at: FUNC" line; a "[<addr>] FUNC" line
  trying, takes, changed, became, leaving, leaks, allocated, irq, irqs, lastfn,
  protector, src: the lines STEPS names
  trace    short for "calls stack"; the rule when column 5 is empty
  none     no function: the title is the stem
  |        else: the plan after it, when the one before finds no function

and modifiers: "access" (needs KASAN's Read/Write line), "need=STEP" (a
report without that line is titled by its header line), "raw" (skip
nothing), "after=TEXT" (put after the function: "WARNING in
FUNC/usb_submit_urb"), "stem=next" (the stem is the line after the
header: a Rust panic's message), "nostack" (the report need not show a stack: a stack cut or
absent does not make it corrupted, stack_missing()), "corrupted" (the line
is what is left of a report whose header was lost: always corrupted), "skip=RE" (more frames to skip), "hung" and "stall" (syzkaller's
pickers for hangs and stalls), "deep" (the culprit can be far down a long
stack, a recursion's: the report is read to console.DEEP_TRACE_LINES lines,
not console.TRACE_LINES). A report whose rule finds no function is
"STEM in corrupted", and corrupted, as is one mixed with a fault
injection's stack.
"""
import functools
import re


# What is never the culprit, searched in a frame's name.
SKIP = re.compile("|".join((
    # sanitizers and the report printing and trapping machinery
    r"sanitizer|__asan|kasan|hwasan|__msan|kmsan|kcsan_setup|check_memory_region",
    r"check_heap_object|check_object|read_word_at_a_time|(read|write)_once_.*nocheck",
    r"print_address_description|panic|invalid_op|report_bug|fixup_bug|print_report",
    r"print_usage_bug|do_error|_trap$|do_trap|show_stack|dump_stack|walk_stack|dump_backtrace",
    r"warn_slowpath|warn_alloc|warn_bogus|__warn|print_tainted|printk|va_format",
    r"dev_(info|notice|warn|err|alert|crit|emerg)|hex_dump|stack_trace_|arch_stack_walk",
    r"seqprop_assert|__fortify_report|__alloc_frozen_pages|program_check_(exception|common)",
    # allocation
    r"alloc_page|k?v?[mzc]alloc|krealloc|kmem_cache|allocate_slab|slab_|folio_(alloc|unlock)",
    r"filemap_alloc_folio|__filemap_get_folio|find_or_create_page|do_read_cache_folio|read_cache_page",
    r"pagecache_get_page|grab_cache_page_write_begin|^kv?free$|kfree_skb",
    # debug objects, lockdep, locking
    r"debug_object|(timer|work)_is_static_object|lockdep|bh_(en|dis)able|perf_trace",
    r"lock_acquire|lock_release|lock_class|mark_lock|(reacquire|mark)_held_locks",
    r"print_unlock|imbalance_bug|raw_spin_rq|spin_(try)?lock|spin_unlock",
    r"(read|write)_(try)?lock|(read|write)_unlock|^down$|down_(read|write)|down_trylock",
    r"up_(read|write)|^_*mutex_|^rt_mutex_|owner_on_cpu|osq_(un)?lock|^(un)?lock_page",
    r"(trace|lockdep)_(hard|soft)irq|lock_timer_base",
    # atomics, bit ops, refcounts, lists, trees
    r"atomic(64)?_(dec|inc|read|set|or|xor|and|add|sub|fetch|xchg|cmpxchg|try)",
    r"(set|clear|change|test)_bit|^refcount_|^kref_|ref_tracker|^klist_",
    r"list_(add|del|replace|move|splice)|^_*rb_|xas_(start|load|find)|rhashtable_lookup",
    # string and copy helpers
    r"mem(cpy|cmp|set|chr|move|dup)|str(n?cmp|l?cpy|ncpy|scpy|n?len|n?str|chr|n?dup)",
    r"copy_(to|from)_(user|iter)|copy_(page|folio)_(to|from)_iter|^copy(in|out)$",
    r"[pg]et_user|might_(fault|sleep|resched)|string|pointer|s?c?n?printf|k?v?asprintf",
    r"_indirect_thunk_|^crc[0-9]+|crc_itu_t|assertfail|(read|write)[bwlq]$|logic_(in|out)",
    # waiting and tearing down on another's behalf
    r"__wake_up|^complete$|wait_for_completion|finish_wait|kthread_stop|del_timer",
    r"flush_work|cancel_work|try_to_grab_pending|(flush|drain|destroy)_workqueue|queue_work",
    r"insert_work|queue_delayed_work|__timer_delete_sync|sk_stop_timer_sync|__mod_timer",
    r"cleanup_srcu_struct|ida_free",
    # the device model and driver unregistering that reaches the bug
    r"kobject_|add_uevent_var|get_device_parent|device_(add|del|unregister|destroy|release)",
    r"devres_release_all|hwrng_unregister|i2c_del_adapter|__unregister_client",
    r"device_for_each_child|rollback_registered|unregister_netdev|sysfs_remove",
    r"device_remove_file|tty_unregister_device|dummy_urb_enqueue|usb_kill_(anchored_)?urbs?",
    r"usb_control_msg|usb_hcd_submit_urb|usb_submit_urb|^put_device$|^get_taint$",
    r"^i(put|put_final|hold)$|fast_dput|dput|drop_nlink|mark_buffer_dirty|__phys_addr",
    r"find_lock_entries|truncate_inode_pages_range|extract_(user|iter)_to_sg",
    # arm64 fault entry
    r"do_(kernel|translation)_fault|do_mem_abort|el1_abort|el1h_64_sync",
)))
SUFFIX = re.compile(r"\..*$")
# Syscall wrappers, dropped from the name (the first that matches).
WRAPPER = re.compile(r"^(compat_SYSC_|compat_SyS_|SYSC_|SyS_|__(x64|ia32|arm64)_|____sys_|___sys_|"
                     r"__do_sys_|__se_sys_|__se_|__sys_|ksys_|sys_)")
ACCESS = re.compile(r"^ *(Read|Write) (of size|at addr)")
# Where a hang is named by what it waits for, not by who waits.
HANG_ANCHORS = (("rtnl_lock", None), ("synchronize_rcu", "synchronize_rcu"),
                ("synchronize_srcu", "synchronize_rcu"), ("synchronize_net", "synchronize_rcu"),
                ("synchronize_sched", "synchronize_rcu"))
HANG_SKIP = re.compile(r"sched|_lock|_slowlock|down|rwsem|completion|kthread|wait|synchronize|"
                       r"context_switch|__switch_to|cancel_delayed_work|rcu_barrier")
# Where work is dispatched: a stall is named by the function it dispatched to.
DISPATCH = re.compile("|".join((
    r"process_one_work|do_syscall_|do_fast_syscall_|sysenter_dispatch|tracesys_phase2",
    r"el0_svc_handler|invoke_syscall|ret_fast_syscall|netif_receive_skb|do_softirq",
    r"call_timer_fn|_run_timers|run_timer_softirq|hrtimer_run|run_ksoftirqd|smpboot_thread_fn",
    r"^kthread$|start_secondary|cpu_startup_entry|ret_from_fork",
    r"vfs_(read|write|iter_read|iter_write|ioctl|open)|do_iter_(read|write)|call_(read|write)_iter",
    r"new_sync_(read|write)|ksys_ioctl|compat_ioctl|compat_sys_ioctl|blkdev_(driver_)?ioctl",
    r"^call_mmap|mmap_region|do_mmap|do_dentry_open|do_iter_readv_writev",
    r"^sock_(sendmsg|recvmsg|release|mmap|do_ioctl|ioctl)|^__sock_release|^compat_sock_ioctl",
    r"^setsockopt$|kernel_setsockopt|sock_common_setsockopt|^listen$|kernel_listen",
    r"sk_common_release|^accept$|kernel_accept|^nfnetlink_rcv_msg|^rtnetlink_rcv_msg",
    r"^netlink_dump|^(sys_)?(socketpair|connect|ioctl)|__do_fault|do_page_fault|^page_fault$",
    r"__fput|task_work_run|exit_to_usermode|smp_call_function|tasklet_(hi_)?action",
)))


# A frame line of a stack: x86 and arm64 "func+0x1c/0x40" after up to two
# addresses; ARM "[<c0..>] (func) from [<c0..>] (caller+0x..)" and, without
# CONFIG_BACKTRACE_VERBOSE, "func from caller+0x..", each naming two.
FRAME_LINE = re.compile(r"^ *(?:\[<[0-9a-f]+>\] ){0,2}([A-Za-z_][A-Za-z0-9_.]*)\+0x[0-9a-f]+/0x[0-9a-f]+"
                        r"|^ *\[<[0-9a-f]+>\] \(([A-Za-z_][A-Za-z0-9_.]*)\) from \[<[0-9a-f]+>\] "
                        r"\(([A-Za-z_][A-Za-z0-9_.]*)\+0x"
                        r"|^ *([A-Za-z_][A-Za-z0-9_.]*) from ([A-Za-z_][A-Za-z0-9_.]*)\+0x[0-9a-f]+/0x")
# 6.1's ARM unwinder prints its trace with no heading: its first entry
# opens the trace (syzkaller would call such a report corrupted).
ARM_ENTRY = re.compile(r"^ *[A-Za-z_][A-Za-z0-9_.]* from [A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+/0x")
# A line that starts another stack: the one being read ends there.
STACK_START = re.compile(r"Call [Tt]race|Allocated:|Allocated by task [0-9]+:|Freed:|"
                         r"Freed by task [0-9]+:|[^k] backtrace( \(crc [0-9a-f]*\))?:|Backtrace:|"
                         r"Uninit was (stored to memory|created) at:|Local variable .* created at:")
# Each heading a report's stacks start with, apart: a report that has one
# must show a frame soon after the first line of each (KMSAN's "Uninit was
# stored" opens one too).
STACK_HEADINGS = tuple(re.compile(p) for p in (
    r"Call [Tt]race", r"Allocated:", r"Allocated by task [0-9]+:", r"Freed:",
    r"Freed by task [0-9]+:", r"[^k] backtrace( \(crc [0-9a-f]*\))?:", r"Backtrace:",
    r"Uninit was stored to memory at"))
# How far below its heading a stack's first frame may be, and how many lines
# a heading needs after it when the log ends there.
FRAME_WITHIN, LINES_AFTER_HEADING = 15, 2
# A "? " frame the unwinder is not sure of: syzkaller drops the line from a
# timestamped report before it reads the report's stacks.
QUESTIONABLE = re.compile(r"^ *(\[<[0-9a-f]+>\])? \? ")
# Fault injection's stack, often mixed into a report: the stack is not the report's.
INJECTED = re.compile(r"^( \[<?(0x)?[0-9a-f]+>?\])? should_fail(slab)?(\.[a-z0-9.]+)?\+0x")
FUNC = r"([A-Za-z_][A-Za-z0-9_.]*)"
# The lines a rule's steps look for, each naming the frame it captures.
STEPS = {
    "head": re.compile(r" in " + FUNC),
    "site": re.compile(r"(?:^|[^A-Za-z])(?:RIP|IP|NIP|pc |PC is at|epc +: [0-9a-f]+):? (?:[0-9]+:)?(?:\[<[0-9a-f]+>\] +){0,2}"
                       + FUNC + r"\+0x"),
    "calls": re.compile(r"Call [Tt]race:|Backtrace:|" + ARM_ENTRY.pattern),
    "at": re.compile(r"at: (?:\[<[0-9a-f]+>\] +)?" + FUNC),
    "became": re.compile(r"which became .* at:"),
    "leaks": re.compile(r"backtrace(?: \(crc [0-9a-f]*\))?:"),
    "allocated": re.compile(r"page last allocated"),
    "src": re.compile(r"[A-Za-z0-9_/.-]+\.[ch]:[0-9]+"),
    "irq": re.compile(r"apic_timer_interrupt"),
    "irqs": re.compile(r"apic_timer_interrupt|Exception stack|el1h_64_irq"),
    "takes": re.compile(r"takes:"),
    "trying": re.compile(r"is trying to acquire"),
    "changed": re.compile(r"just changed the state of lock"),
    "leaving": re.compile(r"leaving the kernel with locks still held"),
    "pc": re.compile(r"\[<?(?:0x)?[0-9a-f]+>?\] +" + FUNC),
    "protector": re.compile(r"corrupted in: (?![0-9a-f]+(?:\+|$))" + FUNC),
    "lastfn": re.compile(r"last function: " + FUNC),
}


@functools.lru_cache(maxsize=256)
def parse_rule(text):
    """Column 5: {"plans": [[step, ...], ...], "access", "skip", "pick"}.
    Parsed once a rule (the table has few): the dict is shared, not to be
    changed."""
    rule = {"plans": [], "access": False, "skip": None, "pick": None, "raw": False, "need": None,
            "nostack": False, "corrupted": False, "after": "", "stem_next": False, "deep": False}
    plan = []
    for word in (text or "trace").split():
        if word == "|":
            rule["plans"].append(plan)
            plan = []
        elif word == "access":
            rule["access"] = True
        elif word == "raw":
            rule["raw"] = True
        elif word in ("nostack", "corrupted", "deep"):
            rule[word] = True
        elif word.startswith("need="):
            rule["need"] = STEPS[word[5:]]
        elif word == "stem=next":
            rule["stem_next"] = True
        elif word.startswith("after="):
            rule["after"] = word[6:]
        elif word.startswith("skip="):
            rule["skip"] = re.compile(word[5:])
        elif word in ("hung", "stall"):
            rule["pick"] = word
        elif word == "trace":
            plan += ["calls", "stack"]
        else:
            plan.append(word)
    rule["plans"].append(plan)
    return rule
