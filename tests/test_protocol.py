#!/usr/bin/env python3
"""The guest and the host speak one protocol: the harness's header
(repro/lib/protocol.h), the guest's init (guest-image/init) and the host's
module (scripts/krepro/protocol.py) say the same exit codes, marks and
defaults, and a console written the guest's way is read back the host's way.
Boots nothing."""
import os
import re
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(TOP, "scripts"))
from krepro import protocol  # noqa: E402
from krepro.lava import job as lava  # noqa: E402
from krepro import verdict  # noqa: E402
from krepro.meta import Reproducer  # noqa: E402


def read(*path):
    with open(os.path.join(TOP, *path)) as f:
        return f.read()


def header():
    """protocol.h's enum constants and #defines: {name: int or str}."""
    text = re.sub(r"/\*.*?\*/", "", read("repro", "lib", "protocol.h"), flags=re.S)
    out = {name: int(v) for name, v in re.findall(r"\b(KREPRO_[A-Z_]+)\s*=\s*(\d+)", text)}
    for name, v in re.findall(r"^#define\s+(KREPRO_[A-Z_]+)\s+(.+?)\s*$", text, re.M):
        if v.startswith('"'):
            out[name] = v[1:-1].encode().decode("unicode_escape")
        elif v.isdigit():
            out[name] = int(v)
    return out


def init_lines():
    """The lines guest-image/init writes through kmsg(), its prefix added,
    with the shell's variables as they stand in the script."""
    init = read("guest-image", "init")
    m = re.search(r'^kmsg\(\) \{ echo "<\d>([^"]*)\$\*" >/dev/kmsg; \}$', init, re.M)
    assert m, "guest-image/init: no kmsg() that prefixes its lines"
    return m.group(1), [m.group(1) + w for w in re.findall(r'^\s*kmsg "([^"]*)"', init, re.M)]


class Header(unittest.TestCase):
    def test_exit_codes_are_the_hosts_outcomes(self):
        h = header()
        codes = {v: k[len("KREPRO_"):] for k, v in h.items()
                 if k in ("KREPRO_PASS", "KREPRO_FAIL", "KREPRO_BROKEN", "KREPRO_SKIP")}
        self.assertEqual(len(codes), 4, h)
        self.assertEqual(codes, protocol.EXIT_OUTCOME)

    def test_the_default_time_limit(self):
        self.assertEqual(header()["KREPRO_DEFAULT_TIMEOUT"], protocol.DEFAULT_TIMEOUT)
        # A reproducer that declares none gets it, and the host's margin on top.
        r = Reproducer.from_json({"name": "x", "timeout": 0})
        self.assertEqual(r.time_limit, protocol.DEFAULT_TIMEOUT + protocol.TIMEOUT_MARGIN)

    def test_the_start_mark_is_the_one_the_host_looks_for(self):
        line = header()["KREPRO_MARK_START"].replace("%s", "xfs-nowait-dio").rstrip("\n")
        self.assertEqual(line, protocol.HARNESS_START.format(name="xfs-nowait-dio"))
        m = protocol.START_RE.match(line)
        self.assertTrue(m and m.group(3) == "xfs-nowait-dio", line)
        end = header()["KREPRO_MARK_END"].replace("%s", "x", 1).replace("%s", "PASS").rstrip("\n")
        self.assertIsNone(protocol.START_RE.match(end), end)

    def test_the_harness_writes_its_marks_through_the_header(self):
        harness = read("repro", "lib", "harness.c")
        for name in ("KREPRO_MARK_START", "KREPRO_MARK_END", "KREPRO_DEFAULT_TIMEOUT"):
            self.assertIn(name, harness)
        self.assertNotIn('"krepro: %s: start', harness)


class Init(unittest.TestCase):
    def test_the_prefix(self):
        self.assertEqual(init_lines()[0], protocol.INIT)

    def test_every_marker_the_host_reads_is_written(self):
        lines = init_lines()[1]
        for marker in (protocol.INIT_STARTED, protocol.INIT_RUNNING, protocol.INIT_DONE):
            self.assertTrue(any(l.startswith(marker) for l in lines), marker)
        running = [l for l in lines if l.startswith(protocol.INIT_RUNNING)]
        self.assertEqual(running, [protocol.INIT_RUNNING + " $name"])

    def test_every_result_line_parses(self):
        results = [l for l in init_lines()[1] if l.startswith(protocol.INIT + "result")]
        self.assertGreaterEqual(len(results), 3)
        for l in results:
            line = l.replace("$name", "x").replace("$loaded", "4").replace("$rc", "1")
            m = protocol.RESULT_RE.match(line)
            self.assertTrue(m and m.group(1) == "x", line)
            self.assertTrue(re.search(protocol.RESULT_LAVA, line), line)
        self.assertEqual(protocol.INIT_RESULT.format(name="$name", exit="$rc"),
                         results[-1])


class RoundTrip(unittest.TestCase):
    """A console in the guest's words, read by the host."""

    def console(self, code):
        name = "x"
        return "".join(f"[ {i}.0] {l}\n" for i, l in enumerate((
            protocol.INIT_STARTED + ", uptime 1.0 s",
            f"{protocol.INIT_RUNNING} {name}",
            protocol.HARNESS_START.format(name=name),
            protocol.INIT_RESULT.format(name=name, exit=code),
            protocol.INIT_DONE), 1))

    def test_each_exit_code_is_its_outcome(self):
        x = Reproducer.from_json({"name": "x"})
        for code, outcome in protocol.EXIT_OUTCOME.items():
            res = verdict.decide(self.console(code), x, f"# {outcome}: said\n# FAIL: said\n")
            # Exit 1 with no evidence of the reproducer's own is not this bug.
            self.assertEqual(res["outcome"], "OTHER" if code == protocol.FAIL else outcome, code)
            self.assertEqual(res["exit"], code)
        self.assertEqual(verdict.decide(self.console(3), x)["outcome"], "BROKEN")

    def test_lava_reads_the_same_lines(self):
        job = lava.job_definition("x86_64", "j", "file:///k", "file:///i", "c", 60)
        self.assertEqual(job["actions"][1]["boot"]["prompts"], [protocol.INIT_STARTED])
        mon = job["actions"][2]["test"]["monitors"][0]
        self.assertEqual((mon["start"], mon["end"]), (protocol.INIT_RUNNING, protocol.INIT_DONE))


class Defaults(unittest.TestCase):
    def test_the_miss_default_is_stated_once(self):
        # make and the gate pass --miss only when the user gives one.
        for path in (("Makefile",), ("scripts", "gate.sh")):
            self.assertNotRegex(read(*path), r"(?i)miss\s*[?:]?=\s*0\.\d", path)


if __name__ == "__main__":
    unittest.main()
