#!/usr/bin/env bash
# Run krepro reproducers in QEMU guests and give DESIGN.md's verdicts.
#
# usage: run-in-qemu.sh [options] <repro>...
#        run-in-qemu.sh --list | --help
#
#   --arch A        guest arch: x86_64 | arm (default x86_64); selects the kernels,
#                   the guest image, QEMU, and the reproducers (--list too)
#   --kernel K      unpatched | patched | PATH to a bzImage (arm: zImage); repeatable
#                   (default unpatched). A PATH's config (CONFIG_IKCONFIG) is checked
#                   against what the reproducers declare: missing options are warned
#                   about, and the reproducer says SKIP naming them
#   --tree DIR      build the kernel tree in DIR (yours: a git checkout, any state)
#                   with krepro's config fragments (for --arch), objects outside DIR,
#                   and run on it; repeatable. Not a kernel tree or no build: exit 125
#                   and the build log's path (git bisect skips the commit)
#   --repeat N      boot N guests per reproducer and kernel (default 1)
#   --timeout SEC   wall-clock limit per guest (default: the reproducer's own limit
#                   plus 60 s for boot and power-off under TCG)
#   --accel A       tcg | kvm | auto (default tcg; auto uses KVM only after a probe
#                   boot proves it works, else TCG; arm guests run under TCG only)
#   --results DIR   where the run directory goes (default results/<time>)
#   --expect        judge against the matrix: FAIL on unpatched, PASS on patched
#   --keep          after the reproducer, keep the guest up with a shell on this
#                   terminal instead of powering off (for triage by hand)
#   --list          list the reproducers of the matrix (make repro-all, CI) for
#                   --arch: all but those whose directory holds a file named
#                   not-in-matrix (long sweeps; run them by name)
#   --report DIR    re-render a past run's directory (matrix, KTAP, JUnit, failure
#                   details) from what it holds; boots nothing
#
# One guest per reproducer run. The serial console (kernel log) goes to
# console.log and the reproducer's KTAP to ktap.txt in the run's directory;
# both are kept whatever the verdict.
#
# Exit status (git bisect run compatible): 0 every run passed (or, with
# --expect, every run was as expected), 1 a run failed (or was unexpected),
# 125 undecided (BROKEN or SKIP, a --tree that does not build), 2 usage error.
#
#   git bisect run /path/to/run-in-qemu.sh --tree . <repro>
set -uo pipefail
TOP=$(cd "$(dirname "$0")" && pwd)
. "$TOP/scripts/common.sh"
KREPRO_DIE_CODE=2

BUILD=${KREPRO_BUILD:-$TOP/build}
KREPRO_PY=$TOP/scripts/krepro.py

usage() { sed -n '2,/^set -uo/{/^set -uo/d;s/^# \{0,1\}//;p}' "$0"; }

# The reproducers of KREPRO_ARCH: a reproducer's `.arches = "..."` line
# (krepro.h), or x86_64 when it has none.
known_repros() {
	local d arches
	for d in "$TOP"/repro/*/; do
		d=$(basename "$d")
		[ "$d" = lib ] && continue
		arches=$(sed -n 's/^[[:space:]]*\.arches = "\([^"]*\)".*/\1/p' "$TOP/repro/$d/$d.c" 2>/dev/null)
		case " ${arches:-x86_64} " in *" $KREPRO_ARCH "*) echo "$d" ;; esac
	done
}

kernels=() repros=() repeat=1 timeout= accel=tcg results= expect=0 keep=0 report_dir= list=0
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) [ $# -ge 2 ] || die "--kernel needs a value"; kernels+=("$2"); shift ;;
	--kernel=*) kernels+=("${1#*=}") ;;
	--tree) [ $# -ge 2 ] || die "--tree needs a directory"; kernels+=("tree:$2"); shift ;;
	--report) [ $# -ge 2 ] || die "--report needs a run directory"; report_dir=$2; shift ;;
	--repeat) [ $# -ge 2 ] || die "--repeat needs a value"; repeat=$2; shift ;;
	--timeout) [ $# -ge 2 ] || die "--timeout needs a value"; timeout=$2; shift ;;
	--accel) [ $# -ge 2 ] || die "--accel needs a value"; accel=$2; shift ;;
	--results) [ $# -ge 2 ] || die "--results needs a value"; results=$2; shift ;;
	--expect) expect=1 ;;
	--keep) keep=1 ;;
	--arch) [ $# -ge 2 ] || die "--arch needs a value"; KREPRO_ARCH=$2; shift ;;
	--arch=*) KREPRO_ARCH=${1#*=} ;;
	--list) list=1 ;;
	-h | --help) usage; exit 0 ;;
	-*) echo "run-in-qemu.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
	*) repros+=("$1") ;;
	esac
	shift
