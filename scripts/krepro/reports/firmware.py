"""Which lines of a board's serial log are the kernel's.

A serial log holds what the firmware and the boot loader print (U-Boot,
coreboot, depthcharge, UEFI, GRUB) before the kernel's banner, and again
after a kernel ends ("reboot: Restarting system", or the last line of a
panic, "---[ end Kernel panic ...") until the next banner.
Their "WARNING: ..." lines are no kernel report. The banner is the kernel's
first line: "Linux version 6.1.0 ...", ARM's "Booting Linux on physical CPU
0x0", or the decompressor's last ("Booting the kernel.", ARM's
"Uncompressing Linux... done, booting the kernel.").

Boots follows a log line by line (the lines classify reads, in order) and
says whose each line is:
  kernel    from a banner on, and from a kernel message on: a line with
            printk's timestamp or a log's "kernel:" wrapping (no firmware
            prints one; a kernel booted quiet prints no banner)
  firmware  after a kernel's end line, until the next banner or a new
            kernel's message (its timestamp earlier than the end line's)
  unknown   before the first banner or message: firmware if a banner comes
            first, the kernel's if a message does, or if neither comes (a
            log with no banner at all is the kernel's), or if none has come
            within PROLOGUE_LINES lines

Only the lines classify reads are seen (logtext.marked_lines: a report's
lines, the log's first line, banners and end lines): a kernel message is
seen when it is a report's line, or the log's first line.

A "Booting the kernel." line is the kernel's (syzkaller's "unexpected
kernel reboot") only when it comes while a kernel runs: not in the first
boot's prologue, nor after a kernel's orderly end. A kernel that stops
without an end line (a panic, a watchdog's reset) leaves the firmware's
lines that follow to be taken for its own, until the next banner.
"""
import re

# What a banner line starts with (after its wrapping), and the whole line.
BANNER_STARTS = ("Linux version ", "Booting Linux on physical CPU", "Booting the kernel",
                 "Uncompressing Linux")
BANNER = re.compile(r"Linux version [0-9]|Booting Linux on physical CPU|Booting the kernel"
                    r"|Uncompressing Linux\.\.\. done, booting the kernel")
# The kernel's last words before the machine restarts or stops.
END_STARTS = ("reboot: ", "---[ end Kernel panic")
KERNEL_END = re.compile(r"reboot: (Restarting system|System halted|Power down)"
                        r"|---\[ end Kernel panic")
# One of these is in every banner and end line: a log reader that passes
# over lines without a needle (logtext.marked_lines) must read these. Each
# is one more pass over the log: "ooting the kernel" finds both stubs' lines.
NEEDLES = ("Linux version ", "Booting Linux on ", "ooting the kernel", "reboot: ",
           "end Kernel panic")
# How many lines a firmware prologue may take before the kernel's banner.
PROLOGUE_LINES = 20000
# How far back a line's owner is asked for: a crash is yielded at most
# this many lines after its header (reports.TRACE_LINES and its end line).
LOOKBACK = 160


# printk's timestamp at the start of a console line, in seconds.
STAMP = re.compile(r"\[ *([0-9]+\.[0-9]+)\]")


def stamp(raw):
    m = STAMP.match(raw)
    return float(m.group(1)) if m else None


class Boots:
    """The owner of each line read (line()), asked by line number (owner())
    for lines up to LOOKBACK before the last one read."""

    def __init__(self):
        self.state, self.last, self.end_stamp = "unknown", 0, None
        # (line number, owner from the line after it on), oldest first
        self.changes = []
        # What the unknown lines turned out to be: "firmware" or "kernel".
        self.resolved = None

    def line(self, n, raw, line):
        """One line read: its number, as the log has it (raw) and unwrapped."""
        self.last = n
        if line.startswith(BANNER_STARTS) and BANNER.match(line):
            if self.state == "unknown":
                self.resolved = "firmware"
            self.change(n, "kernel")
        elif line.startswith(END_STARTS) and KERNEL_END.match(line):
            self.change(n, "firmware")
            self.end_stamp = stamp(raw)
        elif self.state == "unknown" and (line != raw.rstrip("\r\n") or n > PROLOGUE_LINES):
            # A kernel message (its timestamp or log wrapping) is the
            # kernel's, and so is what follows it: no firmware prints one.
            self.resolved = "kernel"
            self.change(n - 1, "kernel")
        elif self.state == "firmware" and line != raw.rstrip("\r\n") and self.restarted(raw):
            self.change(n - 1, "kernel")

    def kernel_from(self, n):
        """Line n is known to be the kernel's (a report with a call trace):
        the kernel's from there on, and the lines before it still unknown
        are the kernel's too (no banner came between)."""
        if self.state == "unknown":
            self.resolved = "kernel"
        if self.state != "kernel":
            self.change(n - 1, "kernel")

    def restarted(self, raw):
        """Whether a kernel message after a kernel's end is a new kernel's
        (one booted quiet, with no banner): its timestamp is earlier than
        the end line's. The ended kernel's last lines are not."""
        t = stamp(raw)
        return self.end_stamp is None or t is None or t < self.end_stamp

    def change(self, n, owner):
        if owner != self.state:
            self.state = owner
            self.changes.append((n, owner))
            # Only the last change before the oldest line still asked for
            # is needed.
            while len(self.changes) > 1 and self.changes[1][0] < self.last - LOOKBACK:
                del self.changes[0]

    def owner(self, n):
        """Whose line n is: "kernel", "firmware" or "unknown"."""
        owner = "unknown"
        for at, state in self.changes:
            if at >= n:
                break
            owner = state
        return owner
