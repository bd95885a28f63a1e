#!/usr/bin/env python3
"""Golden console logs and the report table's rows.

Every tests/console/NAME.log must classify to exactly the reports in
NAME.expected (kind<TAB>title per report header, in console order; the
header that starts a crash adds <TAB>its syzkaller title, the "culprit").
Every row of repro/lib/kernel-reports.tsv is exercised by HEADERS below (one
header line of each format, written for these tests, alone on its console:
no call trace, so a row whose title names a function says "corrupted") or
by a golden log. The culprit rules are checked on short logs written here in
the kernel's report formats."""
import glob
import os
import sys
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "scripts"))
from krepro.reports import console, syzrules, syztitle  # noqa: E402
from krepro.reports.console_lines import console_lines  # noqa: E402

HEADERS = (
    ('BUG: KASAN: double-free or invalid-free in free_fn+0x1/0x2',
     ('KASAN', 'KASAN: double-free or invalid-free in free_fn', 'KASAN: invalid-free in free_fn')),
    ('BUG: KASAN: use-after-free in read_fn+0x1/0x2',
     ('KASAN', 'KASAN: use-after-free in read_fn', 'KASAN: use-after-free in read_fn')),
    ('BUG: KASAN: null-ptr-deref on address 0000000000000010',
     ('KASAN', 'KASAN: null-ptr-deref on address', 'KASAN: null-ptr-deref on address ADDR')),
    ('BUG: KASAN: wild-memory-access',
     ('KASAN', 'KASAN: wild-memory-access', 'KASAN: wild-memory-access')),
    ('BUG: KFENCE: use-after-free read in read_fn+0x1/0x2',
     ('KFENCE', 'KFENCE: use-after-free read in read_fn', 'KFENCE: use-after-free read in read_fn')),
    ('BUG: KFENCE: memory corruption in free_fn+0x1/0x2',
     ('KFENCE', 'KFENCE: memory corruption in free_fn', 'KFENCE: memory corruption in free_fn')),
    ('BUG: KCSAN: data-race in left_fn / right_fn',
     ('KCSAN', 'KCSAN: data-race in left_fn / right_fn', 'KCSAN: data-race in left_fn / right_fn')),
    ('BUG: KMSAN: uninit-value in use_fn+0x1/0x2',
     ('BUG', 'KMSAN: uninit-value in use_fn', 'KMSAN: uninit-value in use_fn')),
    ('UBSAN: Undefined behaviour in net/core/x.c:10:2',
     ('UBSAN', 'UBSAN: undefined-behaviour in net/core/x.c:10:2', 'UBSAN: undefined-behaviour in corrupted')),
    ('UBSAN: shift-out-of-bounds in net/core/x.c:10:2',
     ('UBSAN', 'UBSAN: shift-out-of-bounds in net/core/x.c:10:2', 'UBSAN: shift-out-of-bounds in corrupted')),
    ('UBSAN: object-size-mismatch',
     ('UBSAN', 'UBSAN: object-size-mismatch', 'UBSAN: object-size-mismatch')),
    ('refcount_t: underflow; use-after-free.',
     ('REFCOUNT', 'refcount_t: underflow; use-after-free', 'refcount_t: underflow; use-after-free')),
    ('detected buffer overflow in memcpy',
     ('FORTIFY', 'detected buffer overflow in memcpy', 'detected buffer overflow in memcpy')),
    ('memcpy: detected buffer overflow: 16 byte write of buffer size 8',
     ('FORTIFY', 'detected buffer overflow in memcpy', 'detected buffer overflow in memcpy')),
    ('list_del corruption. prev->next should be ffff888003d6fc40, but was 0000000000000000',
     ('LIST', 'list_del corruption', 'list_del corruption')),
    ('list_add double add: new=ffff888003d6fc40, prev=ffff888003d6fc40, next=ffff888003d6fc48.',
     ('LIST', 'list_add double add', 'list_add double add')),
    ('ODEBUG: free active (active state 0) object type: timer_list hint: timer_fn+0x0/0x10',
     ('ODEBUG', 'ODEBUG: free active object type: timer_list', 'ODEBUG: free active object type: timer_list')),
    ('BUG: memory leak',
     ('MEMLEAK', 'memory leak', 'memory leak in corrupted')),
    ('unreferenced object 0xffff888004a2c800 (size 64):',
     ('MEMLEAK', 'memory leak', 'memory leak in corrupted')),
    ('kmemleak: 2 new suspected memory leaks (see /sys/kernel/debug/kmemleak)',
     ('MEMLEAK', 'memory leak', 'memory leak')),
    ('kernel BUG at mm/usercopy.c:99!',
     ('BUG', 'kernel BUG at mm/usercopy.c', 'BUG: bad usercopy in corrupted')),
    ('kernel BUG at lib/list_debug.c:53!',
     ('BUG', 'kernel BUG at lib/list_debug.c:53', 'BUG: corrupted list in corrupted')),
    ('kernel BUG at block/blk-mq.c:775!',
     ('BUG', 'kernel BUG at block/blk-mq.c:775', 'kernel BUG in corrupted')),
    ('BUG kmalloc-64 (Not tainted): Object already free',
     ('BUG', 'BUG: Object already free', 'BUG: Object already free')),
    ('BUG: unable to handle page fault for address: ffffc90000000000',
     ('BUG', 'BUG: unable to handle page fault', 'BUG: unable to handle kernel paging request in corrupted')),
    ('BUG: kernel NULL pointer dereference, address: 0000000000000010',
     ('BUG', 'BUG: kernel NULL pointer dereference', 'BUG: unable to handle kernel NULL pointer dereference in corrupted')),
    ('BUG: unable to handle kernel',
     ('BUG', 'BUG: unable to handle kernel', 'BUG: unable to handle kernel')),
    ('Unable to handle kernel NULL pointer dereference at virtual address 00000010',
     ('BUG', 'Unable to handle kernel NULL pointer dereference', 'BUG: unable to handle kernel NULL pointer dereference in corrupted')),
    ('CPU 0 Unable to handle kernel paging request at virtual address fffffff0, epc == 8005d844, ra == 800575ec',
     ('BUG', 'Unable to handle kernel paging request', 'BUG: unable to handle kernel paging request in corrupted')),
    ('Unable to handle kernel execute from non-executable memory at virtual address c0100000',
     ('BUG', 'Unable to handle kernel execute from non-executable memory', 'Unable to handle kernel execute from non-executable memory in corrupted')),
    ('BUG: spinlock bad magic on CPU#0, t/7',
     ('BUG', 'BUG: spinlock bad magic', 'BUG: spinlock bad magic in corrupted')),
    ('BUG: soft lockup - CPU#1 stuck for 22s! [t:7]',
     ('BUG', 'BUG: soft lockup', 'BUG: soft lockup in corrupted')),
    ('watchdog: BUG: soft lockup - CPU#1 stuck for 22s! [t:7]',
     ('BUG', 'BUG: soft lockup', 'BUG: soft lockup in corrupted')),
    ('BUG: t/7 still has locks held!',
     ('BUG', 'BUG: still has locks held', 'BUG: still has locks held in corrupted')),
    ('BUG: lock held when returning to user space!',
     ('BUG', 'BUG: lock held when returning to user space', 'BUG: lock held when returning to user space in corrupted')),
    ('BUG: bad unlock balance detected!',
     ('BUG', 'BUG: bad unlock balance', 'BUG: bad unlock balance in corrupted')),
    ('BUG: held lock freed!',
     ('BUG', 'BUG: held lock freed', 'BUG: held lock freed in corrupted')),
    ('BUG: Bad rss-counter state mm:ffff888004a2c800 type:MM_ANONPAGES val:1',
     ('BUG', 'BUG: Bad rss-counter state', 'BUG: Bad rss-counter state')),
    ('BUG: non-zero nr_ptes on freeing mm: 2',
     ('BUG', 'BUG: non-zero nr_ptes on freeing mm', 'BUG: non-zero nr_ptes on freeing mm')),
    ('BUG: Dentry ffff888004a2c800{i=1,n=x}  still in use (1) [unmount of tmpfs tmpfs]',
     ('BUG', 'BUG: Dentry still in use', 'BUG: Dentry still in use in unmount')),
    ('BUG: Dentry ffff888004a2c800{i=1,n=x}  still in use',
     ('BUG', 'BUG: Dentry still in use', 'BUG: Dentry still in use')),
    ('BUG: workqueue lockup - pool cpus=0 node=0 flags=0x0 nice=0 stuck for 31s!',
     ('BUG', 'BUG: workqueue lockup', 'BUG: workqueue lockup')),
    ('BUG: workqueue leaked lock or atomic: kworker/0:1/0x00000000/9',
     ('BUG', 'BUG: workqueue leaked lock or atomic', 'BUG: workqueue leaked lock or atomic in corrupted')),
    ('BUG: sleeping function called from invalid context at kernel/sched/core.c:9000',
     ('BUG', 'BUG: sleeping function called from invalid context', 'BUG: sleeping function called from invalid context in corrupted')),
    ('BUG: scheduling while atomic: t/7/0x00000002',
     ('BUG', 'BUG: scheduling while atomic', 'BUG: scheduling while atomic in corrupted')),
    ('BUG: Bad page state in process t  pfn:01234',
     ('BUG', 'BUG: Bad page state', 'BUG: Bad page state in corrupted')),
    ('BUG: Bad page map in process t  pte:8000000001234067 pmd:01234067',
     ('BUG', 'BUG: Bad page map', 'BUG: Bad page map')),
    ('BUG: TASK stack guard page was hit at ffffc90000000000 (stack is ffffc90000004000..ffffc90000008000)',
     ('BUG', 'BUG: stack guard page was hit', 'BUG: stack guard page was hit in corrupted')),
    ('BUG: using smp_processor_id() in preemptible [00000000] code: t/7',
     ('BUG', 'BUG: using smp_processor_id() in preemptible code', 'BUG: using smp_processor_id() in preemptible code in corrupted')),
    ('BUG: Invalid wait context',
     ('BUG', 'BUG: Invalid wait context', 'WARNING: locking bug in corrupted')),
    ('VFS: Close: file count is 0',
     ('BUG', 'VFS: Close: file count is zero', 'VFS: Close: file count is zero (use-after-free)')),
    ('VFS: Busy inodes after unmount of tmpfs (tmpfs)',
     ('BUG', 'VFS: Busy inodes after unmount', 'VFS: Busy inodes after unmount (use-after-free)')),
    ('BUG: Unable to handle kernel data access on write at 0x00000010',
     ('BUG', 'BUG: Unable to handle kernel data access', 'BUG: unable to handle kernel paging request in corrupted')),
    ('BUG: looking up invalid subclass: 8',
     ('BUG', 'BUG: looking up invalid subclass: 8', 'BUG: looking up invalid subclass: NUM')),
    ('divide error: 0000 [#1] PREEMPT SMP KASAN',
     ('TRAP', 'divide error', 'divide error in corrupted')),
    ('invalid opcode: 0000 [#1] PREEMPT SMP KASAN',
     ('TRAP', 'invalid opcode', 'invalid opcode in corrupted')),
    ('int3: 0000 [#1] PREEMPT SMP KASAN',
     ('TRAP', 'int3', 'int3 in corrupted')),
    ('stack segment: 0000 [#1] PREEMPT SMP KASAN',
     ('TRAP', 'stack segment fault', 'stack segment fault in corrupted')),
    ('PANIC: double fault, error_code: 0x0',
     ('TRAP', 'PANIC: double fault', 'PANIC: double fault in corrupted')),
    ('general protection fault, probably for non-canonical address 0xdffffc0000000001: 0000 [#1] PREEMPT SMP KASAN',
     ('GPF', 'general protection fault', 'general protection fault in corrupted')),
    ('Oops: general protection fault, probably for non-canonical address 0xdffffc0000000001: 0000 [#1] PREEMPT SMP KASAN',
     ('GPF', 'general protection fault', 'general protection fault in corrupted')),
    ('Internal error: Oops: 5 [#1] SMP ARM',
     ('OOPS', 'Oops', 'Internal error in corrupted')),
    ('Internal error: Oops - BUG: 0 [#1] SMP ARM',
     ('OOPS', 'Oops', 'Internal error in corrupted')),
    ('Unhandled fault: page domain fault (0x01b) at 0x00000010',
     ('OOPS', 'Unhandled fault', 'Unhandled fault in corrupted')),
    ('Alignment trap: not handling instruction e1b52f9f at [<c0100000>]',
     ('OOPS', 'Alignment trap', 'Alignment trap in corrupted')),
    ('Oops: 0000 [#1] PREEMPT SMP',
     ('OOPS', 'Oops', 'Oops in corrupted')),
    ('WARNING: /etc/ssh/moduli does not exist, using fixed modulus',
     None),
    ('WARNING: The mand mount option has been deprecated and',
     None),
    ("WARNING: fbcon: Driver 'x' missed to adjust virtual screen size (0x0 vs. 8x8)",
     None),
    ('WARNING: t uses wireless extensions which will stop working for Wi-Fi 7 hardware; use nl80211',
     None),
    ("WARNING: `t' USES WIRELESS EXTENSIONS WHICH WILL STOP WORKING",
     None),
    ('WARNING: workqueue cpumask: online intersect > possible intersect',
     None),
    ('WARNING: Unprivileged eBPF is enabled with eIBRS on, data leaks possible via Spectre v2 BHB attacks!',
     None),
    ('WARNING: kernel not compiled with CPU_SRSO.',
     None),
    ('INFO: lockdep is turned off.',
     None),
    ('INFO: Stall ended before state dump start',
     None),
    ('INFO: NMI handler (perf_event_nmi_handler) took too long to run: 1.000 msecs',
     None),
    ('INFO: recovery required on readonly filesystem.',
     None),
    ('WARNING: possible circular locking dependency detected',
     ('WARNING', 'possible deadlock (circular locking)', 'WARNING: possible circular locking dependency detected')),
    ('WARNING: possible irq lock inversion dependency detected',
     ('WARNING', 'possible deadlock (irq lock inversion)', 'possible deadlock in corrupted')),
    ('WARNING: possible recursive locking detected',
     ('WARNING', 'possible deadlock (recursive locking)', 'possible deadlock in corrupted')),
    ('WARNING: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected',
     ('WARNING', 'possible deadlock (SOFTIRQ-safe -> SOFTIRQ-unsafe lock order)', 'possible deadlock in corrupted')),
    ('WARNING: inconsistent lock state',
     ('WARNING', 'inconsistent lock state', 'inconsistent lock state in corrupted')),
    ('WARNING: bad unlock balance detected!',
     ('WARNING', 'WARNING: bad unlock balance', 'WARNING: bad unlock balance in corrupted')),
    ('WARNING: held lock freed!',
     ('WARNING', 'WARNING: held lock freed', 'WARNING: held lock freed in corrupted')),
    ('WARNING: suspicious RCU usage',
     ('WARNING', 'WARNING: suspicious RCU usage', 'WARNING: suspicious RCU usage')),
    ('WARNING: t/7 still has locks held!',
     ('WARNING', 'WARNING: still has locks held', 'WARNING: still has locks held in corrupted')),
    ('WARNING: Nested lock was not taken',
     ('WARNING', 'WARNING: nested lock was not taken', 'WARNING: nested lock was not taken in corrupted')),
    ('WARNING: lock held when returning to user space!',
     ('WARNING', 'WARNING: lock held when returning to user space', 'WARNING: lock held when returning to user space in corrupted')),
    ("WARNING: kernel stack regs at ffffc90000003e38 in t:7 has bad 'bp' value 0000000000000000",
     ('WARNING', "WARNING: kernel stack regs has bad 'bp' value", "WARNING: kernel stack regs has bad 'bp' value")),
    ('WARNING: kernel stack frame pointer at ffffc90000003e38 in t:7 has bad value 0000000000000000',
     ('WARNING', 'WARNING: kernel stack frame pointer has bad value', 'WARNING: kernel stack frame pointer has bad value')),
    ("WARNING: kernel stack regs at (ptrval) in t:7 has bad 'bp' value (ptrval)",
     ('WARNING', 'WARNING: kernel stack regs has bad value', 'WARNING: kernel stack regs has bad value')),
    ('WARNING: CPU: 0 PID: 7 at lib/debugobjects.c:505 debug_print_object+0x1/0x2',
     ('WARNING', 'WARNING in debug_print_object', 'WARNING: ODEBUG bug in corrupted')),
    ('WARNING: CPU: 0 PID: 7 at mm/usercopy.c:81 usercopy_warn+0x1/0x2',
     ('WARNING', 'WARNING in usercopy_warn', 'WARNING: bad usercopy in corrupted')),
    ('WARNING: CPU: 0 PID: 7 at lib/kobject.c:100 kobject_add_internal+0x1/0x2',
     ('WARNING', 'WARNING in kobject_add_internal', 'WARNING: kobject bug in corrupted')),
    ('WARNING: CPU: 0 PID: 7 at fs/proc/generic.c:370 proc_register+0x1/0x2',
     ('WARNING', 'WARNING in proc_register', 'WARNING: proc registration bug in corrupted')),
    ('WARNING: CPU: 0 PID: 7 at lib/refcount.c:25 refcount_warn_saturate+0x1/0x2',
     ('WARNING', 'WARNING in refcount_warn_saturate', 'WARNING: refcount bug in corrupted')),
    ('WARNING: CPU: 0 PID: 7 at kernel/locking/lockdep.c:900 lock_release+0x1/0x2',
     ('WARNING', 'WARNING in lock_release', 'WARNING: locking bug in corrupted')),
    ('WARNING: CPU: 0 PID: 7 at mm/vmalloc.c:3000 __vmalloc_node_range+0x1/0x2',
     ('WARNING', 'WARNING in __vmalloc_node_range', 'WARNING: zero-size vmalloc in corrupted')),
    ('WARNING: CPU: 0 PID: 7 at mm/page_alloc.c:5500 __alloc_pages+0x1/0x2',
     ('WARNING', 'WARNING in __alloc_pages', 'WARNING in corrupted')),
    ('WARNING: CPU: 0 PID: 7 at mm/slab_common.c:900 kmalloc_order+0x1/0x2',
     ('WARNING', 'WARNING in kmalloc_order', 'WARNING: kmalloc bug in corrupted')),
    ('WARNING: CPU: 0 PID: 7 at block/blk-mq.c:1000 blk_mq_start_request+0x1/0x2',
     ('WARNING', 'WARNING in blk_mq_start_request', 'WARNING in corrupted')),
    ('WARNING: [cond] fs/x.c:10 at warn_fn+0x1/0x2, CPU#0: t/7',
     ('WARNING', 'WARNING in warn_fn', 'WARNING in corrupted')),
    ('WARNING: fs/x.c:10 at warn_fn+0x1/0x2, CPU#0: t/7',
     ('WARNING', 'WARNING in warn_fn', 'WARNING in corrupted')),
    ('WARNING: at fs/x.c:10 warn_fn()',
     ('WARNING', 'WARNING in warn_fn', 'WARNING in corrupted')),
    ('WARNING: something else went wrong',
     ('WARNING', 'WARNING: something else went wrong', 'WARNING: something else went wrong')),
    ('INFO: Freed in free_fn+0x1/0x2 age=10 cpu=0 pid=7',
     ('BUG', 'INFO: Freed in free_fn age=10 cpu=0 pid=7', 'INFO: Freed in free_fn age=NUM cpu=NUM pid=NUM')),
    ('INFO: trying to register non-static key.',
     ('LOCKDEP', 'INFO: trying to register non-static key', 'INFO: trying to register non-static key in corrupted')),
    ('INFO: possible recursive locking detected',
     ('LOCKDEP', 'possible deadlock (recursive locking)', 'possible deadlock in corrupted')),
    ('INFO: possible irq lock inversion dependency detected',
     ('LOCKDEP', 'possible deadlock (irq lock inversion)', 'possible deadlock in corrupted')),
    ('INFO: SOFTIRQ-safe -> SOFTIRQ-unsafe lock order detected',
     ('LOCKDEP', 'possible deadlock (SOFTIRQ-safe -> SOFTIRQ-unsafe lock order)', 'possible deadlock in corrupted')),
    ('INFO: inconsistent lock state',
     ('LOCKDEP', 'inconsistent lock state', 'inconsistent lock state in corrupted')),
    ('INFO: suspicious RCU usage.',
     ('LOCKDEP', 'INFO: suspicious RCU usage', 'INFO: suspicious RCU usage.')),
    ('INFO: task t:7 blocked for more than 120 seconds.',
     ('HUNG', 'INFO: task hung (t)', 'INFO: task hung in corrupted')),
    ("INFO: task t:7 can't die for more than 120 seconds.",
     ('HUNG', "INFO: task can't die (t)", "INFO: task can't die in corrupted")),
    ('rcu: INFO: rcu_sched self-detected stall on CPU',
     ('RCU', 'INFO: rcu detected stall', 'INFO: rcu detected stall in corrupted')),
    ('rcu: INFO: rcu_preempt detected expedited stalls on CPUs/tasks: { 1-... } 21 jiffies s: 1 root: 0x1/.',
     ('RCU', 'INFO: rcu detected expedited stall', 'INFO: rcu detected stall in corrupted')),
    # 2.6 x86_64: the address, then RIP, and the Oops count without its "#"
    ('Unable to handle kernel NULL pointer dereference at 0000000000000000 RIP: ',
     ('BUG', 'Unable to handle kernel NULL pointer dereference',
      'BUG: unable to handle kernel NULL pointer dereference in corrupted')),
    ('Oops: 0010 [1] SMP ', ('OOPS', 'Oops', 'Oops in corrupted')),
    ('NMI watchdog: Watchdog detected hard LOCKUP on cpu 10',
     ('BUG', 'BUG: hard lockup', 'BUG: hard lockup in corrupted')),
    ('watchdog: CPU28: Watchdog detected hard LOCKUP on cpu 28',
     ('BUG', 'BUG: hard lockup', 'BUG: hard lockup in corrupted')),
    # MIPS and LoongArch die(): "%s[#%d]:"
    ('Oops[#1]:', ('OOPS', 'Oops', 'Oops in corrupted')),
    ('Kernel bug detected[#1]:', ('OOPS', 'Kernel bug detected', 'Kernel bug detected in corrupted')),
    ('Unhandled kernel unaligned access[#13]:',
     ('OOPS', 'Unhandled kernel unaligned access', 'Unhandled kernel unaligned access in corrupted')),
    # 2.6-3.x kernels named the RCU flavour's state structure
    ('INFO: rcu_sched_state detected stall on CPU 0 (t=105060 jiffies)',
     ('RCU', 'INFO: rcu detected stall', 'INFO: rcu detected stall in corrupted')),
    ('unregister_netdevice: waiting for lo to become free. Usage count = 2',
     ('NETDEV', 'unregister_netdevice: waiting for lo to become free', 'unregister_netdevice: waiting for DEV to become free')),
    ('Kernel panic - not syncing: stack-protector: Kernel stack is corrupted in: victim_fn+0x1/0x2',
     ('PANIC', 'Kernel panic: stack is corrupted', 'kernel panic: stack is corrupted in victim_fn')),
    ('Kernel panic - not syncing: corrupted stack end detected inside scheduler',
     ('PANIC', 'Kernel panic: corrupted stack end', 'kernel panic: corrupted stack end in corrupted')),
    ('Kernel panic - not syncing: kernel stack overflow',
     ('PANIC', 'Kernel panic: kernel stack overflow', 'kernel stack overflow in corrupted')),
    ('Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b',
     ('PANIC', 'Kernel panic: Attempted to kill init!', 'kernel panic: Attempted to kill init!')),
    ('BUG:', ('BUG', 'BUG: corrupted', 'BUG: corrupted')),
    ('BUG: KMSAN: kernel-usb-infoleak in usb_fn+0x1/0x2',
     ('BUG', 'KMSAN: kernel-usb-infoleak in usb_fn', 'KMSAN: kernel-usb-infoleak in usb_fn')),
    ('WARNING: CPU: 0 PID: 7 at drivers/usb/core/urb.c:503 usb_submit_urb+0x1/0x2',
     ('WARNING', 'WARNING in usb_submit_urb', 'WARNING in corrupted/usb_submit_urb')),
    ('rust_kernel: panicked at drivers/x/y.rs:10:5:',
     ('RUST', 'Rust panic', 'Rust panic in corrupted')),
    ('SYZFAIL: child failed', ('SYZFAIL', 'SYZFAIL: child failed', 'SYZFAIL: child failed')),
    ('BUG bio-144 (Tainted: G S                ): Objects remaining in bio-144 on __kmem_cache_shutdown()',
     ('BUG', 'BUG bio-144: Objects remaining in bio-144 on __kmem_cache_shutdown()',
      'BUG bio-NUM: Objects remaining in bio-NUM on __kmem_cache_shutdown() in corrupted')),
    ('BUG kmalloc-128 (Not tainted): Poison overwritten',
     ('BUG', 'BUG kmalloc-128: Poison overwritten', 'BUG kmalloc-NUM: Poison overwritten in corrupted')),
    ('SError Interrupt on CPU1, code 0x00000000bf000002 -- SError',
     ('OOPS', 'SError Interrupt', 'SError Interrupt in corrupted')),
    ('trusty: panic (caller 0xffffffffe000fbd0): DEBUG ASSERT FAILED at (lk/reflist.h:63): list_in_list(&r)',
     ('PANIC', 'trusty: ASSERT FAILED: list_in_list(&r)', 'trusty: ASSERT FAILED: list_in_list(&r)')),
    ('trusty: panic (caller 0xffffffffe000fbb8): ASSERT FAILED at (trusty/ipc.c:472): ',
     ('PANIC', 'trusty: ASSERT FAILED:', 'trusty: ASSERT FAILED:')),
    ('trusty: panic (caller 0xffffffffe0002314): failed(-5) to start app 6',
     ('PANIC', 'trusty: panic: failed(-5) to start app 6', 'trusty: panic: failed(-NUM) to start app NUM')),
    ('trusty: panic', ('PANIC', 'trusty: panic', 'trusty: panic')),
    ('Booting the kernel.', ('REBOOT', 'unexpected kernel reboot', 'unexpected kernel reboot')),
    ('WARNING: ', ('WARNING', 'WARNING: corrupted', 'WARNING: corrupted')),
    ('Kernel panic - not syncing: Fatal exception in interrupt',
     ('PANIC', 'Kernel panic: Fatal exception', 'kernel panic: Fatal exception')),
    ('Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)',
     ('PANIC', 'Kernel panic: VFS: Unable to mount root fs on unknown-block(0,0)', 'kernel panic: VFS: Unable to mount root fs on unknown-block(NUM,NUM)')),
    ('Internal error: ptrace BRK handler: f2000800 [#1] PREEMPT SMP',
     ('OOPS', 'Internal error', 'Internal error in corrupted')),
)



