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
# Python starts with SIGINT blocked (by perl, Essential in Debian) and
# krepro unblocks it first thing: a Ctrl-C in the interpreter's own start-up
# is then krepro's one line and 130, not Python's traceback and exit 1 (to
# git bisect: a bad commit).
blocked=()
command -v perl >/dev/null && blocked=(perl -MPOSIX -e
	'sigprocmask(SIG_BLOCK, POSIX::SigSet->new(SIGINT)) or die "sigprocmask: $!\n";
	 exec {$ARGV[0]} @ARGV or die "$ARGV[0]: $!\n"')
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
		exec "${blocked[@]}" "$PY" -m krepro classify "${args[@]}"
		;;
	esac
done
exec "${blocked[@]}" "$PY" -m krepro run "$@"