done
case " $KREPRO_ARCHES " in *" $KREPRO_ARCH "*) ;; *) die "--arch is one of: $KREPRO_ARCHES" ;; esac
export KREPRO_ARCH
if [ "$list" = 1 ]; then
	for r in $(known_repros); do
		[ -e "$TOP/repro/$r/not-in-matrix" ] || echo "$r"
	done
	exit 0
fi
if [ -n "$report_dir" ]; then
	[ -d "$report_dir" ] || die "--report $report_dir: no such directory"
	if [ "$expect" = 1 ]; then exec python3 "$KREPRO_PY" report "$report_dir" --expect; fi
	exec python3 "$KREPRO_PY" report "$report_dir"
fi
[ ${#repros[@]} -gt 0 ] || { usage >&2; exit 2; }
[ ${#kernels[@]} -gt 0 ] || kernels=(unpatched)
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "--repeat wants a positive number, not '$repeat'"
[ -z "$timeout" ] || [[ $timeout =~ ^[1-9][0-9]*$ ]] || die "--timeout wants seconds, not '$timeout'"
case $accel in tcg | kvm | auto) ;; *) die "--accel is tcg, kvm or auto, not '$accel'" ;; esac
# A list, not a pipe into grep -q: with pipefail, grep's early exit would make
# the writer's SIGPIPE look like "not found".
known=$(known_repros)
for r in "${repros[@]}"; do
	grep -qxF -- "$r" <<<"$known" || {
		echo "run-in-qemu.sh: unknown reproducer '$r' for $KREPRO_ARCH; known ones:" >&2
		sed 's/^/  /' <<<"$known" >&2
		exit 2
	}
done

# An x86 boot image carries "HdrS" at offset 0x202 (Documentation/x86/boot.rst);
# an ARM zImage the magic 0x016f2818 at offset 0x24 (Documentation/arm/booting.rst).
is_kernel_image() {
	case $KREPRO_ARCH in
	x86_64) [ "$(dd if="$1" bs=1 skip=514 count=4 2>/dev/null)" = HdrS ] ;;
	arm) [ "$(od -An -tx1 -j36 -N4 "$1" 2>/dev/null | tr -d ' ')" = 18286f01 ] ;;
	esac
}
image_kind() { case $KREPRO_ARCH in x86_64) echo "an x86 bzImage (no HdrS boot header)" ;; arm) echo "an ARM zImage (no zImage magic at 0x24)" ;; esac; }

images=() labels=()
for k in "${kernels[@]}"; do
	case $k in
	unpatched | patched)
		img=$(kernel_image "$k")
		if [ ! -f "$img" ] || [ -n "$(KREPRO_DIE_CODE=125 "$TOP/scripts/kernels.sh" stale "$k")" ]; then
			log "the $k kernel is missing or stale: building it first"
			KREPRO_DIE_CODE=125 "$TOP/scripts/kernels.sh" build "$k" || exit 125
		fi
		;;
	tree:*)
		# kernels.sh names the build log; 125 tells git bisect to skip.
		img=$(KREPRO_DIE_CODE=125 "$TOP/scripts/kernels.sh" build-tree "${k#tree:}") || exit 125
		;;
	*)
		img=$k
		[ -e "$img" ] || die "--kernel $img: no such file"
		[ -f "$img" ] && is_kernel_image "$img" || die "--kernel $img: not $(image_kind)"
		;;
	esac
	images+=("$(realpath "$img")")
	labels+=("$k")
