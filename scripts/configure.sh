#!/usr/bin/env bash
# Configure a CMake build directory of the reproducers (the Makefile's build
# and build-arm call it when their stamp is missing or older than the CMake
# files).
#   configure.sh BUILD_DIR [CMAKE_OPTION...]
# BUILD_DIR/krepro-configured is written last, when cmake has configured and
# generated the build to its end. A configure that failed or was cut short
# leaves none, so the next call configures again; a failed one also drops
# its CMakeCache.txt (what it cached, a compiler or library it did not find,
# is not trusted) and keeps its output in BUILD_DIR/configure-failed.log,
# which the next call names.
set -euo pipefail
. "$(dirname "$0")/common.sh"
help_header "${1:-}"
[ $# -ge 1 ] && [ -n "$1" ] || usage_die "configure.sh: a build directory is needed (usage: configure.sh BUILD_DIR [CMAKE_OPTION...])"
dir=$1
shift
stamp=$dir/krepro-configured failed=$dir/configure-failed.log
command -v cmake >/dev/null || usage_die "no cmake on this machine: run make deps (or apt-get install cmake build-essential)"
mkdir -p "$dir" || die "cannot create $dir"
rm -f "$stamp"
if [ -f "$failed" ]; then
	log "the last configure of $dir failed (its log: $failed): configuring again"
elif [ -e "$dir/CMakeCache.txt" ] && [ ! -e "$dir/Makefile" ]; then
	log "$dir was not configured to its end (cut short?): configuring again"
fi
if ! cmake -S "$KREPRO_TOP" -B "$dir" "$@" >"$dir/configure.log" 2>&1; then
	mv -f "$dir/configure.log" "$failed"
	rm -f "$dir/CMakeCache.txt"
	grep -A4 '^CMake Error' "$failed" | head -20 >&2 || true
	die "configuring $dir failed; its log: $failed (make deps installs what the build needs)"
fi
rm -f "$failed"
: >"$stamp" || die "cannot write $stamp (a full disk?)"
