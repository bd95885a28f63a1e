"""python3 -m krepro classify: the kernel reports in a log as a user has it
(a console log, journalctl, syslog, dmesg, a mail), each titled, its trace
shown, and named when it is the bug one of krepro's reproducers reproduces."""
import collections
import json
import os
import sys

from . import console, firmware, logtext, needles, pasted
from ..protocol import CLEAN, REPRODUCED, USAGE
from ..untrusted import Refused, check_regular, clean, no_build, say

USAGE_LINE = "[--json] [--vmlinux VMLINUX] LOG"

HELP = """\
The kernel reports in LOG (a file, or - for stdin) as a user has it: a serial
console log, journalctl or syslog output (also journalctl -o verbose and
a record's indented lines, rsyslog's #012, logread, wall), dmesg (-T, -H, -x,
-r), crash's `log`, pstore, last_kmsg, caller ids ([T123]) or a vendor's prefix,
CRLF line ends, no timestamps at all, a mail's "> " quotes (lines its client
wrapped joined again), a format=flowed mail's broken lines, markdown,
newlines lost, frames decoded to source lines; each line is read as the
plain console lines it holds (reports/pasted.py, reports/logtext.py), one
at a time: any size, little memory.

Per report:
  title      syzbot's kind of title, "KIND in FUNCTION" (FUNCTION: the first
             frame that is not reporting machinery); "header" the title its
             first line gives, where that differs
  kind       the report table's kind (repro/lib/kernel-reports.tsv): KASAN,
             WARNING, REFCOUNT, ...
  corrupted  whether the classifier found the report cut or interleaved
             (where it says)
  trace      the crashing task's call trace, with each frame's source line
             when the log has it or --vmlinux decodes it
  krepro     the reproducer whose declared signature it matches: the bug,
             its upstream fix, and the command that checks a kernel for it;
             or "no krepro reproducer's signature"
No report in LOG: "no kernel report".

  --json             one JSON object a report and line instead: line, kind,
                     title, header, corrupted (when the classifier says),
                     frames (every function it names), trace [{function,
                     source}], reproducers [{name, fix_commit, check}]; nothing
                     when there is no report
  --vmlinux VMLINUX  the vmlinux (with .debug_line) of the kernel that printed
                     LOG: frames are decoded to file:line by the kernel's
                     scripts/decode_stacktrace.sh, as a FAIL's are

The signatures are the reproducers' own (build/repro/), built first as
run-in-qemu.sh builds them (KREPRO_NO_BUILD=1: what is built is used).

Exit status: 0 no kernel report, 1 a kernel report, 128 LOG or VMLINUX
unreadable (one line says which).
"""

TRACE_SHOWN = 12


def signatures():
    """[(Reproducer, Signature)] of every reproducer built, or ([], why not)."""
    from .. import meta
    try:
        if not no_build():
            meta.ensure_built()
        metas = meta.load_all()
    except meta.MetaError as e:
        return [], str(e).splitlines()[0]
    except OSError as e:
        return [], f"cannot build the reproducers ({e.strerror or e})"
    if not metas:
        return [], "no reproducer is built (make build)"
    return [(m, s) for m in metas.values() for s in m.signatures], None


def check_command(m):
    arch = "" if "x86_64" in m.arches else f"--arch {m.arches[0]} "
    return f"./run-in-qemu.sh {arch}--kernel YOURS {m.name}"


def matches(crash, sigs):
    """The reproducers whose signature the crash matches, each once."""
    seen = {}
    # A signature whose kind no header of the crash has never matches: most
    # are not asked.
    kinds = {k for k, _ in crash.get("headers") or [[crash["kind"], crash["title"]]]}
    for m, s in sigs:
        if s.kind in kinds and m.name not in seen and console.signature_matches(crash, s):
            seen[m.name] = {"name": m.name, "fix_commit": m.fix_commit, "check": check_command(m)}
    return list(seen.values())


class Decoder:
    """Source lines of a crash's frames from --vmlinux, by reports/decode.py; each
    distinct trace decoded once."""

    def __init__(self, vmlinux, arch):
        self.vmlinux, self.arch, self.done, self.why = vmlinux, arch, {}, None

    def sources(self, text):
        from . import decode
        key = tuple(text)
        if key not in self.done:
            out, why = decode.decode(text, self.vmlinux, self.arch)
            if why and not self.why:
                self.why = why
                print(f"krepro: classify: frames not decoded: {why}", file=sys.stderr)
            found = {}
            for line in out or []:
                for f, src in logtext.sources(line).items():
                    found.setdefault(f, src)
            self.done[key] = found
        return self.done[key]


