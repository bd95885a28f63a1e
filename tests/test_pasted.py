#!/usr/bin/env python3
"""krepro classify on logs as users paste them.

(1) Every golden console log (tests/console/*.log), re-wrapped the ways a
    user has a log (journalctl, ISO syslog, dmesg -T, -x and -r, caller ids,
    CRLF, no timestamps, frames decoded by decode_stacktrace.sh or in
    syzbot's way, a mail's quotes), gives the same reports as the log
    itself: kind, title, culprit, line and the trace a signature reads.
(2) The reader that passes over the lines no report can be in
    (logtext.report_lines) gives what reading every line gives, whatever
    its block size, line ends and line lengths.
(3) Hand-written logs in the shape of upstream reports of krepro's bugs,
    not produced by krepro (tests/pasted/), name the reproducer of the bug
    they show; unrelated reports name none; `classify` prints that, the
    trace's source lines, and its --json, and keeps its exit status.
(4) --vmlinux: decoded by a stand-in decode_stacktrace.sh (a fake vmlinux:
    no kernel with debug info is needed), refused without line information.
Boots nothing.
"""
import glob
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro.reports import classify, console, logtext, needles  # noqa: E402
from krepro.reports.console_lines import MAX_LINE, console_lines  # noqa: E402

GOLDEN = sorted(glob.glob(os.path.join(HERE, "console", "*.log")))
PASTED = os.path.join(HERE, "pasted")
STAMP = re.compile(r"^\[ *([0-9]+)\.([0-9]+)\] ?")
FRAME = re.compile(r"([A-Za-z_][A-Za-z0-9_.]*)\+0x[0-9a-f]+/0x[0-9a-f]+")


def message(line):
    """A console line's message and its seconds (None: no timestamp)."""
    m = STAMP.match(line)
    return (line[m.end():], int(m.group(1))) if m else (line, None)


def decode_like_the_script(line):
    """What decode_stacktrace.sh makes of a line: its last frame as
    "name (file:line)", the address words and the leading blanks gone."""
    msg, _ = message(line)
    words = [w for w in msg.split() if not re.match(r"^\[<[0-9a-f]+>\]$", w)]
    for i in range(len(words) - 1, -1, -1):
        m = FRAME.fullmatch(words[i].strip("()"))
        if m:
            words[i] = f"{m.group(1)} (fake/{m.group(1)[:3]}.c:{len(m.group(1))})"
            break
        if not words[i].startswith("["):
            break
    return " ".join(words) if words and words != msg.split() else msg


def syzbot_like(line):
    """syzbot's: each frame with its source line after it, a frame whose
    name ends in "_inline" as an inline one (no offset)."""
    msg, _ = message(line)
    return FRAME.sub(lambda m: f"{m.group(0)} fake/{m.group(1)[:3]}.c:{len(m.group(1))}", msg)


# name -> line -> pasted line. Each keeps the message whole: only its wrapping.
WRAPPINGS = {
    "journalctl": lambda l: "Nov 13 08:58:21 host kernel: " + message(l)[0],
    "journalctl-precise": lambda l: "Nov  3 08:58:21.123456 host-1 kernel: " + message(l)[0],
    "journalctl-monotonic": lambda l: f"[{(message(l)[1] or 0):5d}.000001] host kernel: " + message(l)[0],
    "syslog-iso": lambda l: "2025-01-14T21:40:09.204118+01:00 host kernel: " + l,
    "syslog-iso-z": lambda l: "2025-01-14T21:40:09Z host kernel: " + message(l)[0],
    "dmesg-T": lambda l: "[Tue Jan 14 21:40:09 2025] " + message(l)[0],
    "dmesg-x": lambda l: "kern  :warn  : " + l,
    "dmesg-r": lambda l: "<4>" + l,
    "dev-kmsg": lambda l: "4,1234,5678,-;" + message(l)[0],
    "dmesg-iso": lambda l: "2025-01-14T21:40:09,204118+01:00 " + message(l)[0],
    "caller-T": lambda l: (STAMP.match(l).group(0).rstrip() + "[ T1412] " + message(l)[0]
                           if STAMP.match(l) else l),
    "caller-C-spaced": lambda l: (STAMP.match(l).group(0) + "[   C1] " + message(l)[0]
                                  if STAMP.match(l) else l),
    "caller-alone": lambda l: "[T14140] " + message(l)[0],
    "crlf": lambda l: l + "\r",
    "no-timestamps": lambda l: message(l)[0],
    "decoded": decode_like_the_script,
    "decoded-journalctl": lambda l: "Nov 13 08:58:21 host kernel: " + decode_like_the_script(l),
    "syzbot": syzbot_like,
    "mail-quote": lambda l: "> " + l,
}