def crash(log):
    return console.crashes(log)[0]


class Golden(unittest.TestCase):
    def test_golden_logs(self):
        logs = sorted(glob.glob(os.path.join(HERE, "console", "*.log")))
        self.assertGreater(len(logs), 200)
        start = time.monotonic()
        for log in logs:
            with self.subTest(log=os.path.basename(log)):
                with open(log) as f:
                    text = f.read()
                culprits = {c["line"]: c["culprit"] for c in console.crashes(text)}
                got = [(r["kind"], r["title"]) + ((culprits[r["line"]],) if r["line"] in culprits else ())
                       for r in console.classify(text)]
                with open(log[:-4] + ".expected") as f:
                    want = [tuple(l.rstrip("\n").split("\t")) for l in f if l.strip()]
                self.assertEqual(got, want)
        self.assertLess(time.monotonic() - start, 10)

    def test_every_guest_log_names_its_source(self):
        for log in glob.glob(os.path.join(HERE, "console", "guest-*.log")):
            with open(log) as f:
                self.assertTrue(f.readline().startswith("# source: krepro guest, "), log)

    def test_headers(self):
        for line, want in HEADERS:
            with self.subTest(line=line):
                cs = console.crashes(line + "\n")
                self.assertEqual((cs[0]["kind"], cs[0]["title"], cs[0]["culprit"]) if cs else None, want)

    def test_every_row_is_exercised(self):
        text = "\n".join(line for line, _ in HEADERS) + "\n"
        for log in glob.glob(os.path.join(HERE, "console", "*.log")):
            with open(log) as f:
                text += f.read()
        patterns = console.load_patterns()
        used = set()
        for _, line in console_lines(text):
            for i, (_, regex, _, _) in enumerate(patterns):
                if regex.match(line.lstrip()):
                    used.add(i)
                    break
        self.assertEqual([p[1].pattern for i, p in enumerate(patterns) if i not in used], [])

    def test_table_suits_posix_regcomp_and_cmake(self):
        # The guest compiles column 2 with regcomp(REG_EXTENDED), and CMake
        # reads the file as a list: an unmatched "[" would swallow lines, a
        # ";" would split one.
        with open(console.PATTERNS_TSV) as f:
            rows = [l.rstrip("\n").split("\t") for l in f if l.strip() and not l.startswith("#")]
        for cols in rows:
            with self.subTest(row=cols[1]):
                self.assertIn(len(cols), (3, 4, 5))
                for bad in ("\\d", "\\s", "\\w", "\\b", "(?", "*?", "+?", "[[:"):
                    self.assertNotIn(bad, cols[1])
                for col in cols:
                    self.assertEqual(col.count("["), col.count("]"))
                    self.assertNotIn(";", col)
                rule = syzrules.parse_rule(cols[4] if len(cols) == 5 else None)
                for plan in rule["plans"]:
                    for step in plan:
                        self.assertTrue(step in syzrules.STEPS or step in ("stack", "none"), step)

    def test_timestamp_and_cr_are_stripped(self):
        r = console.classify("[   12.345678] BUG: KASAN: slab-out-of-bounds in foo+0x1/0x2\r\n")
        self.assertEqual(r[0]["title"], "KASAN: slab-out-of-bounds in foo")
        # the printk caller id, and a console line merged into another
        r = console.classify("[   12.345678][ T123] BUG: KASAN: slab-out-of-bounds in foo+0x1/0x2\n"
                            "t login: [   13.000000] INFO: trying to register non-static key.\n")
        self.assertEqual([x["title"] for x in r], ["KASAN: slab-out-of-bounds in foo",
                                                   "INFO: trying to register non-static key"])

    def test_whole_second_timestamps_are_stripped(self):
        r = console.classify("[  240.] INFO: task kworker:64 blocked for more than 120 seconds.\n")
        self.assertEqual(r[0]["title"], "INFO: task hung (kworker)")

    def test_slub_banner_inside_an_older_kasan_report_ends_nothing(self):
        # 4.x KASan printed SLUB's object dump, opened by slab_bug()'s rule
        # of 77 "=", inside its own report: one crash, not a second at the
        # dump's "INFO: Allocated in".
        text = "\n".join(["=" * 66, "BUG: KASan: use after free in foo+0x2c9/0x340 at addr ffff880d59947040",
                          "Read of size 8 by task ksoftirqd/2/15", "=" * 77,
                          "BUG kmalloc-64 (Tainted: G    B): kasan: bad access detected", "-" * 77, "",
                          "INFO: Allocated in bar+0xb3/0x350 age=14759 cpu=5 pid=27", "=" * 66]) + "\n"
        self.assertEqual(len(console.crashes(text)), 1)

    def test_quoted_report_does_not_match(self):
        self.assertEqual(console.classify("# kernel report after the mark: BUG: KASAN: x in y\n"), [])