done
# A path's label is its file name; flavour names stay as they are.
for i in "${!labels[@]}"; do
	case ${labels[$i]} in
	unpatched | patched) ;;
	tree:*) labels[i]=$(basename "$(realpath "${labels[$i]#tree:}")") ;;
	*) labels[i]=$(basename "${labels[$i]}") ;;
	esac
done

# Shared between invocations, never with a build; each boot also takes
# boot.lock (boot_one), so their guests run one at a time.
exec 8>"$KREPRO_CACHE/machine.lock"
if ! flock -s -n 8; then
	log "waiting for a kernel build to finish (lock: $KREPRO_CACHE/machine.lock)"
	flock -s 8
fi

need_pkgs python3
need_arch_pkgs
case $KREPRO_ARCH in
x86_64) guest_target=guest initrd=$BUILD/guest/initramfs.cpio ;;
arm) guest_target=guest-arm initrd=$BUILD/arm/guest/initramfs.cpio ;;
esac
guest_log=$(mktemp)
if ! make -C "$TOP" --no-print-directory -s BUILD="$BUILD" "$guest_target" >"$guest_log" 2>&1; then
	cat "$guest_log" >&2
	rm -f "$guest_log"
	die "building the reproducers or the guest image failed (output above)"
fi
grep -F 'guest image:' "$guest_log" >&2
rm -f "$guest_log"

if [ -z "$results" ]; then
	results=$TOP/results/$(date +%Y%m%d-%H%M%S)
	[ -e "$results" ] && results=$results-$$
fi
mkdir -p "$results" || die "cannot create $results"
results=$(realpath "$results")

describe() { "$BUILD/repro/$1" --describe | sed -n "s/^$2=//p" | head -1; }

# A kernel of the user's: read its config (CONFIG_IKCONFIG, with kbuild's
# extract-ikconfig) and warn about options a reproducer declares and the kernel
# lacks. Warn, not fail: in the guest the harness turns them into SKIP.
check_kconfig() { # image label
	local x cfg r need missing
	for x in "$KREPRO_TREE/scripts/extract-ikconfig" "${3:-}/scripts/extract-ikconfig"; do
		[ -x "$x" ] && break
	done
	if [ ! -x "$x" ]; then
		log "warning: no scripts/extract-ikconfig (kernels.sh tree installs one): $2's options not checked"
		return 0
	fi
	if ! cfg=$("$x" "$1" 2>/dev/null) || [ -z "$cfg" ]; then
		log "warning: $2 carries no config (CONFIG_IKCONFIG): the options the reproducers need are not checked"
		return 0
	fi
	grep -qx 'CONFIG_IKCONFIG_PROC=y' <<<"$cfg" ||
		log "warning: $2 lacks CONFIG_IKCONFIG_PROC=y: in the guest the harness cannot check options either"
	for r in "${repros[@]}"; do
		missing=()
		while IFS= read -r need; do
			case $need in
			*=*) grep -qxF -- "$need" <<<"$cfg" ;;
			*) grep -qE "^$need=[ym]\$" <<<"$cfg" ;;
			esac || missing+=("$need")
		done < <("$BUILD/repro/$r" --describe | sed -n 's/^kconfig=//p')
		[ ${#missing[@]} -eq 0 ] ||
			log "warning: $2 lacks ${missing[*]}, which $r needs: it will SKIP"
	done
}
for k in "${!kernels[@]}"; do
	case ${kernels[$k]} in
	unpatched | patched) ;;
	tree:*) check_kconfig "${images[$k]}" "${labels[$k]}" "${kernels[$k]#tree:}" ;;
	*) check_kconfig "${images[$k]}" "${labels[$k]}" ;;
	esac
done

kvm_works() {
	grep -qwE 'vmx|svm' /proc/cpuinfo || { log "no vmx/svm in /proc/cpuinfo: KVM unusable"; return 1; }
	[ -w /dev/kvm ] || { log "/dev/kvm not writable: KVM unusable"; return 1; }
	local probe
	probe=$(mktemp -d)
	timeout -k 5 60 qemu-system-x86_64 -accel kvm -cpu host -m 512 -smp 1 -nodefaults \
		-display none -no-reboot -kernel "${images[0]}" -initrd "$initrd" \
		-append "console=ttyS0 panic=-1 krepro.guest=1" \
		-chardev file,id=con,path="$probe/console.log" -serial chardev:con >/dev/null 2>&1
	if grep -q 'krepro-init: done' "$probe/console.log"; then
		rm -rf "$probe"
		return 0
	fi
	log "KVM probe boot did not reach the end of init in 60 s: using TCG"
	rm -rf "$probe"
	return 1
}
if [ "$KREPRO_ARCH" = arm ]; then
	[ "$accel" != kvm ] || die "--accel kvm: arm guests run under TCG only"
	accel=tcg