def crashes(lines):
    """console.crashes_stream() of (number, line) pairs, as comparable rows."""
    return [(c["line"], c["kind"], c["title"], c.get("culprit"), tuple(c["trace_frames"]))
            for c in console.crashes_stream(lines)]


def read(path):
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


class Wrappings(unittest.TestCase):
    def test_golden_logs_read_the_same_whatever_their_wrapping(self):
        total = same = 0
        misses = []
        for log in GOLDEN:
            text = read(log)
            want = crashes((n, logtext.plain(l)) for n, l in logtext.file_lines(io.StringIO(text)))
            # Read plain, the log itself gives the classifier's titles (its
            # syzbot-style inline frames are frames too).
            self.assertEqual([c[:4] for c in want], [c[:4] for c in crashes(console_lines(text))])
            for name, wrap in WRAPPINGS.items():
                pasted = "\n".join(wrap(l) for l in text.splitlines()) + "\n"
                got = crashes((n, logtext.plain(l)) for n, l in logtext.file_lines(io.StringIO(pasted)))
                total += 1
                if got == want:
                    same += 1
                else:
                    misses.append(f"{os.path.basename(log)} {name}: {got[:1]} != {want[:1]}")
        print(f"wrapped golden logs that read as the log itself: {same}/{total}")
        self.assertEqual(misses, [])

    def test_plain_console_lines_are_left_alone(self):
        for log in GOLDEN:
            for line in read(log).splitlines():
                m = STAMP.match(line)
                msg = line[m.end():] if m else line
                if logtext.plain(line) != msg and not logtext.DECODED.search(msg) and not logtext.INLINE.match(msg):
                    self.fail(f"{os.path.basename(log)}: {line!r} read as {logtext.plain(line)!r}")

    def test_each_wrapping_of_one_report_line(self):
        want = "BUG: KASAN: use-after-free in uio_unregister_device+0x166/0x190"
        for pasted in ["Mar 02 10:14:07 storage-03 kernel: " + want,
                       "2024-06-11T08:31:55.204118+02:00 bbb kernel: [  812.331021] " + want,
                       "<3>[  12.000001] " + want, "[Tue Jan 14 21:40:09 2025] [ T8815] " + want,
                       "[  123.456789][   C1] " + want, "[  +0.000123] " + want, "[Jan14 21:40] " + want,
                       "kern  :err   : [  12.5] " + want, "> > " + want, want + "\r",
                       "[  240.] " + want, "        [  797.730264] " + want, "[    7.910564@0] " + want,
                       "[  +0,000004] " + want, "[30. Jul 08:55] " + want, "          kernel:" + want,
                       "May 21 20:00:40 x 3,2903,86997972896,-;" + want,
                       "Feb 25 20:33:54 fritz kern.warn kernel: [  183.060000][0]" + want,
                       "  1276.725940:   <0> (01-28 07:22:33.325209103) " + want,
                       "\tOct 18 01:52:15 sysrescue kernel: " + want]:
            self.assertEqual(logtext.plain(pasted), want, pasted)

    def test_decoded_frames_read_as_frames_with_their_source(self):
        cases = [(" kfree (mm/slub.c:3567)", " kfree+0x0/0x0", {"kfree": "mm/slub.c:3567"}),
                 ("? j1939_sk_recv (net/can/j1939/socket.c:1 net/can/j1939/main.c:2) can_j1939",
                  "? j1939_sk_recv+0x0/0x0 can_j1939", {"j1939_sk_recv": "net/can/j1939/main.c:2"}),
                 ("RIP: 0010:refcount_warn_saturate (lib/refcount.c:25)",
                  "RIP: 0010:refcount_warn_saturate+0x0/0x0", {"refcount_warn_saturate": "lib/refcount.c:25"}),
                 (" __dump_stack lib/dump_stack.c:88 [inline]", " __dump_stack+0x0/0x0 [inline]",
                  {"__dump_stack": "lib/dump_stack.c:88"}),
                 (" dump_stack_lvl+0xd9/0x150 lib/dump_stack.c:106", " dump_stack_lvl+0xd9/0x150 lib/dump_stack.c:106",
                  {"dump_stack_lvl": "lib/dump_stack.c:106"}),
                 ("dump_stack_lvl (lib/dump_stack.c:110 (discriminator 1))", "dump_stack_lvl+0x0/0x0",
                  {"dump_stack_lvl": "lib/dump_stack.c:110"}),
                 ("vfs_rmdir (fs/namei.c:4246 (discriminator 2) fs/namei.c:4223)", "vfs_rmdir+0x0/0x0",
                  {"vfs_rmdir": "fs/namei.c:4223"}),
                 ("nvme nvme0: queue 1 (timeout 30s)", "nvme nvme0: queue 1 (timeout 30s)", {})]
        for line, plain, sources in cases:
            self.assertEqual(logtext.plain(line), plain)
            self.assertEqual(logtext.sources(logtext.unwrap(line)), sources)