class Culprits(unittest.TestCase):
    """syzkaller's rules for the function a title names (reports/syztitle.py)."""

    def test_kasan_access_type_and_the_header_function(self):
        c = crash("BUG: KASAN: use-after-free in victim_fn+0x1/0x2\n"
                  "Read of size 8 at addr ffff888004a2c800 by task t/7\n"
                  "Call Trace:\n dump_stack_lvl+0x1/0x2\n kasan_report+0x1/0x2\n"
                  " victim_fn+0x1/0x2\n caller_fn+0x1/0x2\n")
        self.assertEqual((c["culprit"], c["stem"], c["access"], c["function"], c["corrupted"]),
                         ("KASAN: use-after-free Read in victim_fn", "KASAN: use-after-free Read", "Read",
                          "victim_fn", False))
        c = crash("BUG: KASAN: slab-out-of-bounds in memcpy+0x1/0x2\n"
                  "Write of size 4 at addr ffff888004a2c800 by task t/7\n"
                  "Call Trace:\n memcpy+0x1/0x2\n __x64_sys_writer.cold+0x1/0x2\n")
        self.assertEqual(c["culprit"], "KASAN: slab-out-of-bounds Write in sys_writer")   # one prefix
        # Lines a blank in, as a cut prefix leaves them: the header reads so, the access too.
        c = crash(" BUG: KASAN: use-after-free in victim_fn+0x1/0x2\n"
                  " Read of size 8 at addr ffff888004a2c800 by task t/7\n")
        self.assertEqual(c["access"], "Read")

    # (what the case shows, log, culprit title)
    CASES = (
        ("a WARNING names its crash site, else its trace",
         "WARNING: CPU: 0 PID: 7 at lib/refcount.c:25 refcount_warn_saturate+0x1/0x2\n"
         "RIP: 0010:refcount_warn_saturate+0x1/0x2\nCall Trace:\n <TASK>\n putter_fn+0x1/0x2\n </TASK>\n",
         "WARNING: refcount bug in putter_fn"),
        ("the crash site without its compiler suffix",
         "WARNING: CPU: 0 PID: 7 at fs/x.c:10 warn_fn+0x1/0x2\n"
         "RIP: 0010:warn_fn.isra.0+0x1/0x2\nCall Trace:\n other_fn+0x1/0x2\n",
         "WARNING in warn_fn"),
        ("a refcount_t line leaves its name to the WARNING under it",
         "refcount_t: addition on 0; use-after-free.\n"
         "WARNING: CPU: 0 PID: 7 at lib/refcount.c:25 refcount_warn_saturate+0x1/0x2\n"
         "RIP: 0010:refcount_warn_saturate+0x1/0x2\nCall Trace:\n getter_fn+0x1/0x2\n",
         "WARNING: refcount bug in getter_fn"),
        ("a circular dependency: the first lock line not skipped",
         "WARNING: possible circular locking dependency detected\nt/7 is trying to acquire lock:\n"
         "ffffffff82000000 (a_lock){+.+.}-{3:3}, at: __mutex_lock+0x1/0x2\n\n"
         "but task is already holding lock:\nffffffff82000100 (b_lock){+.+.}-{3:3}, at: holder_fn+0x1/0x2\n",
         "possible deadlock in holder_fn"),
        ("recursive locking: the lock taker, nothing skipped",
         "WARNING: possible recursive locking detected\nt/7 is trying to acquire lock:\n"
         "ffffffff82000000 (a_lock){+.+.}-{3:3}, at: flush_workqueue+0x1/0x2\n",
         "possible deadlock in flush_workqueue"),
        ("older lockdep's bracketed header and address",
         "[ INFO: possible recursive locking detected ]\nt/7 is trying to acquire lock:\n"
         " (a_lock){+.+.}, at: [<ffffffff81000000>] taker_fn+0x1/0x2\n",
         "possible deadlock in taker_fn"),
    )

    def test_cases(self):
        for what, log, want in self.CASES:
            with self.subTest(what):
                self.assertEqual(crash(log)["culprit"], want)
        self.assertEqual(crash(self.CASES[2][1])["title"], "refcount_t: addition on 0; use-after-free")

    def test_memory_leak_skips_the_allocators(self):
        c = crash("BUG: memory leak\nunreferenced object 0xffff888004a2c800 (size 64):\n"
                  "  backtrace (crc 1a2b3c4d):\n    kmalloc_trace+0x1/0x2\n    kvasprintf+0x1/0x2\n"
                  "    leaker_fn+0x1/0x2\n")
        self.assertEqual(c["culprit"], "memory leak in leaker_fn")

    def test_hung_task_names_what_it_waits_for(self):
        head = "INFO: task t:7 blocked for more than 120 seconds.\nCall Trace:\n __schedule+0x1/0x2\n"
        self.assertEqual(crash(head + " rwsem_down_write_slowpath+0x1/0x2\n holder_fn+0x1/0x2\n")["culprit"],
                         "INFO: task hung in holder_fn")
        self.assertEqual(crash(head + " synchronize_rcu_expedited+0x1/0x2\n holder_fn+0x1/0x2\n")["culprit"],
                         "INFO: task hung in synchronize_rcu")
        self.assertEqual(crash(head + " mutex_lock_nested+0x1/0x2\n rtnl_lock+0x1/0x2\n")["culprit"],
                         "INFO: task hung in rtnl_lock")

    def test_stall_names_the_caller_of_the_dispatch(self):
        c = crash("rcu: INFO: rcu_sched self-detected stall on CPU\n"
                  "Call Trace:\n <IRQ>\n rcu_sched_clock_irq+0x1/0x2\n sysvec_apic_timer_interrupt+0x1/0x2\n"
                  " </IRQ>\n <TASK>\n asm_sysvec_apic_timer_interrupt+0x1/0x2\n"
                  "RIP: 0010:spinner_fn+0x1/0x2\n"
                  " spinner_fn+0x1/0x2\n work_fn+0x1/0x2\n process_one_work+0x1/0x2\n worker_thread+0x1/0x2\n")
        self.assertEqual(c["culprit"], "INFO: rcu detected stall in work_fn")

    def test_no_frame_is_corrupted(self):
        c = crash("general protection fault, probably for non-canonical address 0xdffffc0000000001: 0000 [#1]\n"
                  "RIP: 0010:memcpy+0x1/0x2\nCall Trace:\n <TASK>\n")
        self.assertEqual((c["culprit"], c["function"], c["corrupted"]),
                         ("general protection fault in corrupted", None, True))

    def test_arm_trace_without_a_heading(self):
        c = crash("kernel BUG at lib/string_helpers.c:1027!\nInternal error: Oops - BUG: 0 [#1] SMP ARM\n"
                  "PC is at fortify_panic+0x14/0x18\n fortify_panic from caller_fn+0x0/0x4\n")
        self.assertEqual(c["culprit"], "kernel BUG in caller_fn")

    def test_titles_drop_what_varies(self):
        self.assertEqual(syztitle.sanitize("BUG: spinlock bad magic on CPU#1, syz-executor.3/1234 at 0xffff888004a2c800"),
                         "BUG: spinlock bad magic on CPU, syz-executor at ADDR")
        self.assertEqual(syztitle.sanitize("UBSAN: shift in net/x.c:10:2 age=12\x01"),
                         "UBSAN: shift in net/x.c:LINE age=NUM")


if __name__ == "__main__":
    unittest.main(verbosity=2)
