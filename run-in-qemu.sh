#!/usr/bin/env bash
# Run krepro reproducers in QEMU guests: the command users and `git bisect run`
# call. The work is done by the host runner, scripts/krepro (Python, standard
# library only); see `run-in-qemu.sh --help`.
#
#   git bisect run /path/to/run-in-qemu.sh --tree . <repro>
TOP=$(cd "$(dirname "$0")" && pwd)
# Debian's interpreter, where the packages deps.sh installs (python3-yaml,
# LAVA's) are; another python3 on PATH may not see them.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3) || {
	. "$TOP/scripts/common.sh"
	KREPRO_DIE_CODE=128 need_pkgs python3
	PY=/usr/bin/python3
}
export PYTHONPATH="$TOP/scripts${PYTHONPATH:+:$PYTHONPATH}"
# --classify LOG: the kernel reports in a log (python3 -m krepro classify),
# wherever the option is; the other arguments are classify's.
# --classify=LOG is --classify LOG, as every other option takes its value.
for a in "$@"; do
	[ "$a" = "--" ] && break
	case $a in
	--classify | --classify=*)
		args=()
		for b in "$@"; do
			case $b in
			--classify) ;;
			--classify=*) args+=("${b#--classify=}") ;;
			*) args+=("$b") ;;
			esac
		done
		exec "$PY" -m krepro classify "${args[@]}"
		;;
	esac
done
exec "$PY" -m krepro run "$@"