def vmlinux_arch(path):
    """reports/decode.py's arch of an ELF vmlinux (its e_machine), or (None, why not)."""
    try:
        check_regular(path)
        with open(path, "rb") as f:
            head = f.read(20)
    except Refused as e:
        return None, str(e)
    except IsADirectoryError:
        return None, f"{path}: is a directory, not a vmlinux"
    except OSError as e:
        return None, f"{path}: cannot read it ({e.strerror or e})"
    if head[:4] != b"\x7fELF" or len(head) < 20:
        return None, f"{path}: not an ELF file (a vmlinux, not a bzImage or zImage)"
    machine = int.from_bytes(head[18:20], "little" if head[5] == 1 else "big")
    arch = {62: "x86_64", 40: "arm"}.get(machine)
    if arch is None:
        return None, f"{path}: an ELF file for machine {machine}, not x86_64 or arm"
    return arch, None


def crash_text(buf, crash):
    """The unwrapped lines of a crash from the lines kept: its first header
    to its end line, at most its window (console.window())."""
    # buf is in line order: the crash's lines are its last ones, read from
    # the end, not every line kept looked at.
    out = []
    for n, line in reversed(buf):
        if n < crash["line"]:
            break
        out.append(line)
    out.reverse()
    del out[crash["window"]:]
    # The end line, told by its start as console.crashes_marked() tells it:
    # quicker than one multiline search of the lines joined.
    starts, end = console.END_STARTS, console.REPORT_END
    for i in range(1, len(out)):
        if out[i].startswith(starts) and end.match(out[i]):
            del out[i + 1:]
            break
    return out


def reports_of(f, decoder=None):
    """(crash dict, [{function, source}]) for every report in the log f that
    is the kernel's (reports/firmware.py): none in what firmware and boot loaders print
    before the kernel's banner or after a kernel's end. A report before the
    first banner waits until it is known whose it is. A report with a call
    trace is the kernel's wherever it is (no firmware prints one): a log
    that starts in a running kernel, or a kernel booted quiet, without a
    banner, keeps its panic even when the next boot's banner follows."""
    tracker = firmware.Boots()
    held = []
    for crash, trace in all_reports(f, tracker, decoder):
        if tracker.resolved == "firmware":
            held = []
        owner = tracker.owner(crash["line"])
        if owner != "kernel" and crash.get("trace_frames"):
            tracker.kernel_from(crash["line"])
            owner = "kernel"
        if owner == "unknown":
            held.append((crash, trace))
            continue
        yield from held
        held = []
        if owner == "kernel":
            yield crash, trace
    if tracker.resolved != "firmware":
        yield from held


def all_reports(f, tracker, decoder=None):
    """(crash dict, [{function, source}]) for every report in the log f,
    each line read also given to tracker (a firmware.Boots)."""
    buf = collections.deque(maxlen=console.DEEP_TRACE_LINES + 2)
    patterns = console.load_patterns()
    # A report's lines are each header and the lines after it, the most
    # crashes_stream() reads of one: the rest of the log is passed over. A
    # banner or a kernel's end is read wherever it is, alone.
    wanted = needles.needles(patterns)

    # Called for every line a report can be in: its helpers bound once.
    unwrap, undecoded, seen, keep = logtext.unwrap, logtext.undecoded, tracker.line, buf.append

    def read(n, raw):
        # Only the lines the classifier reads are unwrapped and kept: a
        # crash's lines, from its header on, are all of them.
        line = unwrap(raw)
        seen(n, raw, line)
        keep((n, line))
        return undecoded(line)

    # A report's window counts pasted lines: journalctl -o verbose spends
    # nine or more on a message. A deep report's header opens a window of
    # its length.
    deep = tuple((s, console.DEEP_TRACE_LINES + 1) for s in console.deep_needles(patterns))
    marked = logtext.marked_lines(f, wanted, console.TRACE_LINES + 1, first=True, alone=firmware.NEEDLES,
                                  wide=pasted.WIDE, deep=deep)
    # A pasted line can hold several messages, or none (reports/pasted.py).
    marked = pasted.lines(marked)
    for crash in console.crashes_marked(marked, patterns, read, logtext.caller_id):
        text = crash_text(buf, crash)
        known = logtext.sources_of(text)
        frames = crash.get("trace_frames") or crash.get("frames") or []
        if decoder is not None and any(fn not in known for fn in frames):
            for fn, src in decoder.sources(text).items():
                known.setdefault(fn, src)
        yield crash, [{"function": fn, "source": known.get(fn)} for fn in frames]