class Skipping(unittest.TestCase):
    NEEDLES = needles.needles(console.load_patterns())

    def same(self, text, what, sizes=(1, 7, 100, 4096, logtext.BLOCK)):
        want = crashes(logtext.file_lines(io.StringIO(text, newline=None)))
        for size in sizes:
            f = io.StringIO(text, newline=None)
            got = crashes(logtext.report_lines(f, self.NEEDLES, console.TRACE_LINES + 1, size))
            self.assertEqual(got, want, f"{what}, block size {size}")
        # A file: read as it arrives (read1), decoded and its line ends
        # translated by the reader itself.
        with tempfile.NamedTemporaryFile("w", newline="", suffix=".log") as t:
            t.write(text)
            t.flush()
            for size in (sizes[0], sizes[-1]):
                with open(t.name, errors="replace") as f:
                    got = crashes(logtext.report_lines(f, self.NEEDLES, console.TRACE_LINES + 1, size))
                self.assertEqual(got, want, f"{what}, from a file, block size {size}")

    def test_every_row_of_the_table_has_a_needle(self):
        # Without one the reader reads every line (slow, never wrong).
        self.assertIsNotNone(self.NEEDLES)
        for _, regex, _, _ in console.load_patterns():
            self.assertIsNotNone(needles.needle(regex.pattern[4:-1]), regex.pattern)

    def test_needle(self):
        self.assertEqual(needles.needle(r"(Oops: )?divide error: "), "divide error: ")
        self.assertEqual(needles.needle(r"BUG: KASAN: ([a-z-]+) in"), "BUG: KASAN: ")
        self.assertEqual(needles.needle(r"list_(add|del) corruption"), " corruption")
        self.assertEqual(needles.needle(r"WARNING: bad unlock balance detected!"),
                         "WARNING: bad unlock balance detected!")
        self.assertEqual(needles.needle(r"a \(b\) [0-9]+ xyz"), "a (b) ")
        self.assertIsNone(needles.needle(r"ab|cd"))
        self.assertIsNone(needles.needle(r"[A-Z]+ x"))
        self.assertEqual(needles.needle(r"abcd?"), "abc")

    def test_golden_logs_one_after_another(self):
        text = "".join(read(log) for log in GOLDEN)
        self.same(text, "every golden log", (997, 65536, logtext.BLOCK))
        self.same("".join(read(log) + "[    1.0] quiet\n" * 400 for log in GOLDEN), "with gaps",
                  (4096, logtext.BLOCK))

    def test_line_ends_and_lengths(self):
        kasan = read(os.path.join(HERE, "console", "kasan-uaf.log"))
        for what, text in [("CRLF", kasan.replace("\n", "\r\n")), ("lone CR", kasan.replace("\n", "\r")),
                           ("form feeds", "a\x0cb\n" * 50 + kasan + "c\x0cd\n" * 50),
                           ("no last newline", "x\n" * 300 + kasan.rstrip("\n")),
                           ("a line over the limit", "y" * (3 * MAX_LINE) + "\n" + kasan),
                           ("empty", "")]:
            self.same(text, what)


