"""A bundle's README (bundle/make.py): what the bundle is and how to run it,
what PASS and FAIL look like, and the reproducer's own words on its bug,
taken from its README."""
import os

from .. import rates
from ..arches import ARCHES
from ..paths import git_commit, repro_dir


def section(readme, heads):
    """The first "## " section of a reproducer's README whose heading starts
    with one of heads, without its heading, or None."""
    out, on = [], False
    for line in readme.splitlines():
        if line.startswith("## "):
            if on:
                break
            on = line[3:].startswith(heads)
            continue
        if on:
            out.append(line)
    return "\n".join(out).strip() or None


def expected_lines(meta):
    """What a FAIL shows, from the reproducer's declaration."""
    out = []
    for s in meta.signatures:
        line = f"- a kernel report ({s.kind}) whose title matches `{s.title or '.*'}`"
        if s.frame:
            line += f", with `{s.frame}` in its call trace"
        out.append(line)
    if meta.own_evidence:
        cases = ", ".join(f"`{c}`" for c in meta.cases) or "a case"
        out.append(f"- the reproducer's own lines in `out/ktap.txt`: `# <case>: FAIL: ...` "
                   f"and `not ok <n> <case>` for {cases}")
    return "\n".join(out)


def readme_text(meta, kernel, build, config_name, arch, files, comp_why, disk_note, config_note, limit):
    """The bundle's README: what it is and how to run it, what PASS and FAIL
    look like, then the reproducer's own words on the bug and its files."""
    src = os.path.join(repro_dir(), meta.name, "README.md")
    try:
        with open(src, encoding="utf-8") as f:
            own = f.read()
    except OSError:
        own = ""
    parts = (readme_head(meta, kernel.label, build, config_name, arch, config_note, limit)
             + readme_outcomes(meta, arch, kernel.branch)
             + readme_tail(own, files, comp_why, disk_note))
    return "\n".join(parts) + "\n"


def readme_head(meta, label, build, config_name, arch, config_note, limit):
    parts = [
        f"# {meta.name} on {label}",
        "",
        f"{meta.summary}.",
        "",
        f"- Upstream fix: {meta.fix_commit or 'not declared'}",
    ]
    if meta.bug_commit:
        parts.append(f"- Introduced by: {meta.bug_commit}")
    parts += [
        f"- Kernel: `{label}` ({arch}), build {build}; its config: `{config_name}`"
        + (f" ({config_note})" if config_note else ""),
        f"- Made by krepro {git_commit()}'s `bundle` from the reproducer `{meta.name}` "
        f"(seed {meta.seed or '-'})",
        "",
        "## Run it",
        "",
        "```sh",
        "sha256sum -c SHA256SUMS    # run.sh checks them too",
        "./run.sh                   # QEMU TCG" + ("; ./run.sh --kvm on a host with KVM"
                                                  if arch == "x86_64" else " (ARM guests: TCG only)"),
        "```",
        "",
        f"run.sh boots the guest once with the command line krepro uses (it is in "
        f"`out/qemu-cmdline` after a run): {ARCHES[arch]['qemu']}, {meta.cpus} vCPUs, 1 GiB, "
        f"the kernel's serial console in `out/console.log`, the reproducer's KTAP output on a "
        f"virtio console in `out/ktap.txt`. The guest's init runs the reproducer, prints "
        f"`krepro-init: result name={meta.name} exit=N` and powers off; run.sh reads that line "
        f"and exits with N. The time limit is {limit} s (`--timeout SEC`). `./run.sh --help` "
        f"says the rest (`--kernel IMAGE` boots your own build instead, e.g. with a fix).",
        "",
    ]
    return parts


def readme_outcomes(meta, arch, branch):
    parts = [
        "## What PASS and FAIL look like",
        "",
        "The last line run.sh prints is the outcome in words:",
        "",
        f"- `PASS: {meta.name} on ...`, exit 0: the reproducer's cases passed and the kernel "
        "logged no report and no new taint during the test (the kernel with the fix).",
        f"- `FAIL: {meta.name} on ...`, exit 1: the bug showed (the kernel without the fix). "
        "The reproducer's harness fails the run on its own evidence and on any kernel report "
        "or new taint it finds in the kernel's log after its start mark; krepro reads a "
        "report that is not this bug's as another outcome, so check that the console shows "
        "this bug's evidence, one or more of:",
        "",
        expected_lines(meta),
        "",
        "- `BROKEN` (the test could not run, or no result line), `SKIP` (the "
        "kernel lacks an option the reproducer needs)"
        + (": neither verdict. No result within the time limit is this bug's hang: `FAIL`, exit 1."
           if meta.hang_is_bug else
           ", `HANG` (no result within the time limit): neither verdict; exit 125, as "
           "`git bisect run` skips a commit."),
        "",
        "The reproducer refuses to run outside a guest: its harness checks for "
        "`krepro.guest=1` on the kernel command line, which run.sh passes.",
    ]
    rate = rates.repo_record(meta.name, arch, branch) if branch else None
    if rate and rate.get("runs"):
        parts += ["", f"One run is one trial. krepro measured this reproducer FAILing in "
                  f"{rate['fails']} of {rate['runs']} runs on its {branch} kernel with the bug (build "
                  f"{rate.get('build', '?')[:12]}, {rate.get('date', '?')}, QEMU "
                  f"{rates.accel_of(rate).upper()}); runs on a kernel of yours may differ. "
                  "To try more than once: `for i in 1 2 3; do ./run.sh || break; done`."]
    return parts


def readme_tail(own, files, comp_why, disk_note):
    bug = section(own, ("The bug",))
    evidence = section(own, ("Evidence", "What a FAIL looks like", "Verdicts"))
    parts = []
    if evidence:
        parts += ["", "## The evidence (from the reproducer's documentation)", "", evidence]
    if bug:
        parts += ["", "## The bug (from the reproducer's documentation)", "", bug]
    parts += ["", "## Files", ""]
    for name, size, what in files:
        parts.append(f"- `{name}` ({human(size)}): {what}")
    parts += ["", f"The initramfs: {comp_why}."]
    if disk_note:
        parts += ["", disk_note]
    return parts


def human(n):
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
