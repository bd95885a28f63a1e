"""A kernel report's call trace: the functions a console line names as
frames, the reliable frames of the crashing task (TraceReader: what a
signature's frame must match), and the culprit (the first function that is
not reporting machinery), as syzbot names a report."""
import functools
import re

# Frames, in the order a line names them: x86 "func+0x1c/0x40", "RIP:
# 0010:func+0x..."; ARM "[<c0..>] (func) from [<c0..>] (caller+0x..)" and,
# without CONFIG_BACKTRACE_VERBOSE, " func from caller+0x..".
FRAME = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\+0x[0-9a-f]+/0x[0-9a-f]+"
                   r"|\] \(([A-Za-z_][A-Za-z0-9_.]*)\)"
                   r"|^ *([A-Za-z_][A-Za-z0-9_.]*) from (?=[A-Za-z_])")


def line_frames(line):
    """The functions a console line names as trace frames, in order (a
    tuple, shared: not to be changed)."""
    return _short_line_frames(line) if len(line) <= SHORT else _line_frames(line)


def _line_frames(line):
    # Each group, when it took part, holds a name: the first that did is it.
    return tuple(m[1] or m[2] or m[3] for m in FRAME.finditer(line))


# A log prints the same frame lines over and over (every report of one
# kernel goes through the same functions at the same offsets), and FRAME
# tries each place in a line: a short line's frames are found once. The
# cache is bounded, in lines and their length, whatever the log.
SHORT = 256
_short_line_frames = functools.lru_cache(maxsize=2048)(_line_frames)


# The reporting machinery: functions that print, check, trap, lock, wait,
# allocate or copy on the culprit's behalf, never the culprit (matched whole,
# after ".isra.0"-style suffixes are dropped). Syzkaller's skip list
# (pkg/report/linux.go) was the guide.
MACHINERY = (
    # printing the report, reaching it through a trap
    r"_*dump_stack(_lvl)?", r"show_stack", r"show_regs", r"dump_backtrace", r"unwind_backtrace",
    r"sched_show_task", r"print_.*", r"_*v?printk.*", r"__warn(_printk)?", r"warn_slowpath.*",
    r"report_bug", r"handle_bug", r"fixup_bug", r"exc_.*", r"asm_exc_.*", r"(do_)?invalid_op",
    r"do_(error_)?trap", r"do_undefinstr", r"bug_handler", r"__und_svc.*", r"_*die", r"oops_end",
    r"_*panic.*", r"nmi_cpu_backtrace", r"(nmi|arch)_trigger_cpumask_backtrace",
    # the checkers themselves
    r"_*kasan_.*", r"__asan_.*", r"_*kfence_.*", r"_*kcsan_.*", r"__tsan_.*", r"_*ubsan_.*",
    r"__sanitizer_.*", r"_*check_.*", r"_*refcount_.*", r"kref_.*", r"_*fortify_.*", r"__list_.*",
    r"list_(add|del|move|replace|splice).*", r"__stack_chk_fail", r"_*debug_.*",
    r"_*might_(sleep|resched|fault)", r"__cant_(sleep|migrate)", r"__schedule_bug",
    r"__this_cpu_preempt_check", r"_*lockdep_.*", r"register_lock_class", r"_*lock_acquire.*",
    r"_*lock_release", r"lock_acquired", r"lock_contended", r"mark_lock.*", r"validate_chain",
    # faults
    r"_*bad_area_nosemaphore", r"page_fault_oops", r"kernelmode_fixup_or_oops",
    r"do_user_addr_fault", r"do_kern_addr_fault", r"__do_kernel_fault", r"do_page_fault",
    r"do_DataAbort", r"do_PrefetchAbort", r"__dabt_svc", r"__pabt_svc",
    # timer and NMI plumbing that interrupts a stalled CPU
    r"rcu_(sched_clock_irq|check_callbacks|pending|dump_cpu_stacks|stall_.*)",
    r"update_process_times", r"tick_.*", r"__hrtimer_run_queues", r"hrtimer_interrupt",
    r"_*sysvec_.*", r"asm_sysvec_.*", r"(smp_)?apic_timer_interrupt", r"_*irq_exit.*",
    # locking, sleeping and waiting primitives
    r"_raw_(spin|read|write)_(try)?lock.*", r"_raw_(spin|read|write)_unlock.*",
    r"do_raw_(spin|read|write)_.*", r"(native_|__pv_)?queued_(spin|read|write)_lock_slowpath",
    r"(spin|read|write)_(try)?lock.*", r"(spin|read|write)_unlock.*",
    r"_*mutex_(lock|unlock|trylock).*", r"_*rt_mutex_.*", r"_*rwsem_.*", r"__down.*",
    r"down(_read|_write)?(_killable|_interruptible|_trylock|_nested)?", r"up(_read|_write)?",
    r"__schedule", r"schedule(_timeout.*|_preempt_disabled|_hrtimeout.*)?", r"io_schedule.*",
    r"preempt_schedule.*", r"__switch_to.*", r"context_switch", r"finish_task_switch",
    r"_*(do_)?wait_for_common.*", r"wait_for_completion.*", r"_*flush_work(queue)?",
    r"__cancel_work_timer", r"cancel_(delayed_)?work_sync", r"drain_workqueue", r"rcu_barrier",
    r"kthread_stop", r"complete(_all)?", r"__wake_up.*", r"_*wait_on_bit.*",
    r"out_of_line_wait_on_bit.*", r"wait_on_page_bit.*", r"folio_wait_bit.*", r"_*lock_page.*",
    r"unlock_page", r"_*folio_(lock|unlock|wait).*", r"bit_wait.*",
    # allocating, freeing, copying
    r"_*kmalloc.*", r"kzalloc.*", r"kcalloc", r"kvmalloc.*", r"kvzalloc.*", r"krealloc.*",
    r"_*kmem_cache_(alloc|free).*", r"_*slab_.*", r"kmemleak_.*", r"create_object",
    r"_*alloc_pages.*", r"_*vmalloc.*", r"_*vunmap", r"k?v?free", r"kfree_sensitive",
    r"kmemdup.*", r"kstrn?dup.*", r"memdup_user.*", r"v?kasprintf",
    r"_*(memcpy|memmove|memset|memcmp|memchr|memscan)", r"str(n|l|s)?(cpy|cat|cmp|len|chr|dup)",
    r"strr?chr", r"strn?str", r"v?s(n|cn)?printf", r"_?copy_(to|from)_user.*", r"__copy_.*_user.*",
    r"copy_(to|from)_iter.*", r"_*usercopy_.*",
)
MACHINERY_RE = re.compile("(?:" + "|".join(MACHINERY) + ")$")
# Syscall wrappers differ between kernels and arches; syzbot drops them.
SYSCALL_PREFIX = re.compile(r"^(__(x64|ia32|arm64)_)?(__do_sys_|__se_sys_|____sys_|___sys_|"
                            r"__sys_|__se_|compat_SyS_|compat_SYSC_|SYSC_|SyS_|sys_|ksys_)")
