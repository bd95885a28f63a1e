"""Kernel reports in a console log, and the outcome of one guest run.

The report table is repro/lib/kernel-reports.tsv, shared with the in-guest
harness. A report found after the reproducer's start mark is this bug when it
matches one of the reproducer's declared signatures (kind, title pattern, a
function its crashing task's call trace must contain: TraceReader); any other
report is OTHER.

Beside its title a report gets a culprit title, syzbot's way of naming it:
the row's culprit stem, " in ", and the first function of its trace that is
not reporting machinery (MACHINERY below), e.g. "WARNING in
blk_mq_start_request" where the title names refcount_warn_saturate.
"""
import os
import re

from .paths import TOP
from .protocol import EXIT_OUTCOME, INIT, INIT_STARTED, RESULT_RE, START_RE

PATTERNS_TSV = os.path.join(TOP, "repro", "lib", "kernel-reports.tsv")

TIMESTAMP = re.compile(r"^\[\s*[0-9]+\.[0-9]+\]\s?")
OFFSETS = re.compile(r"\+0x[0-9a-f]+/0x[0-9a-f]+")
# Frames, in the order a line names them: x86 "func+0x1c/0x40", "RIP:
# 0010:func+0x..."; ARM "[<c0..>] (func) from [<c0..>] (caller+0x..)" and,
# without CONFIG_BACKTRACE_VERBOSE, " func from caller+0x..".
FRAME = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\+0x[0-9a-f]+/0x[0-9a-f]+"
                   r"|\] \(([A-Za-z_][A-Za-z0-9_.]*)\)"
                   r"|^ *([A-Za-z_][A-Za-z0-9_.]*) from (?=[A-Za-z_])")
REPORT_END = re.compile(r"^(---\[ end |={20,}$|" + INIT + ")")
TRACE_LINES = 150


def load_patterns(path=PATTERNS_TSV):
    """The table's rows: (kind, compiled regex, title, culprit stem or None)."""
    rows = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) not in (3, 4):
                raise ValueError(f"{path}:{n}: want kind<TAB>regex<TAB>title[<TAB>culprit stem]")
            kind, regex, title, stem = cols + [None] * (4 - len(cols))
            rows.append((kind, re.compile("^(?:" + regex + ")"), title, stem))
    return rows


def console_lines(text):
    """Console text as (line number, line without timestamp and CR)."""
    return numbered(text.splitlines())


def numbered(raw_lines):
    for n, raw in enumerate(raw_lines, 1):
        yield n, TIMESTAMP.sub("", raw.rstrip("\r"))


# The kernel prints at most 1 KiB a line (printk's limit): the streaming
# reader keeps a line's first MAX_LINE characters, so a line of garbage with
# no end costs neither memory nor the frame regexes' time, which grows with
# the square of a line's length.
MAX_LINE = 8 << 10


def file_lines(f):
    """console_lines(f.read()) for a text file opened with universal newlines
    (open()'s default), holding one line at a time: the same lines, numbered
    alike (splitlines() also ends a line at a form feed and the like)."""
    def raw():
        while True:
            chunk = f.readline(MAX_LINE)
            if not chunk:
                return
            if len(chunk) == MAX_LINE and not chunk.endswith("\n"):
                while True:
                    rest = f.readline(MAX_LINE)
                    if not rest or rest.endswith("\n"):
                        break
            yield from chunk.splitlines()
    return numbered(raw())


def any_header(patterns):
    """One regex matching where some row of the table does, or None: most
    console lines are no report's header, and it says so at once."""
    src = "|".join(regex.pattern for _, regex, _, _ in patterns)
    if re.search(r"\\[1-9]|\(\?P=", src):
        return None   # a back reference would not survive the renumbered groups
    try:
        return re.compile(src)
    except re.error:
        return None


def classify_line(line, patterns, quick=None):
    """The report header a console line is (kind, title, stem), or None."""
    if quick is not None and not quick.match(line):
        return None
    for kind, regex, title, stem in patterns:
        m = regex.match(line)
        if m:
            t, st = (OFFSETS.sub("", m.expand(x)).strip() if x else None for x in (title, stem))
            return kind, t, st
    return None


def classify(text, patterns=None):
    """Report header lines in a console log: dicts with kind, title, stem (the
    culprit stem, None for the title), line, text."""
    patterns = patterns or load_patterns()
    quick = any_header(patterns)
    found = []
    for n, line in console_lines(text):
        h = classify_line(line, patterns, quick)
        if h:
            found.append({"kind": h[0], "title": h[1], "stem": h[2], "line": n, "text": line})
    return found


