"""run-in-qemu.sh --help: the text, its defaults filled in by cli.py
(protocol.py states them)."""

HELP = """\
Run krepro reproducers in QEMU guests and decide each row (one reproducer on
one kernel) by sequential runs at a stated confidence.

usage: run-in-qemu.sh [options] <repro>...
       run-in-qemu.sh --list [--arch A] | --report DIR | --version | --help
       run-in-qemu.sh --classify [--json] [--vmlinux VMLINUX] LOG

Examples:
  run-in-qemu.sh xfs-nowait-dio                        the bug kernel (unpatched)
  run-in-qemu.sh --kernel unpatched --kernel patched --expect xfs-nowait-dio
  run-in-qemu.sh --kernel ~/linux/arch/x86/boot/bzImage xfs-nowait-dio
  run-in-qemu.sh --dry-run --kernel patched can-j1939-echo   plan only, boots nothing
  git bisect run /path/to/run-in-qemu.sh --tree . <repro>

Kernels and guests:
  --arch A          guest arch: x86_64 | arm (default x86_64, or $KREPRO_ARCH);
                    selects the kernels, the guest image, QEMU and the reproducers
  --branch B        stable branch of krepro's flavours: 6.1 | 6.12 (default 6.1,
                    or $KREPRO_BRANCH), with its own patches, images and rates
  --kernel K        unpatched | patched | PATH to a bzImage (arm: zImage), a
                    linux-image .deb or an unpacked one; repeatable (default
                    unpatched). A PATH lacking a reproducer's options makes it
                    SKIP; lacking a detector (KASAN...), that evidence is blind
  --tree DIR        build the kernel tree in DIR (any state) with krepro's config,
                    objects outside DIR, and run on it; repeatable. Not a kernel
                    tree: exit 125 before any work (a dry run too); no build:
                    125 and the build log's path
  --vmlinux PATH    debug information of the one --kernel PATH: its vmlinux, or
                    Debian's linux-image-*-dbg package; reports are decoded with it
  --accel A         tcg | kvm | auto (default tcg; auto uses KVM only after a
                    probe boot proves it works; arm guests run under TCG only)
  --timeout SEC     wall-clock limit per guest, 1-86400 (default: the
                    reproducer's own limit plus {margin} s for boot and power-off)
  --append ARGS     extra kernel command line for every guest
  --qemu-opts OPTS  extra QEMU options for every guest, split as a shell would
                    (a later option overrides krepro's)

Deciding rows:
  --miss P          target miss probability of a clean verdict, 0<P<1 (default
                    {miss}): a row runs until a bug of the reproducer's FAIL rate
                    bound (95%) would have shown with probability 1-P, or its first
                    FAIL; without a recorded rate that applies, 3 clean runs
  --confidence C    the same as --miss 1-C
  --rate F/N        weigh the clean rows of kernels under test with F FAILs in N
                    runs measured elsewhere (git bisect's BAD, say), not a record
  --max-runs N      cap on guests per row, 1-1000 (default 20); a row that reaches
                    it says "undecided" with its figures
  --repeat N        fixed mode: exactly N guests per row, 1-1000
  --expect          judge krepro's flavours against the matrix: FAIL on
                    unpatched, PASS on patched (not with a kernel PATH or --tree)
  --any-report      count a kernel report that is not the bug (OTHER) as a FAIL
                    (for git bisect run; by default OTHER is undecided, 125)
  --record-rates    with --kernel unpatched --repeat N: write the measured FAIL
                    rates to repro/<id>/fail-rate.json (make calibrate)

Where guests run:
  -j, --jobs N      guests at once, 1-64 (default: $KREPRO_JOBS, else the cores
                    over the 2 vCPUs a guest takes, at least 1); a race
                    reproducer that declares it runs with the host to itself
  --via V           qemu (default) | lava-run (a LAVA job per guest through
                    Debian's lava-dispatcher here, no server) | lava:ID (a job per
                    guest submitted with lavacli's identity ID; needs --artifacts)
  --artifacts DIR=URL  with --via lava:ID: kernels, guest image and disks are
                    copied into DIR, which the lab downloads from as URL

By hand:
  --keep            one reproducer, one kernel, one guest; after the reproducer
                    keep it up with a shell on this terminal
  --gdb [PORT]      as --keep, with QEMU's gdbstub on PORT (1-65535, default
                    1234), stopped at its first instruction, nokaslr

Output:
  --results DIR     the run directory (default results/<time>); one that holds a
                    run.json already, or other files, needs --replace
  --replace         let --results reuse a past run's or another non-empty directory
  --report DIR      re-render a past run's reports from its run.json; boots nothing
  --classify LOG    the kernel reports in a log as you have it, and the
                    reproducer whose bug each is; boots nothing (python3 -m
                    krepro classify --help: its options)
  --list            the reproducers of the matrix for --arch (the sweeps, which
                    declare why they are left out, run by name)
  --dry-run         check everything, then print what would be built and booted
                    and how long, from the recorded times; builds and boots nothing
  --version         the krepro commit and the kernel builds it would use
  -h, --help        this text

A guest run's outcome: PASS; FAIL (the reproducer's own evidence, or a report
matching the bug's signature); OTHER (any other kernel report: shown, never
the bug); HANG; BROKEN (no setup, no init, or a report before the start mark);
SKIP (a prerequisite missing, named). Each goes to DIR/run.json as it ends;
summary.md, results.ktap and junit.xml are rendered from it.

Exit status, as git bisect run reads it: 0 every row clean (PASS); 1 a row
reproduced its bug (with --expect: a row not as expected); 125 undecided
(BROKEN, SKIP, OTHER, HANG, undecided, a --tree that does not build);
128 usage error or unreadable input (an unknown or abbreviated option, a
value out of range, a missing path); 130 interrupted.
"""
