#!/usr/bin/env bash
# Run a command with N CPU hogs beside it (a loaded host), then stop them.
#
#   bench/with-load.sh N COMMAND [ARG...]
#
# The hogs are busy shell loops at normal priority, one per N; they end with
# the command (or when this script is interrupted). Exits with the command's
# status. For proof runs that a busy machine must not turn into a FAIL.
set -u
case ${1:-} in -h | --help) awk 'NR == 1 { next } !/^#/ { exit } { sub(/^# ?/, ""); print }' "$0"; exit 0 ;; esac
[ $# -ge 2 ] && [[ $1 =~ ^[1-9][0-9]?$ ]] || { echo "usage: $0 N COMMAND [ARG...]" >&2; exit 128; }
n=$1
shift
pids=()
stop() { [ ${#pids[@]} -eq 0 ] || kill "${pids[@]}" 2>/dev/null; }
trap stop EXIT
trap 'exit 130' INT TERM
for _ in $(seq "$n"); do
	sh -c 'while :; do :; done' &
	pids+=($!)
done
echo "with-load: $n CPU hogs running (pids ${pids[*]})" >&2
"$@"
rc=$?
stop
trap - EXIT
exit $rc