def title_of(crash):
    return crash.get("culprit") or crash["title"]


def as_json(crash, trace, found):
    out = {"line": crash["line"], "kind": crash["kind"], "title": title_of(crash),
           "header": crash["title"]}
    if "corrupted" in crash:
        out["corrupted"] = bool(crash["corrupted"])
    out.update(frames=crash.get("frames") or [], trace=trace, reproducers=found)
    return json.dumps(out)


def as_text(number, crash, trace, found, matching):
    rows = [f"report {number}, line {crash['line']}: {title_of(crash)}"]
    if crash["title"] != title_of(crash):
        rows.append(f"  header     {crash['title']}")
    rows.append(f"  kind       {crash['kind']}")
    if "corrupted" in crash:
        rows.append(f"  corrupted  {'yes' if crash['corrupted'] else 'no'}")
    shown = [t["function"] + (f" ({t['source']})" if t["source"] else "") for t in trace[:TRACE_SHOWN]]
    if len(trace) > TRACE_SHOWN:
        shown.append(f"... {len(trace) - TRACE_SHOWN} more")
    for i, s in enumerate(shown or ["(no frames)"]):
        rows.append(f"  {'trace' if i == 0 else '':<10} {s}")
    for m in found:
        rows.append(f"  krepro     this is the bug krepro's {m['name']} reproduces; fixed upstream by "
                    f"{m['fix_commit']}; check your kernel: {m['check']}")
    if not found and matching:
        rows.append("  krepro     no krepro reproducer's signature")
    # The log's own words, escaped: a title or frame could drive the terminal.
    return "\n".join(clean(r) for r in rows)


def parser():
    from ..options import Parser
    import argparse
    p = Parser(prog="python3 -m krepro classify", usage=f"python3 -m krepro classify {USAGE_LINE}",
               description=HELP, allow_abbrev=False, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("log", metavar="LOG", help="a kernel log, or - for stdin")
    p.add_argument("--json", action="store_true", help="one JSON object a report and line")
    p.add_argument("--vmlinux", help="the vmlinux of the kernel that printed LOG, to decode its frames")
    return p


def fail(msg):
    print(f"krepro: classify: {say(msg)}", file=sys.stderr)
    return USAGE


def open_log(path):
    """(the log open as text, None), or (None, why not): stdin for "-",
    else a regular file only (a FIFO would hang, /dev/zero never end)."""
    try:
        if path == "-":
            sys.stdin.reconfigure(encoding="utf-8", errors="replace")
            return sys.stdin, None
        check_regular(path)
        return open(path, encoding="utf-8", errors="replace"), None
    except Refused as e:
        return None, f"{e} (a pipe goes on stdin: LOG -)"
    except FileNotFoundError:
        return None, f"{path}: no such file"
    except IsADirectoryError:
        return None, f"{path}: is a directory, not a log"
    except OSError as e:
        return None, f"{path}: cannot read it ({e.strerror or e})"


def main(argv):
    o = parser().parse_args(argv)
    decoder = None
    if o.vmlinux is not None:
        arch, why = vmlinux_arch(o.vmlinux)
        if why:
            return fail(why)
        from . import decode
        if not decode.has_line_info(o.vmlinux, arch):
            return fail(f"{o.vmlinux}: has no line information (.debug_line): "
                        "build it with CONFIG_DEBUG_INFO")
        decoder = Decoder(o.vmlinux, arch)
    f, why = open_log(o.log)
    if why:
        return fail(why)
    sigs = None
    found = 0
    try:
        with f:
            for crash, trace in reports_of(f, decoder):
                if sigs is None:
                    # Only a log with a report needs them (and a build).
                    sigs, why = signatures()
                    if why:
                        print(f"krepro: classify: reports not matched to krepro's reproducers: {why}",
                              file=sys.stderr)
                found += 1
                named = matches(crash, sigs)
                if o.json:
                    print(as_json(crash, trace, named), flush=True)
                else:
                    print(("\n" if found > 1 else "") + as_text(found, crash, trace, named, not why),
                          flush=True)
    except OSError as e:
        # A read error midway (EIO): the reports before it are shown.
        return fail(f"{o.log}: cannot read it ({e.strerror or e})")
    if not found:
        if not o.json:
            print("no kernel report")
        return CLEAN
    return REPRODUCED
