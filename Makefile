# krepro: kernel regression reproducers, proven both ways in QEMU.
#
#   make repro-all   build what is missing, run every reproducer on both flavours
#   make test        unit tests, patch-series check and the VM matrix (CI runs this)
#   make kernels     build the unpatched and patched kernels (x86_64 and arm)
#   make guest       build the reproducers and the x86_64 guest initramfs
#   make guest-arm   cross-build the ARM reproducers and the armhf guest initramfs
#   make check-patches
#   make gate SERIES=<patches or dir> [BASE=unpatched|patched|PATH]
#                    run every reproducer on BASE and BASE+SERIES; name what changed,
#                    and the patch of each flipped row (NO_BISECT=1: not that)
#   make fixcheck REPRO=R [TREE=DIR] [FIX=PATCH]
#                    does the tree (default: the branch's unpatched flavour) have R's
#                    bug, does the fix apply, and does R PASS with it
#   make report DIR=results/<run>   re-render a past run's reports, boots nothing
#   make bisect TREE=DIR GOOD=G BAD=B REPRO=R
#                    find the commit of TREE that brought REPRO's bug in, and how sure
#   make bundle REPRO=<id> KERNEL=unpatched|patched|PATH [KREPRO_ARCH=arm] [BUNDLES=dir]
#                    one row as a tarball that runs where only QEMU is installed
#   make sweeps      run the long robustness sweeps (not in the matrix) once per flavour
#   make calibrate   measure the FAIL rates on unpatched (CALIBRATE_RUNS guests each) into
#                    repro/<id>/fail-rate.json, the runs into repro/<id>/records/
#   make deps        install the Debian packages the host needs (make lava-deps: LAVA's)
#   make unit        the unit tests (ctest), no kernel built, no guest booted
#   make distro-check  every reproducer on Debian's own kernel, PASS or SKIP
#   make lava-check  one row per arch directly and as a LAVA job: the outcomes agree
#                    (lava-compare: every row; lava-lab, lava-lab-check, lava-lab-stop:
#                    krepro's own LAVA lab)
#   make clean       remove the build directory (clean-bisect: bisect's and the gate's clones)
#
# Variables: BRANCH (stable branches, scripts/branches.tsv: "6.12", or "6.1 6.12";
# default every branch for kernels, check-patches, repro-all, calibrate and
# sweeps, the first (6.1) for gate, bisect and bundle), MISS (target miss
# probability of a clean row, default run-in-qemu.sh's),
# MAX_RUNS (cap on guests per row, default 20), REPEAT (a fixed number of runs
# per row instead of sequential decisions), REPROS (default: the matrix of
# both arches, all but the sweeps), KREPRO_CACHE (kernel tree, objects,
# images, ccache, measured rates).

# What a user gives make, a variable on the command line or in the
# environment, is text, never make syntax: each is made here a plain
# variable of the text as given, so that a $(shell ...) in it is characters
# wherever it is used, make -n included (make expands it where it is used,
# and a command-line one whenever a recipe runs, to export it). Each stays
# exported as make exports it: the scripts read KREPRO_CACHE, KREPRO_ARCH
# and the like from the environment. The Makefile's own variables are
# "override": a value given for one of them changes nothing.
override LOWER := a b c d e f g h i j k l m n o p q r s t u v w x y z
override DIGITS := 0 1 2 3 4 5 6 7 8 9
override WORD_CHARS := $(LOWER) A B C D E F G H I J K L M N O P Q R S T U V W X Y Z $(DIGITS) _
# $(call made_of,TEXT,CHARS): non-empty when TEXT is empty or made of the
# single characters CHARS only (a blank or a newline is none of them).
override without = $(if $2,$(call without,$(subst $(firstword $2),,$1),$(wordlist 2,$(words $2),$2)),$1)
override made_of = $(filter xx,x$(call without,$1,$2)x)
# A name make would not export, or one of make's own, is left as it is.
override GIVEN := $(foreach v,$(filter-out MAKEFLAGS MAKEOVERRIDES MFLAGS MAKELEVEL SHELL,$(.VARIABLES)), \
	$(if $(filter-out default automatic file override undefined,$(origin $v)),$(if $(call made_of,$v,$(WORD_CHARS)),$v)))