elif [ "$accel" = auto ]; then
	if kvm_works; then accel=kvm; else accel=tcg; fi
fi
log "accelerator: $accel; results: $results"

# Boot one guest for one reproducer run; writes console.log, ktap.txt, run.json,
# verdict.json into $rundir and prints the verdict line.
boot_one() {
	local img=$1 label=$2 repro=$3 n=$4 rundir=$5 disk=${6:-}
	local limit smp extra cpu_args t0 t1 status timed_out=false disk_args=()
	limit=${timeout:-$(($(describe "$repro" timeout) + 60))}
	smp=$(describe "$repro" min_cpus)
	[ "${smp:-1}" -ge 2 ] || smp=2
	extra=$(describe "$repro" cmdline)
	mkdir -p "$rundir"
	: >"$rundir/console.log"
	: >"$rundir/ktap.txt"
	if [ "$accel" = kvm ]; then cpu_args=(-accel kvm -cpu host); else cpu_args=(-accel tcg -cpu max); fi
	local console=ttyS0 virtio=pci
	[ "$KREPRO_ARCH" = arm ] && console=ttyAMA0 virtio=device
	local cmdline="console=$console loglevel=7 panic=-1 krepro.guest=1 krepro.run=$repro $extra"
	[ "$keep" = 1 ] && cmdline="$cmdline krepro.keep=1"
	# disk: "prepare:FILE" writes FILE (the preparatory boot), "view:FILE" gives
	# the run a copy-on-write view of it, so every run starts from the same image.
	case $disk in
	prepare:*)
		cmdline="$cmdline krepro.prepare=1"
		disk_args=(-drive "file=${disk#prepare:},if=none,id=vda,format=raw" -device virtio-blk-$virtio,drive=vda) ;;
	view:*)
		disk_args=(-drive "file=${disk#view:},if=none,id=vda,format=raw,snapshot=on" -device virtio-blk-$virtio,drive=vda) ;;
	esac
	# One socket per CPU: without ACPI the kernel finds CPUs in SeaBIOS's MP
	# table, which lists one entry per package (-smp 2 as 2 cores = 1 CPU).
	local qemu
	case $KREPRO_ARCH in
	x86_64)
		qemu=(qemu-system-x86_64 "${cpu_args[@]}" -m 1G
			-smp "$smp,sockets=$smp,cores=1,threads=1") ;;
	arm)
		# QEMU's virt board: PL011 UART (ttyAMA0), virtio-mmio transports,
		# and a device tree QEMU writes for the kernel.
		qemu=(qemu-system-arm -M virt -accel tcg -cpu cortex-a15 -m 1G -smp "$smp") ;;
	esac
	qemu+=(-nodefaults -display none -no-reboot
		-kernel "$img" -initrd "$initrd" -append "$cmdline"
		-device "virtio-serial-$virtio"
		-chardev file,id=ktap,path="$rundir/ktap.txt" -device virtconsole,chardev=ktap
		"${disk_args[@]}")
	printf '%q ' "${qemu[@]}" >"$rundir/qemu-cmdline"
	# One guest at a time on this machine, whoever started it: TCG guests
	# side by side stall each other (RCU stall reports) and change a race's
	# odds. Held per boot, so concurrent invocations take turns.
	exec 7>"$KREPRO_CACHE/boot.lock"
	if ! flock -n 7; then
		log "waiting for another guest to finish (lock: $KREPRO_CACHE/boot.lock)"
		flock 7
	fi
	t0=$(date +%s.%N)
	if [ "$keep" = 1 ]; then
		"${qemu[@]}" -chardev stdio,id=con,logfile="$rundir/console.log",signal=off \
			-serial chardev:con
		status=$?
	else
		timeout -k 5 "$limit" "${qemu[@]}" -chardev file,id=con,path="$rundir/console.log" \
			-serial chardev:con >"$rundir/qemu.log" 2>&1
		status=$?
	fi
	t1=$(date +%s.%N)
	exec 7>&-
	[ "$status" = 124 ] || [ "$status" = 137 ] && timed_out=true
	python3 "$KREPRO_PY" verdict "$rundir" repro="$repro" kernel="$label" kernel_image="$img" \
		run="$n" accel="$accel" timeout="$limit" timed_out="$timed_out" fix="$(describe "$repro" fix)" \
		qemu_status="$status" seconds="$(awk "BEGIN { print $t1 - $t0 }")"
}