def line_frames(line):
    """The functions a console line names as trace frames, in order."""
    return [next(g for g in m.groups() if g) for m in FRAME.finditer(line)]


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
ARM_ENTRY = re.compile(r"^ *[A-Za-z_][A-Za-z0-9_.]* from [A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+/0x[0-9a-f]+$"
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
    r"|kfence-#[0-9]+ .*allocated by task|freed by task|The buggy address|Memory state"
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
        self.frames, self.state = [], "before"

    def feed(self, line, header):
        if self.state == "before" and ARM_ENTRY.match(line):
            self.state = "in"
        if self.state == "in" and (header or TRACE_CLOSE.match(line)):
            self.state = "after"
        elif self.state == "before" and TRACE_OPEN.match(line):
            self.state = "in"
        elif self.state == "in" and not UNRELIABLE.match(line) or \
                self.state == "before" and CRASH_SITE.match(line):
            self.frames += [f for f in line_frames(line) if f not in self.frames]


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


def crashes(text, patterns=None):
    """Kernel reports as syzkaller counts them: the header lines of one report
    (a refcount_t line and its WARNING, FORTIFY then kernel BUG then Oops) are
    one crash, titled by its first header. A crash ends at an end-of-trace
    line, KASAN's closing rule, the next krepro line, or TRACE_LINES lines.
    Dicts: kind, title, culprit (culprit_title()), line, headers [(kind,
    title)], frames (every function its lines name, in order: what a reader
    is shown), trace_frames (the reliable frames of the crashing task's call
    trace, TraceReader: what a signature's frame must match)."""
    return list(crashes_stream(console_lines(text), patterns))


def crashes_stream(lines, patterns=None):
    """crashes() of (line number, line) pairs (console_lines(), file_lines()),
    each crash yielded once it ends. A crash looks forward only, at most
    TRACE_LINES lines from its first header: what is kept is that one crash,
    however long the log."""
    patterns = patterns or load_patterns()
    quick = any_header(patterns)
    cur, start = None, 0
    for i, (n, line) in enumerate(lines):
        if cur is not None and (i - start >= TRACE_LINES or
                                (REPORT_END.match(line) and i > start)):
            yield cur
            cur = None
            if not line.startswith("krepro"):
                continue
        h = classify_line(line, patterns, quick)
        if h is not None:
            if cur is None:
                reader = TraceReader()
                cur = {"kind": h[0], "title": h[1], "line": n, "headers": [], "frames": [],
                       "trace_frames": reader.frames}
                start, stem, trace, history = i, h[2], [], None
            cur["headers"].append([h[0], h[1]])
        if cur is None:
            continue
        reader.feed(line, h is not None)
        for f in line_frames(line):
            if f not in cur["frames"]:
                cur["frames"].append(f)
        if history is not None and history.search(line):
            history = None
        if history is None:
            history = next((close for opener, close in HISTORY if opener.search(line)), None)
        if history is None and not NOT_TRACE.search(line):
            trace += line_frames(line.split(" hint: ")[0])
        cur["culprit"] = culprit_title(stem, cur["title"], trace)
    if cur is not None:
        yield cur


def signature_matches(report, sig):
    """A crash is the bug when one of its headers has the signature's kind and
    title, and (if the signature names one) a reliable frame of the crashing
    task's call trace matches: not a "? " frame, not a KASAN allocation or
    free stack, not a lock lockdep lists as held, not another task's dump.
    (No signature looks in the allocation or free stacks: every declared
    bug's own function is in its crashing trace. A reproducer whose bug
    shows only there would add a signature field saying so.)"""
    if sig.kind is None or sig.is_hang:
        return False
    if not any(k == sig.kind and (not sig.title or re.search(sig.title, t))
               for k, t in report.get("headers") or [[report["kind"], report["title"]]]):
        return False
    if sig.frame:
        pat = re.compile(sig.frame)
        if not any(pat.fullmatch(f) for f in report.get("trace_frames", [])):
            return False
    return True


def bug_reported(console, meta):
    """Has the console, so far, a report after the start mark that matches
    the reproducer's signatures? (The guest may then be stopped early.)"""
    if not meta.signatures:
        return False
    res = decide(console, meta)
    return res["outcome"] == "FAIL" and (res["signature"] or "").startswith("report: ")


def own_evidence(ktap, cases):
    """The reproducer's own FAIL lines ("# <case>: FAIL: ..."), not the
    harness's summary of kernel reports or taint."""
    out = []
    for line in ktap.splitlines():
        if not line.startswith("# ") or line.startswith("# hint:"):
            continue
        case, sep, rest = line[2:].partition(": FAIL:")
        if sep and (case in cases or not cases):
            out.append(line[2:])
    return out


def ktap_lines(ktap, tag):
    return [l[2:] for l in ktap.splitlines()
            if l.startswith("# ") and tag in l and not l.startswith("# hint:")]


def evidence_crash(run):
    """The crash a FAIL or OTHER run names in its evidence, or None."""
    return next((r for r in run.get("reports") or []
                 if r.get("title") and r["title"] in (run.get("evidence") or "")), None)


def landmarks(console, repro):
    """The line init started on, the line of the reproducer's start mark, and
    the exit code init reported for it (each None when absent)."""
    init_line = mark_line = exit_code = None
    for n, l in console_lines(console):
        if init_line is None and l.startswith(INIT_STARTED):
            init_line = n
        m = START_RE.match(l)
        if mark_line is None and m and m.group(3) == repro and (m.group(2) or m.group(4)):
            mark_line = n
        m = RESULT_RE.match(l)
        if m and m.group(1) == repro:
            exit_code = int(m.group(2))
    return init_line, mark_line, exit_code


def decide(console, meta, ktap="", timed_out=False, qemu_status=0):
    """One guest run's outcome: dict with outcome, evidence, signature (the
    report or own evidence that made it FAIL), reports, exit."""
    sigs = meta.signatures
    reports = crashes(console)
    init_line, mark_line, exit_code = landmarks(console, meta.name)
    before = [r for r in reports if mark_line is None or r["line"] < mark_line]
    after = [r for r in reports if mark_line is not None and r["line"] >= mark_line]
    for r in after:
        r["bug"] = any(signature_matches(r, s) for s in sigs)
    res = {"exit": exit_code, "timed_out": timed_out, "reports": reports,
           "init_line": init_line, "mark_line": mark_line, "signature": None}

    def out(outcome, evidence, signature=None):
        res.update(outcome=outcome, evidence=evidence, signature=signature)
        return res

    hung = " ; guest hung" if timed_out else ""
    if init_line is None:
        if before:
            return out("BROKEN", f"kernel did not reach init: {before[0]['title']}")
        return out("BROKEN", "kernel did not reach init"
                   + (" (timed out)" if timed_out else f" (qemu exit {qemu_status})"))
    if before:
        return out("BROKEN", f"kernel report before the test started: {before[0]['title']}")
    bug = [r for r in after if r["bug"]]
    own = own_evidence(ktap, meta.cases) if exit_code == 1 else []
    others = [r for r in after if not r["bug"]]
    also = f" (+{len(others)} later report(s) not in its signature: {others[0]['title']})" if others else ""
    if bug:
        more = f" (+{len(bug) - 1} more)" if len(bug) > 1 else ""
        return out("FAIL", f"{bug[0]['title']}{more}{also}{hung}", "report: " + bug[0]["title"])
    if own:
        return out("FAIL", " | ".join(own[:3]) + also, "own evidence")
    if others:
        return out("OTHER", f"{others[0]['title']}"
                   + (f" (+{len(others) - 1} more)" if len(others) > 1 else "") + hung)
    if timed_out:
        if meta.hang_is_bug:
            return out("FAIL", "hang: no result within the time limit", "hang")
        return out("HANG", "no result within the time limit")
    if exit_code is None:
        return out("BROKEN", f"guest ended without a result (qemu exit {qemu_status})")
    outcome = EXIT_OUTCOME.get(exit_code, "BROKEN")
    if outcome == "FAIL":
        # The harness failed the run on taint with no report on the console.
        why = ktap_lines(ktap, "REPORT:") + ktap_lines(ktap, "FAIL:")
        return out("OTHER", " | ".join(why[:2]) or "exit 1 without the reproducer's evidence")
    tag = {"PASS": "PASS:", "BROKEN": "BROKEN", "SKIP": "SKIP"}[outcome]
    return out(outcome, " | ".join(ktap_lines(ktap, tag)[:3]) or f"exit {exit_code}")
