#!/usr/bin/env bash
# Run krepro reproducers in QEMU guests: the command users and `git bisect run`
# call. The work is done by the host runner, scripts/krepro (Python, standard
# library only); see `run-in-qemu.sh --help`.
#
#   git bisect run /path/to/run-in-qemu.sh --tree . <repro>
TOP=$(cd "$(dirname "$0")" && pwd)
if ! command -v python3 >/dev/null; then
	. "$TOP/scripts/common.sh"
	KREPRO_DIE_CODE=128 need_pkgs python3
fi
PYTHONPATH="$TOP/scripts${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m krepro run "$@"
