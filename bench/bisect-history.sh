#!/bin/bash
# bench/bisect-history.sh DIR: a 21-commit linear history on top of the
# pristine tree of KREPRO_BRANCH (default 6.1; its own patches of each bug), for proving `krepro bisect` on a real kernel. Four bugs sit
# at known positions among context patches, other bugs and their fixes, and
# commits that change nothing the reproducers touch:
#
#    8  nvme-rdma-timeout bug     (a race)
#   11  xfs-nowait-dio bug        (deterministic)
#   15  nvme-tcp-timeout bug      (a race)
#   19  can-j1939-echo bug        (a race)
#
# None of the four is fixed at the tip, so each bisects over the whole line
# (GOOD = the tag `pristine`, BAD = HEAD). Every commit is made with a fixed
# author and date, so the same script gives the same commit ids. Prints them.
set -euo pipefail
. "$(dirname "$0")/../scripts/common.sh"

help_header "${1:-}"
[ $# -eq 1 ] && [ "${1#-}" = "$1" ] || usage_die "usage: bench/bisect-history.sh DIR (--help for more)"
dir=$1
[ ! -e "$dir" ] || KREPRO_DIE_CODE=128 die "$dir exists; give a new directory"
"$KREPRO_TOP/scripts/kernels.sh" tree >/dev/null
git clone -q --shared --branch krepro-pristine "$KREPRO_TREE" "$dir"
cd "$dir"
git tag -f pristine >/dev/null
export GIT_AUTHOR_NAME="krepro history" GIT_AUTHOR_EMAIL=krepro@localhost
export GIT_COMMITTER_NAME="$GIT_AUTHOR_NAME" GIT_COMMITTER_EMAIL="$GIT_AUTHOR_EMAIL"
export GIT_AUTHOR_DATE="2026-12-06T00:00:00Z" GIT_COMMITTER_DATE="2026-12-06T00:00:00Z"
K=$KREPRO_TOP/kernel-patches
sub=$(branch_field patches)
[ "$sub" = - ] && sub= || sub=$sub/

# am ID/PATTERN: the branch's patches of bug ID that match PATTERN.
# shellcheck disable=SC2086 # PATTERN is a glob
am() { git am -q --committer-date-is-author-date "$K/${1%%/*}/$sub"${1#*/}; }
# A commit that the reproducers cannot see: FILE gets LINE appended.
filler() {
	printf '%s\n' "$2" >>"$1"
	git commit -q -a -m "$3"
}

am 'can-j1939-echo/context-*.patch'                                   #  1
am 'tcmu-uio-rmdir/context-*.patch'                                   #  2
am 'nvme-rdma-timeout/context-*.patch'                                #  3
am 'nvme-tcp-timeout/context-*.patch'                                 #  4
am 'bpf-percpu-reuse/bug-*.patch'                                     #  5
filler "$(git ls-files 'Documentation/filesystems/*xfs-delayed-logging-design.rst')" '' \
	'Documentation: end the delayed logging design with a blank line'  #  6
am 'arm-kprobe-fortify/bug-*.patch'                                   #  7 arch/arm only
am 'nvme-rdma-timeout/bug-*.patch'                                    #  8
am 'bpf-percpu-reuse/fix-*.patch'                                     #  9
am 'tcmu-uio-rmdir/bug-*.patch'                                       # 10
am 'xfs-nowait-dio/bug-*.patch'                                       # 11
filler mm/filemap.c '/* krepro history: a comment, no code */' \
	'mm/filemap: a comment at the end of the file'                    # 12
am 'tcmu-uio-rmdir/fix-*.patch'                                       # 13
am 'nft-wg-reroute/bug-*.patch'                                       # 14
am 'nvme-tcp-timeout/bug-*.patch'                                     # 15
am 'arm-kprobe-fortify/fix-*.patch'                                   # 16
am 'nft-wg-reroute/fix-*.patch'                                       # 17
am 'xfs-rmap-keys/bug-*.patch'                                        # 18
am 'can-j1939-echo/bug-*.patch'                                       # 19
filler tools/testing/selftests/bpf/README.rst '' \
	'selftests/bpf: end the README with a blank line'                 # 20
am 'xfs-rmap-keys/fix-*.patch'                                        # 21

git log --reverse --format='%h %s' pristine..HEAD | nl -w2 -s'  '
