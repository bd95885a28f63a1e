"""krepro's host side: one runner for boots, verdicts, sequential decisions
and reports. `python3 scripts/krepro` (run-in-qemu.sh) is its command line."""