$(foreach v,$(GIVEN),$(eval override $v := $$(value $v))$(eval export $v))

# Then each value given is checked against what it may be, before anything
# runs (make -n too): one line and make's exit 2. A recipe pastes only a
# value checked here (a number, a name of krepro's tables, a word a
# reproducer's name can be: a typo gets its "did you mean" from check-args);
# any other (a path, a commit) it takes from the environment ("$$SERIES").
override ALL_BRANCHES := $(shell awk -F'\t' '$$1 ~ /^[0-9]/ {print $$1}' scripts/branches.tsv)
override ALL_ARCHES := $(shell awk -F'\t' '$$1 ~ /^[a-z]/ {print $$1}' scripts/arches.tsv)
# $(call word_of,TEXT,CHARS): non-empty when TEXT is one word of CHARS, not an option's (-x).
override word_of = $(and $1,$(if $(filter -%,$1),,$(call made_of,$1,$2)))
# $(call words_of,TEXT,CHARS): non-empty when each word of TEXT is such a word.
override words_of = $(if $(strip $(foreach w,$1,$(if $(call word_of,$w,$2),,no))),,yes)
# $(call one_of,TEXT,WORDS): non-empty when TEXT is empty or one of WORDS.
override one_of = $(and $(filter 1,$(words x$1x)),$(filter xx $(patsubst %,x%x,$2),x$1x))
# $(call check,VAR,TEST,WHAT): refused unless VAR was not given or TEST is non-empty.
override comma := ,
override check = $(if $(filter $1,$(GIVEN)),$(if $2,,$(error $1 wants $(strip $3); nothing was run)))
$(foreach v,MAX_RUNS CALIBRATE_RUNS,$(call check,$v,$(call word_of,$($v),$(DIGITS)),a whole number (ASCII digits)))
$(call check,REPEAT,$(call made_of,$(REPEAT),$(DIGITS)),a whole number (ASCII digits) or nothing)
$(call check,MISS,$(call made_of,$(MISS),$(DIGITS) . e E - +),a probability such as 0.01 or 1e-3)
$(call check,RATE,$(call one_of,$(RATE),measure recorded),measure or recorded)
$(call check,NO_BISECT,$(call one_of,$(NO_BISECT),0 1),1 (on)$(comma) or 0 or nothing (off))
$(call check,KREPRO_ARCH,$(call one_of,$(KREPRO_ARCH),$(ALL_ARCHES)),one of: $(ALL_ARCHES))
$(foreach v,BRANCH ARM_BRANCHES,$(call check,$v,$(if $(filter-out $(ALL_BRANCHES),$($v)),,yes), \
	branches of scripts/branches.tsv: $(ALL_BRANCHES)))
$(if $(filter gate bisect fixcheck bundle,$(MAKECMDGOALS)),$(call check,BRANCH,$(filter 0 1,$(words $(BRANCH))), \
	one branch at most for $(filter gate bisect fixcheck bundle,$(MAKECMDGOALS))))