def krepro(*args, stdin=None, env=None):
    e = dict(os.environ, PYTHONPATH=os.path.join(TOP, "scripts"), KREPRO_NO_BUILD="1")
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "krepro", "classify", *args], input=stdin, env=e,
                          capture_output=True, text=True)


# Each hand-written log: the reproducers it names (none: []), its title.
EXPECTED = {
    "tcmu-uio-journalctl-decoded.log": (["tcmu-uio-rmdir"], "KASAN: use-after-free Read in uio_unregister_device"),
    "can-j1939-dmesg-T-caller-crlf.log": (["can-j1939-echo"], None),
    "arm-fortify-syslog-iso.log": (["arm-kprobe-fortify"], None),
    "nvme-tcp-syzbot-mail.log": (["nvme-tcp-timeout"], None),
    "nvme-rdma-warning-iso-caller.log": (["nvme-rdma-timeout"], "WARNING in blk_mq_start_request"),
    "unrelated-kasan-ext4-journalctl.log": ([], "KASAN: use-after-free Read in ext4_xattr_inode_dec_ref_all"),
    "unrelated-refcount-bpf-sockmap-crlf.log": ([], None),
    "unrelated-blk-mq-bug-no-timestamps.log": ([], None),
    "unrelated-bpf-htab-dmesg-x.log": ([], "KASAN: slab-out-of-bounds Write in pcpu_copy_value"),
    "no-report-journalctl.log": (None, None),
}


# Reports of krepro's bugs that krepro did not produce: each quoted in its
# upstream fix's commit message, from the reporter's own machine (another
# kernel version, another config, modules, no KASAN on ARM). Each must name
# its reproducer with the first report, and only that one.
UPSTREAM = os.path.join(HERE, "upstream")
UPSTREAM_EXPECTED = {
    "tcmu-uio-rmdir-092561f06702.log": ("tcmu-uio-rmdir", "KASAN: use-after-free Read in uio_unregister_device"),
    "can-j1939-echo-286228d382ba.log": ("can-j1939-echo", "WARNING: refcount bug in j1939_can_recv"),
    "arm-kprobe-fortify-9fa2e7af3d53.log": ("arm-kprobe-fortify", "kernel BUG in arch_prepare_optimized_kprobe"),
}


