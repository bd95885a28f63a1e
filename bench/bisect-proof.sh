#!/bin/bash
# bench/bisect-proof.sh [HISTORY [RESULTS]]: `krepro bisect` on the real
# history bench/bisect-history.sh makes, for its four bugs: the deterministic
# xfs-nowait-dio with the rate measured on BAD (the default), the three races
# with their recorded rates. The bisections share one object directory: the
# first builds the tip from scratch, every later step rebuilds what changed.
# Each bisection's bisect.json and summary.md land in RESULTS/<repro>/; the
# last line per bisection is its verdict and exit status.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/scripts/common.sh"
help_header "${1:-}"
# Two paths at most, neither an option: a typo must not become a history's name.
[ $# -le 2 ] || usage_die "usage: bench/bisect-proof.sh [HISTORY [RESULTS]] (--help for more)"
for a in "$@"; do
	case $a in -*) usage_die "bench/bisect-proof.sh takes paths, not '$a' (--help for more)" ;; esac
done
hist=${1:-${KREPRO_CACHE:-$HOME/.cache/krepro}/bisect-history}
out=${2:-$top/results/bisect-proof-$(date +%Y%m%d-%H%M%S)}
[ -d "$hist/.git" ] || "$top/bench/bisect-history.sh" "$hist" || exit 128
mkdir -p "$out"
for spec in xfs-nowait-dio:measure nvme-rdma-timeout:recorded nvme-tcp-timeout:recorded \
		can-j1939-echo:recorded; do
	repro=${spec%%:*} rate=${spec#*:}
	t0=$(date +%s)
	PYTHONPATH=$top/scripts python3 -m krepro bisect --tree "$hist" --good pristine --bad HEAD \
		--rate "$rate" --results "$out/$repro" "$repro"
	rc=$?
	echo "bisect-proof: $repro (--rate $rate): exit $rc in $(($(date +%s) - t0)) s"
done