# A reproducer that declares a prepared disk gets it made once by the patched
# (correct) kernel and cached; rebuilt when that kernel or the reproducer
# changes. Prints "view:IMAGE", or nothing when the reproducer has no disk.
declare -A disk_of prep_error
prepare_disk() {
	local repro=$1 mib img stamp rundir line patched
	mib=$(describe "$repro" disk_mib)
	[ "${mib:-0}" -gt 0 ] || return 0
	img=$KREPRO_CACHE/images/$repro.img
	if [ "$(describe "$repro" prepare)" != 1 ]; then
		# A blank scratch disk, fresh for the whole run.
		mkdir -p "$results/disks" && truncate -s "${mib}M" "$results/disks/$repro.img"
		echo "view:$results/disks/$repro.img"
		return 0
	fi
	patched=$(kernel_image patched)
	if [ ! -f "$patched" ] || [ -n "$("$TOP/scripts/kernels.sh" stale patched)" ]; then
		log "$repro's disk is made by the patched kernel: building it first"
		flock -u 8
		"$TOP/scripts/kernels.sh" build patched || return 1
		flock -s 8
	fi
	stamp=$( (cat "$patched.stamp"; sha256sum <"$BUILD/repro/$repro") | sha256sum | cut -d' ' -f1)
	if [ ! -f "$img" ] || [ "$(cat "$img.stamp" 2>/dev/null)" != "$stamp" ]; then
		log "preparing $repro's disk on the patched kernel"
		mkdir -p "$(dirname "$img")"
		rm -f "$img.tmp" "$img.stamp"
		truncate -s "${mib}M" "$img.tmp"
		rundir=$results/prepare/$repro
		line=$(boot_one "$patched" patched "$repro" 0 "$rundir" "prepare:$img.tmp")
		if [ "${line%%$'\t'*}" != PASS ]; then
			echo "disk preparation on the patched kernel was ${line%%$'\t'*}: ${line#*$'\t'} (log: $rundir/console.log)"
			return 1
		fi
		mv "$img.tmp" "$img"
		echo "$stamp" >"$img.stamp"
	fi
	echo "view:$img"
}
for repro in "${repros[@]}"; do
	if ! disk_of[$repro]=$(prepare_disk "$repro"); then
		prep_error[$repro]=${disk_of[$repro]:-preparing the disk failed}
		log "$repro: ${prep_error[$repro]}"
	fi
done

total=$((${#images[@]} * ${#repros[@]} * repeat)) i=0
started=$(date +%s)
elapsed() { local s=$(($(date +%s) - started)); printf '%dm%02ds' $((s / 60)) $((s % 60)); }
for k in "${!images[@]}"; do
	for repro in "${repros[@]}"; do
		for n in $(seq 1 "$repeat"); do
			i=$((i + 1))
			rundir=$results/$repro.${labels[$k]}.$n
			printf '[%d/%d] %-20s %-10s run %-3s booting (%s elapsed)\n' "$i" "$total" "$repro" \
				"${labels[$k]}" "$n" "$(elapsed)" >&2
			if [ -n "${prep_error[$repro]:-}" ]; then
				mkdir -p "$rundir"
				line=$(python3 "$KREPRO_PY" verdict "$rundir" repro="$repro" kernel="${labels[$k]}" \
					run="$n" fix="$(describe "$repro" fix)" broken="${prep_error[$repro]}")
			else
				line=$(boot_one "${images[$k]}" "${labels[$k]}" "$repro" "$n" "$rundir" "${disk_of[$repro]}")
			fi
			secs=$(sed -n 's/^ *"seconds": \([0-9.]*\).*/\1/p' "$rundir/verdict.json")
			printf '[%d/%d] %-20s %-10s run %-3s %-6s %5ss  %s\n' "$i" "$total" "$repro" \
				"${labels[$k]}" "$n" "${line%%$'\t'*}" "$secs" "${line#*$'\t'}" >&2
			[ "${line%%$'\t'*}" = PASS ] || printf '       log: %s/console.log\n' "$rundir" >&2
		done
	done
done

# The report's exit status is the script's: bisect semantics over all runs, or
# with --expect, whether every row of the matrix is as expected.
report_args=()
[ "$expect" = 1 ] && report_args+=(--expect)
python3 "$KREPRO_PY" report "$results" "${report_args[@]}"