# Frames that are not the trace of the report: unreliable ("? func"), ARM's
# link register, the locks lockdep lists as held ("#0: ... at: func") and
# its irq-state history, and ODEBUG's hint (the object's callback).
NOT_TRACE = re.compile(r"^ *(\[<[0-9a-f]+>\] )?\? |^LR is at|^ *#[0-9]+: |"
                       r"irqs last +(en|dis)abled at")
# Sections that are history, not the trace: the allocation and free stacks
# of KASAN and KFENCE, lockdep's earlier dependency chain and lock-state
# registration, where preemption was disabled. (opener, closer)
HISTORY = ((re.compile(r"^(Allocated|Freed) by task|^Last potentially related work|"
                       r"^Second to last potentially related work|^kfence-#[0-9]+ .*allocated by task|"
                       r"^freed by task"),
            re.compile(r"^CPU: |^The buggy address|^Memory state")),
           (re.compile(r"^the existing dependency chain"), re.compile(r"^other info that might help")),
           (re.compile(r"state was registered at:$"), re.compile(r"^irq event stamp:")),
           (re.compile(r"Preemption disabled at:$"), re.compile(r"^CPU: ")))


# The crashing task's call trace, the frames a signature is matched against
# (TraceReader). It opens at the first trace heading after the report's
# header: "Call Trace:" (x86), "Call trace:" (arm64, ARM with the unwinder),
# "Backtrace:" (ARM with frame pointers), KFENCE's and KCSAN's access lines
# (KCSAN's two accesses are both the race), kmemleak's "backtrace:" (the
# leak's allocation is its evidence). Before it, the crash site ("RIP:
# 0010:func", ARM "PC is at func", arm64 "pc : func") counts too.
TRACE_OPEN = re.compile(
    r"^ *(Call Trace|Call trace|Backtrace|backtrace( \(crc [0-9a-f]+\))?):"
    r"|^(Out-of-bounds|Use-after-free|Corrupted memory|Invalid) .*(kfence-#[0-9]+|0x[0-9a-f]+)\)?:$"
    r"|^(race at unknown origin, with )?(read|write)[a-z() -]* to 0x[0-9a-f]+ "
    r"of [0-9]+ bytes by .* on cpu [0-9]+:$")