class Pasted(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        # ctest runs `make unit`, which builds the reproducers' metadata first.
        os.environ["KREPRO_NO_BUILD"] = "1"
        cls.sigs, why = classify.signatures()
        if why:
            raise unittest.SkipTest(f"the reproducers' metadata is not built ({why}): make build")

    def test_every_log_is_in_the_table(self):
        self.assertEqual(sorted(os.listdir(PASTED)), sorted(EXPECTED))

    def test_upstream_reports_name_their_reproducer(self):
        self.assertEqual(sorted(os.listdir(UPSTREAM)), sorted(UPSTREAM_EXPECTED))
        for name, (repro, title) in UPSTREAM_EXPECTED.items():
            with self.subTest(log=name), open(os.path.join(UPSTREAM, name), errors="replace") as f:
                found = list(classify.reports_of(f))
                crash = found[0][0]
                self.assertEqual(classify.title_of(crash), title)
                self.assertEqual([m["name"] for m in classify.matches(crash, self.sigs)], [repro])
                for later, _ in found[1:]:
                    self.assertEqual(classify.matches(later, self.sigs), [])

    def test_each_names_its_reproducer_or_none(self):
        for name, (repros, title) in EXPECTED.items():
            with self.subTest(log=name), open(os.path.join(PASTED, name), errors="replace") as f:
                found = list(classify.reports_of(f))
                if repros is None:
                    self.assertEqual(found, [])
                    continue
                self.assertEqual(len(found), 1)
                crash, trace = found[0]
                self.assertEqual([m["name"] for m in classify.matches(crash, self.sigs)], repros)
                if title:
                    self.assertEqual(classify.title_of(crash), title)
                self.assertTrue(trace)

    def test_text_output(self):
        p = krepro(os.path.join(PASTED, "can-j1939-dmesg-T-caller-crlf.log"))
        self.assertEqual(p.returncode, 1, p.stderr)
        self.assertIn("report 1, line 3: WARNING: refcount bug in j1939_session_get_by_addr",
                      p.stdout)
        self.assertIn("  kind       REFCOUNT\n", p.stdout)
        self.assertIn("  trace      refcount_warn_saturate\n             j1939_session_get_by_addr\n", p.stdout)
        self.assertIn("this is the bug krepro's can-j1939-echo reproduces; fixed upstream by 286228d382ba "
                      "(\"can: can_create_echo_skb(): fix echo skb generation: always use skb_clone()\"); "
                      "check your kernel: ./run-in-qemu.sh --kernel YOURS can-j1939-echo", p.stdout)
        p = krepro(os.path.join(PASTED, "tcmu-uio-journalctl-decoded.log"))
        self.assertIn("uio_unregister_device (drivers/uio/uio.c:1078)\n", p.stdout)
        self.assertIn("tcmu_destroy_device (drivers/target/target_core_user.c:2285)\n", p.stdout)
        p = krepro(os.path.join(PASTED, "arm-fortify-syslog-iso.log"))
        self.assertIn("./run-in-qemu.sh --arch arm --kernel YOURS arm-kprobe-fortify", p.stdout)
        p = krepro(os.path.join(PASTED, "unrelated-kasan-ext4-journalctl.log"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("  krepro     no krepro reproducer's signature\n", p.stdout)
        p = krepro(os.path.join(PASTED, "no-report-journalctl.log"))
        self.assertEqual((p.returncode, p.stdout), (0, "no kernel report\n"))

    def test_json_output(self):
        p = krepro("--json", os.path.join(PASTED, "nvme-tcp-syzbot-mail.log"))
        self.assertEqual(p.returncode, 1, p.stderr)
        rows = [json.loads(l) for l in p.stdout.splitlines()]
        self.assertEqual(len(rows), 1)
        r = rows[0]
        self.assertEqual((r["line"], r["kind"], r["header"]), (6, "BUG", "kernel BUG at block/blk-mq.c:1069"))
        self.assertIn({"function": "nvme_tcp_timeout", "source": "drivers/nvme/host/tcp.c:2355"}, r["trace"])
        self.assertIn({"function": "nvme_tcp_complete_timed_out", "source": "drivers/nvme/host/tcp.c:2314"},
                      r["trace"])
        self.assertEqual([m["name"] for m in r["reproducers"]], ["nvme-tcp-timeout"])
        self.assertTrue(r["reproducers"][0]["fix_commit"].startswith("d6f66210f4b1 "))
        self.assertEqual(r["reproducers"][0]["check"], "./run-in-qemu.sh --kernel YOURS nvme-tcp-timeout")
        p = krepro("--json", os.path.join(PASTED, "no-report-journalctl.log"))
        self.assertEqual((p.returncode, p.stdout), (0, ""))

    def test_stdin(self):
        with open(os.path.join(PASTED, "tcmu-uio-journalctl-decoded.log")) as f:
            p = krepro("-", stdin=f.read())
        self.assertEqual(p.returncode, 1)
        self.assertIn("krepro's tcmu-uio-rmdir reproduces", p.stdout)


class Fields(unittest.TestCase):
    CRASH = {"line": 7, "kind": "KASAN", "title": "KASAN: use-after-free in f", "frames": ["f", "g"]}

    def test_corrupted_is_shown_where_the_classifier_gives_it(self):
        trace = [{"function": "f", "source": "a.c:1"}, {"function": "g", "source": None}]
        for corrupted, word in ((True, "yes"), (False, "no")):
            crash = dict(self.CRASH, corrupted=corrupted)
            self.assertIn(f"  corrupted  {word}\n", classify.as_text(1, crash, trace, [], True))
            self.assertIs(json.loads(classify.as_json(crash, trace, []))["corrupted"], corrupted)
        text = classify.as_text(1, self.CRASH, trace, [], True)
        self.assertNotIn("corrupted", text)
        self.assertIn("  trace      f (a.c:1)\n             g\n", text)
        self.assertNotIn("corrupted", json.loads(classify.as_json(self.CRASH, trace, [])))
        # The culprit title is the title shown; the header's own beside it.
        crash = dict(self.CRASH, culprit="KASAN: use-after-free in g")
        text = classify.as_text(2, crash, trace, [], False)
        self.assertTrue(text.startswith("report 2, line 7: KASAN: use-after-free in g\n"
                                        "  header     KASAN: use-after-free in f\n"), text)
        self.assertNotIn("krepro ", text)


class Unmatched(unittest.TestCase):
    def test_without_metadata_reports_are_still_shown(self):
        with tempfile.TemporaryDirectory() as d:
            p = krepro(os.path.join(PASTED, "nvme-tcp-syzbot-mail.log"), env={"KREPRO_BUILD": d})
        self.assertEqual(p.returncode, 1)
        self.assertIn("report 1, line 6: ", p.stdout)
        self.assertNotIn("krepro     ", p.stdout)
        self.assertEqual(p.stderr, "krepro: classify: reports not matched to krepro's reproducers: "
                                   "no reproducer is built (make build)\n")


FAKE_DECODE = """#!/bin/bash
# A stand-in for decode_stacktrace.sh VMLINUX BASE: "name+0x1/0x2" -> "name (fake.c:1)".
sed -E 's/([A-Za-z_][A-Za-z0-9_.]*)\\+0x[0-9a-f]+\\/0x[0-9a-f]+/\\1 (fake\\/\\1.c:7)/g'
"""


class Vmlinux(unittest.TestCase):
    def test_decoded_with_a_stand_in_script(self):
        with tempfile.TemporaryDirectory() as d:
            os.makedirs(os.path.join(d, "tree", "scripts"))
            with open(os.path.join(d, "tree", "scripts", "decode_stacktrace.sh"), "w") as f:
                f.write(FAKE_DECODE)
            vmlinux = os.path.join(d, "vmlinux")
            # An x86_64 ELF with a .debug_line section: all has_line_info() asks.
            subprocess.run(["gcc", "-g", "-x", "c", "-o", vmlinux, "-"], input="int main(void){return 0;}\n",
                           text=True, check=True)
            env = {"KREPRO_CACHE": d}
            os.rename(os.path.join(d, "tree"), os.path.join(d, "linux-6.1"))
            log = os.path.join(PASTED, "unrelated-blk-mq-bug-no-timestamps.log")
            p = krepro("--vmlinux", vmlinux, log, env=env)
            self.assertEqual(p.returncode, 1, p.stderr)
            self.assertIn("  trace      __blk_mq_end_request (fake/__blk_mq_end_request.c:7)\n", p.stdout)
            self.assertIn("scsi_end_request (fake/scsi_end_request.c:7)\n", p.stdout)
            p = krepro("--json", "--vmlinux", vmlinux, log, env=env)
            self.assertIn({"function": "kthread", "source": "fake/kthread.c:7"}, json.loads(p.stdout)["trace"])
            # Without line information, or not a vmlinux: 128 before LOG is read.
            subprocess.run(["strip", "-g", vmlinux], check=True)
            p = krepro("--vmlinux", vmlinux, "/nonexistent.log", env=env)
            self.assertEqual(p.returncode, 128)
            self.assertIn("has no line information (.debug_line)", p.stderr)
            p = krepro("--vmlinux", log, log, env=env)
            self.assertEqual((p.returncode, p.stderr), (128, f"krepro: classify: {log}: not an ELF file "
                                                             "(a vmlinux, not a bzImage or zImage)\n"))
            p = krepro("--vmlinux", "/nonexistent/vmlinux", log, env=env)
            self.assertEqual(p.returncode, 128)
            self.assertIn("/nonexistent/vmlinux: cannot read it", p.stderr)


if __name__ == "__main__":
    unittest.main(verbosity=2)