override REPRO_LISTS := REPROS SWEEPS DISTRO_CHECK LAVA_CHECK LAVA_CHECK_ARM LAB_CHECK LAB_CHECK_ARM
$(foreach v,$(REPRO_LISTS),$(call check,$v,$(call words_of,$($v),$(WORD_CHARS) - .), \
	reproducers' names (letters$(comma) digits$(comma) '-'$(comma) '_'$(comma) '.')))
$(call check,DISTRO_KERNEL,$(call word_of,$(DISTRO_KERNEL),$(LOWER) $(DIGITS) . + - :), \
	a Debian package's name such as linux-image-cloud-amd64)
$(call check,BUILD,$(call word_of,$(BUILD),$(WORD_CHARS) . / + - @),a directory of letters$(comma) digits$(comma) '.'$(comma) '/'$(comma) '+'$(comma) '-'$(comma) '@' and '_')
# A list given as one line of names: its line breaks and tabs blanks.
$(foreach v,$(filter $(REPRO_LISTS) BRANCH ARM_BRANCHES,$(GIVEN)),$(eval override $v := $$(strip $$(value $v))))

BUILD   ?= build
MISS    ?=
MAX_RUNS ?= 20
CALIBRATE_RUNS ?= 30
# Sequential by default; REPEAT=N asks for N runs a row.
override RUN_MODE = $(if $(MISS),--miss $(MISS)) --max-runs $(MAX_RUNS) $(if $(REPEAT),--repeat $(REPEAT))
# REPROS names reproducers of either arch; each arch's matrix takes its own.
# Each list asked for once, when first used (not by a target that needs neither).
override ALL_X86 = $(eval override ALL_X86 := $$(shell ./run-in-qemu.sh --list))$(ALL_X86)
override ALL_ARM = $(eval override ALL_ARM := $$(shell ./run-in-qemu.sh --arch arm --list))$(ALL_ARM)
REPROS  ?= $(ALL_X86) $(ALL_ARM)
override X86_REPROS = $(filter $(ALL_X86),$(REPROS))
override ARM_REPROS = $(filter $(ALL_ARM),$(REPROS))
# Every reproducer of the source tree (the sweeps too): a name in a list
# (REPRO_LISTS) that is none of them is a typo, refused before anything is built.
override ALL_SOURCES = $(filter-out lib,$(notdir $(patsubst %/,%,$(dir $(wildcard repro/*/CMakeLists.txt)))))
override UNKNOWN_REPROS = $(filter-out $(ALL_SOURCES),$(foreach v,$(REPRO_LISTS),$($v)))
# A list the goal runs that was given empty (SWEEPS=): refused, not kernels
# built for nothing.
override EMPTY_LISTS = $(strip $(if $(filter repro-all calibrate,$(MAKECMDGOALS)),$(if $(strip $(REPROS)),,REPROS)) \
	$(if $(filter sweeps,$(MAKECMDGOALS)),$(if $(strip $(SWEEPS)),,SWEEPS)) \
	$(if $(filter distro-check,$(MAKECMDGOALS)),$(if $(strip $(DISTRO_CHECK)),,DISTRO_CHECK)))
# Stable branches (ALL_BRANCHES): each builds its own kernels and decides its own rows.
BRANCH  ?=
override BRANCHES = $(or $(BRANCH),$(ALL_BRANCHES))
# Targets of one branch (gate, bisect, bundle): BRANCH names at most one.
override ONE_BRANCH = $(if $(BRANCH),--branch $(BRANCH))
# The branches whose ARM kernels are built and whose ARM matrix runs
# (make test: the first branch's only, to fit CI's time; README).
ARM_BRANCHES ?= $(BRANCHES)
# Written last by scripts/configure.sh: a configure that failed or was cut
# short leaves none, and the next run configures again.
override CMAKE_STAMP := $(BUILD)/krepro-configured
# The ARM guest's reproducers: a cross build beside the native one.
override ARM_BUILD := $(BUILD)/arm
override ARM_CMAKE_STAMP := $(ARM_BUILD)/krepro-configured

.PHONY: all check-args deps lava-deps lava-check lava-compare lava-lab lava-lab-stop lava-lab-check distro-check build build-arm guest guest-arm kernels repro-all sweeps calibrate test unit check-patches gate report bisect fixcheck bundle clean clean-bisect

all: build

# The values the targets below pass to run-in-qemu.sh (each checked above
# for what it may be), checked by its dry run (it reads files only) for
# what they mean, before any install, build or boot.
check-args:
	@$(if $(EMPTY_LISTS),echo "make: $(EMPTY_LISTS) names no reproducer: nothing would run after the builds" >&2; exit 2)
	@$(if $(UNKNOWN_REPROS),./run-in-qemu.sh --dry-run $(UNKNOWN_REPROS) >/dev/null)
	@./run-in-qemu.sh --dry-run $(RUN_MODE) $(firstword $(ALL_X86)) >/dev/null
	@./run-in-qemu.sh --dry-run --repeat $(CALIBRATE_RUNS) $(firstword $(ALL_X86)) >/dev/null

# Host packages every target below needs; apt-get only when one is missing.
deps:
	@scripts/deps.sh

# LAVA's dispatcher (lava-run) and lavacli: --via lava-run, lava-check.
lava-deps:
	@scripts/deps.sh lava

$(CMAKE_STAMP): CMakeLists.txt
	@scripts/configure.sh $(BUILD) -DCMAKE_BUILD_TYPE=

build: $(CMAKE_STAMP)
	@cmake --build $(BUILD) -- --no-print-directory -s

guest: build
	@guest-image/build.sh $(BUILD)/guest/initramfs.cpio $(BUILD)/repro

$(ARM_CMAKE_STAMP): CMakeLists.txt cmake/arm-linux-gnueabihf.cmake
	@KREPRO_ARCH=arm bash -c '. scripts/common.sh && need_arch_pkgs'
	@zlib=$$(KREPRO_ARCH=arm bash -c '. scripts/common.sh && foreign_deb zlib1g-dev') && \
	scripts/configure.sh $(ARM_BUILD) -DCMAKE_BUILD_TYPE= \
		-DZLIB_STATIC=$$zlib/usr/lib/arm-linux-gnueabihf/libz.a \
		-DCMAKE_TOOLCHAIN_FILE=cmake/arm-linux-gnueabihf.cmake

build-arm: $(ARM_CMAKE_STAMP)
	@cmake --build $(ARM_BUILD) -- --no-print-directory -s

# The native build too: the host runner reads each reproducer's --describe.
guest-arm: build build-arm
	@guest-image/build.sh --arch arm $(ARM_BUILD)/guest/initramfs.cpio $(ARM_BUILD)/repro

kernels: check-args
	@$(foreach b,$(BRANCHES),KREPRO_BRANCH=$(b) scripts/kernels.sh build &&) true
	@$(foreach b,$(filter $(ARM_BRANCHES),$(BRANCHES)),KREPRO_BRANCH=$(b) KREPRO_ARCH=arm scripts/kernels.sh build &&) true

check-patches: check-args
	@$(foreach b,$(BRANCHES),KREPRO_BRANCH=$(b) scripts/kernels.sh check-patches &&) true

unit: build
	@cd $(BUILD) && ctest --output-on-failure

# Every branch's matrix on both arches, then one matrix of them all
# (reproducer x branch x flavour, also in results/matrix-<time>.md); the
# first failing run's status is the target's.
repro-all: check-args kernels guest guest-arm
	@rc=0; stamp=$$(date +%Y%m%d-%H%M%S); dirs=; \
	for b in $(BRANCHES); do \
		if [ -n "$(X86_REPROS)" ]; then d=results/matrix-$$stamp-$$b-x86_64; dirs="$$dirs $$d"; \
			./run-in-qemu.sh --branch $$b --results $$d --kernel unpatched --kernel patched \
			$(RUN_MODE) --expect $(X86_REPROS) || { r=$$?; [ $$rc -ne 0 ] || rc=$$r; }; fi; \
		if [ -n "$(ARM_REPROS)" ] && echo " $(ARM_BRANCHES) " | grep -q " $$b "; then \
			d=results/matrix-$$stamp-$$b-arm; dirs="$$dirs $$d"; \
			./run-in-qemu.sh --branch $$b --arch arm --results $$d --kernel unpatched \
			--kernel patched $(RUN_MODE) --expect $(ARM_REPROS) || { r=$$?; [ $$rc -ne 0 ] || rc=$$r; }; fi; \
	done; \
	echo; ./scripts/krepro-py matrix --out results/matrix-$$stamp.md $$dirs || { r=$$?; [ $$rc -ne 0 ] || rc=$$r; }; \
	exit $$rc

# The FAIL rates the sequential rows start from: written into the repository
# for a developer to review and commit (with the build they were measured on),
# after every guest, so a calibration cut short keeps what it measured; its
# runs are kept as records too. 30 runs that all FAIL put the rate's lower
# bound at 90.5%: a fixed row is then clean after 2 runs at MISS 0.01.
# Exit 1 is what a bug kernel should give (rows that FAILed): not an error.
calibrate: check-args kernels guest guest-arm
	@stamp=$$(date +%Y%m%d-%H%M%S); day=$$(date +%F); \
	for b in $(BRANCHES); do for arch in x86_64 arm; do \
		repros="$(X86_REPROS)"; [ $$arch = x86_64 ] || repros="$(ARM_REPROS)"; \
		[ -n "$$repros" ] || continue; \
		dir=results/calibrate-$$stamp-$$b-$$arch; rc=0; \
		./run-in-qemu.sh --branch $$b --arch $$arch --results $$dir --kernel unpatched \
			--repeat $(CALIBRATE_RUNS) --record-rates $$repros || rc=$$?; \
		[ ! -f $$dir/run.json ] || bench/proof-record.py $$dir $$day-calibration-$$b \
			--conditions "make calibrate: $(CALIBRATE_RUNS) runs a reproducer on $$b" || exit $$?; \
		[ $$rc -le 1 ] || exit $$rc; \
	done; done

# A sweep passes on both flavours unless a kernel crashes: no --expect, one
# guest per kernel.
SWEEPS  ?= xfs-rmap-fuzz
sweeps: check-args kernels guest
	@$(foreach b,$(BRANCHES),./run-in-qemu.sh --branch $(b) --kernel unpatched --kernel patched --repeat 1 $(SWEEPS) &&) true

# check-patches first: it fetches the kernel trees the patch-error unit test uses.
# The matrix is the sequential one of repro-all, every row decided at MISS.
# Every branch's x86_64 matrix; the ARM matrix of the first branch only (the
# other's ARM kernels would add their cold build to CI's time; make
# repro-all runs them all).
override TEST_VARS = ARM_BRANCHES=$(firstword $(ALL_BRANCHES))
test: check-args deps lava-deps
	@$(MAKE) --no-print-directory check-patches
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory repro-all $(TEST_VARS)
	@$(MAKE) --no-print-directory lava-check $(TEST_VARS)
	@$(MAKE) --no-print-directory distro-check $(TEST_VARS)

# One reproducer per arch, on both kernels, run directly and as LAVA jobs
# through lava-run: the outcomes must agree (the table gives both times).
# lava-compare does it for every matrix row.
LAVA_CHECK ?= bpf-percpu-reuse
LAVA_CHECK_ARM ?= arm-kprobe-fortify
lava-check: check-args lava-deps kernels guest guest-arm
	@tests/lava-vs-qemu.py --arch x86_64 $(LAVA_CHECK)
	@tests/lava-vs-qemu.py --arch arm $(LAVA_CHECK_ARM)

# Debian's kernel as its archive has it today, with its modules: the
# reproducers named must PASS on it (their fixes are in Debian's 6.1), not
# BROKEN for want of a module nor SKIP.
DISTRO_KERNEL ?= linux-image-cloud-amd64
DISTRO_CHECK ?= xfs-nowait-dio bpf-percpu-reuse
distro-check: check-args guest
	@deb=$$(scripts/kernels.sh fetch-debian $(DISTRO_KERNEL)) && \
	  ./run-in-qemu.sh --repeat 1 --kernel "$$deb" $(DISTRO_CHECK)

lava-compare: check-args lava-deps kernels guest guest-arm
	@tests/lava-vs-qemu.py --arch x86_64
	@tests/lava-vs-qemu.py --arch arm

# A LAVA lab on this machine (lava-server, PostgreSQL, a worker with a qemu
# device per arch, all on 127.0.0.1; state in $KREPRO_CACHE/lava-lab), and
# --via lava:ID proven on it: a deterministic and a race reproducer on
# x86_64, one on ARM, each through the lab and directly; then the four
# faults (a job rejected, one Incomplete, the worker offline, the lab down).
# Not in make test: its cold run does not fit test's budget (README).
LAB_CHECK ?= bpf-percpu-reuse nvme-tcp-timeout
LAB_CHECK_ARM ?= arm-kprobe-fortify
lava-lab:
	@scripts/lava-lab.sh start

lava-lab-stop:
	@scripts/lava-lab.sh stop

lava-lab-check: check-args lava-lab kernels guest guest-arm
	@eval "$$(scripts/lava-lab.sh env)" && \
	  tests/lava-vs-qemu.py --arch x86_64 --via "lava:$$IDENTITY" --artifacts "$$ARTIFACTS" $(LAB_CHECK) && \
	  tests/lava-vs-qemu.py --arch arm --via "lava:$$IDENTITY" --artifacts "$$ARTIFACTS" $(LAB_CHECK_ARM) && \
	  tests/lava-lab-faults.py

# The gate decides both kernels' rows sequentially unless REPEAT is given.
BASE ?= patched
gate:
	@test -n "$$SERIES" || { echo "usage: make gate SERIES=<patches or dir> [BASE=unpatched|patched|PATH] [REPEAT=N] [MISS=P] [REPROS=...]" >&2; exit 2; }
	@scripts/gate.sh $(ONE_BRANCH) --base "$$BASE" --repros "$(if $(filter arm,$(KREPRO_ARCH)),$(ARM_REPROS),$(X86_REPROS))" $(if $(MISS),--miss $(MISS)) \
		$(if $(REPEAT),--repeat $(REPEAT)) $(if $(filter 1,$(NO_BISECT)),--no-bisect) $$SERIES

report:
	@test -n "$$DIR" || { echo "usage: make report DIR=results/<run>" >&2; exit 2; }
	@./run-in-qemu.sh --report "$$DIR"

# The whole bisection (python3 -m krepro bisect --help); MISS is a good
# step's target miss, MAX_RUNS its cap.
bisect:
	@test -n "$$TREE" -a -n "$$GOOD" -a -n "$$BAD" -a -n "$$REPRO" || { echo "usage: make bisect TREE=DIR GOOD=G BAD=B REPRO=R [RATE=measure|recorded] [MISS=P] [MAX_RUNS=N]" >&2; exit 2; }
	@PYTHONPATH=scripts python3 -m krepro bisect $(ONE_BRANCH) --tree "$$TREE" --good "$$GOOD" --bad "$$BAD" \
		$(if $(RATE),--rate $(RATE)) $(if $(MISS),--miss $(MISS)) --max-runs $(MAX_RUNS) "$$REPRO"
# Does the fix hold here (python3 -m krepro fixcheck --help).
fixcheck:
	@test -n "$$REPRO" || { echo "usage: make fixcheck REPRO=R [TREE=DIR] [FIX=PATCH] [BRANCH=B] [MISS=P]" >&2; exit 2; }
	@PYTHONPATH=scripts python3 -m krepro fixcheck $(ONE_BRANCH) $(if $(TREE),--tree "$$TREE") $(if $(FIX),--fix "$$FIX") \
		$(if $(MISS),--miss $(MISS)) --max-runs $(MAX_RUNS) "$$REPRO"
# krepro bundle builds what the row needs itself (python3 -m krepro bundle --help);
# KREPRO_ARCH=arm for the ARM guest's.
BUNDLES ?= bundles
bundle:
	@test -n "$$REPRO" -a -n "$$KERNEL" || { echo "usage: make bundle REPRO=<id> KERNEL=unpatched|patched|PATH [KREPRO_ARCH=arm] [BUNDLES=dir]" >&2; exit 2; }
	@PYTHONPATH=scripts /usr/bin/python3 -m krepro bundle $(ONE_BRANCH) --out "$$BUNDLES" --kernel "$$KERNEL" "$$REPRO"

clean:
	rm -rf $(BUILD)

# The scratch clones krepro bisect and the gate build in (a kernel tree and
# its objects each, a few GiB); the flavours' kernels and ccache stay.
clean-bisect:
	@scripts/kernels.sh clean-bisect

# What a user gives gate, report, bisect, fixcheck and bundle (paths,
# commits, names) reaches their recipes through the environment, never
# pasted into the shell's text: a quote or a $ in it is a character, not
# syntax. A value given is exported as its text already (the top of this
# file); these export the defaults too.
gate: export SERIES := $(SERIES)
gate: export BASE := $(BASE)
report: export DIR := $(DIR)
bisect fixcheck: export TREE := $(TREE)
fixcheck: export FIX := $(FIX)
bisect: export GOOD := $(GOOD)
bisect: export BAD := $(BAD)
bisect bundle fixcheck: export REPRO := $(REPRO)
bundle: export KERNEL := $(KERNEL)
bundle: export BUNDLES := $(BUNDLES)