# 32-bit ARM with the ARM unwinder (krepro's ARM kernels, CONFIG_UNWINDER_ARM)
# prints its trace with no heading: its first entry opens it, verbose
# ("[<c0..>] (f) from [<c0..>] (g+0x..)") or not (" f from g+0x10/0x20").
# A symbolised log (syzbot's) puts the caller's source line after it.
ARM_ENTRY = re.compile(r"^ *[A-Za-z_][A-Za-z0-9_.]* from [A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+/0x[0-9a-f]+"
                       r"( [^ ]+:[0-9]+( \[inline\])?)?$"
                       r"|^\[<[0-9a-f]+>\] \([^)]*\) from \[<[0-9a-f]+>\] \(")
CRASH_SITE = re.compile(r"^(RIP: [0-9a-f]{4}:|PC is at |pc : )")
# The trace ends with the report (its end marker, KASAN's closing rule, the
# panic, the next header) or where the report goes on to what is not the
# crashing task's trace: KASAN's and KFENCE's allocation and free stacks and
# what follows them, lockdep's held-lock lists and chains, the module list,
# another CPU's or task's dump.
TRACE_CLOSE = re.compile(
    r"^(---\[ end |={20,}$|Kernel panic|krepro|Modules linked in|CPU: [0-9]+ (PID|UID)"
    r"|(Allocated|Freed) by task|Last potentially related work|Second to last potentially related work"
    r"|kfence-#[0-9]+ .*allocated by task|allocated by task|freed by task|The buggy address|Memory state"
    r"|Reported by Kernel Concurrency Sanitizer|value changed: "
    r"|(no locks|[0-9]+ locks?) held by |Showing all locks held|Showing busy workqueues"
    r"|the existing dependency chain|other info that might help|irq event stamp|(hard|soft)irqs last"
    r"|NMI backtrace for cpu|Sending NMI from CPU|task:[^ ]* +state:|INFO: )")
# A frame the unwinder is not sure of ("? func"), and ARM's link register.
UNRELIABLE = re.compile(r"^ *(\[<[0-9a-f]+>\] )?\? |^LR is at")


class TraceReader:
    """The reliable frames of a report's crashing task: its crash site and
    the first call trace after the report's header, up to where it ends
    (TRACE_CLOSE, or the next report header). "? " frames are left out."""

    def __init__(self):
        self.frames, self.state, self.seen = [], "before", set()

    def feed(self, line, header, frames=None):
        """One line of the report; frames: line_frames(line), when the
        caller has them."""
        state = self.state
        if state == "after":
            return   # the trace has ended: nothing more is read
        if state == "before" and " from " in line and ARM_ENTRY.match(line):
            state = self.state = "in"
        if state == "in":
            if header or TRACE_CLOSE.match(line):
                self.state = "after"
                return
            if UNRELIABLE.match(line):
                return
        elif TRACE_OPEN.match(line):
            self.state = "in"
            return
        elif not CRASH_SITE.match(line):
            return
        if frames is None:
            frames = line_frames(line)
        if frames:
            new = [f for f in frames if f not in self.seen]
            self.frames += new
            self.seen.update(new)


def culprit_function(frames):
    """The first function that is not reporting machinery, without its
    compiler suffix and syscall wrapper prefix; None when there is none."""
    for f in frames:
        name = f.split(".")[0]
        if not MACHINERY_RE.match(name):
            return SYSCALL_PREFIX.sub("", name) or name
    return None


def culprit_title(stem, title, frames):
    """syzbot's kind of title: "STEM in FUNCTION"; the stem alone when no
    frame is outside the machinery; the title when the row has no stem."""
    if not stem:
        return title
    func = culprit_function(frames)
    return f"{stem} in {func}" if func else stem
