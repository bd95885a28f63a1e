"""krepro's command line.

  python3 -m krepro run ARGS...          run-in-qemu.sh (see its --help)
  python3 -m krepro report DIR           re-render a run's reports from its run.json
  python3 -m krepro gate DIR BASE SERIES compare two kernels' rows of a run
  python3 -m krepro classify CONSOLE     the kernel reports in a console log
"""
import sys

from . import cli, render, reports


def main(argv):
    if argv and argv[0] == "run":
        return cli.main(argv[1:])
    if len(argv) == 2 and argv[0] == "report":
        return cli.report(argv[1], None)
    if len(argv) == 4 and argv[0] == "gate":
        return render.gate(argv[1], argv[2], argv[3])
    if len(argv) == 2 and argv[0] == "classify":
        with open(argv[1], errors="replace") as f:
            for r in reports.crashes(f.read()):
                print(f"{r['line']}\t{r['kind']}\t{r['title']}\t{' '.join(r['frames'][:8])}")
        return 0
    print(__doc__, file=sys.stderr)
    return cli.USAGE


sys.exit(main(sys.argv[1:]))
