# krepro: kernel regression reproducers, proven both ways in QEMU.
#
#   make repro-all   build what is missing, run every reproducer on both flavours
#   make test        unit tests, patch-series check and the VM matrix (CI runs this)
#   make kernels     build the unpatched and patched kernels (x86_64 and arm)
#   make guest       build the reproducers and the x86_64 guest initramfs
#   make guest-arm   cross-build the ARM reproducers and the armhf guest initramfs
#   make check-patches
#   make gate SERIES=<patches or dir> [BASE=unpatched|patched|PATH]
#                    run every reproducer on BASE and BASE+SERIES; name what changed
#   make report DIR=results/<run>   re-render a past run's reports, boots nothing
#   make sweeps      run the long robustness sweeps (not-in-matrix) once per flavour
#
# Variables: REPEAT (guest runs per reproducer and flavour, default 10),
# REPROS (default: all x86_64 ones but the sweeps), ARM_REPROS (default: all
# arm ones), KREPRO_CACHE (kernel tree, objects, images, ccache).

BUILD   ?= build
REPEAT  ?= 10
REPROS  ?= $(shell ./run-in-qemu.sh --list)
ARM_REPROS ?= $(shell ./run-in-qemu.sh --arch arm --list)
CMAKE_STAMP := $(BUILD)/CMakeCache.txt
# The ARM guest's reproducers: a cross build beside the native one.
ARM_BUILD := $(BUILD)/arm
ARM_CMAKE_STAMP := $(ARM_BUILD)/CMakeCache.txt

.PHONY: all deps build build-arm guest guest-arm kernels repro-all sweeps test unit check-patches gate report clean

all: build

# Host packages every target below needs; apt-get only when one is missing.
deps:
	@scripts/deps.sh

$(CMAKE_STAMP): CMakeLists.txt
	@cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE= >/dev/null

build: $(CMAKE_STAMP)
	@cmake --build $(BUILD) -- --no-print-directory -s

guest: build
	@guest-image/build.sh $(BUILD)/guest/initramfs.cpio $(BUILD)/repro

$(ARM_CMAKE_STAMP): CMakeLists.txt cmake/arm-linux-gnueabihf.cmake
	@KREPRO_ARCH=arm bash -c '. scripts/common.sh && need_arch_pkgs'
	@cmake -S . -B $(ARM_BUILD) -DCMAKE_BUILD_TYPE= \
		-DCMAKE_TOOLCHAIN_FILE=cmake/arm-linux-gnueabihf.cmake >/dev/null

build-arm: $(ARM_CMAKE_STAMP)
	@cmake --build $(ARM_BUILD) -- --no-print-directory -s

# The native build too: the host runner reads each reproducer's --describe.
guest-arm: build build-arm
	@guest-image/build.sh --arch arm $(ARM_BUILD)/guest/initramfs.cpio $(ARM_BUILD)/repro

kernels:
	@scripts/kernels.sh build
	@KREPRO_ARCH=arm scripts/kernels.sh build

check-patches:
	@scripts/kernels.sh check-patches

unit: build
	@cd $(BUILD) && ctest --output-on-failure

# Both arches' matrices run; the first one's failure status is the target's.
repro-all: kernels guest guest-arm
	@rc=0; \
	./run-in-qemu.sh --kernel unpatched --kernel patched --repeat $(REPEAT) --expect \
		$(REPROS) || rc=$$?; \
	./run-in-qemu.sh --arch arm --kernel unpatched --kernel patched --repeat $(REPEAT) \
		--expect $(ARM_REPROS) || { r=$$?; [ $$rc -ne 0 ] || rc=$$r; }; \
	exit $$rc

# A sweep passes on both flavours unless a kernel crashes: no --expect.
# not-in-matrix also holds reproducers whose rates are not measured yet,
# so the sweeps are named.
SWEEPS  ?= xfs-rmap-fuzz
sweeps: kernels guest
	@./run-in-qemu.sh --kernel unpatched --kernel patched $(SWEEPS)

# check-patches first: it fetches the kernel tree the patch-error unit test uses.
# CI runs the matrix with TEST_REPEAT runs per row, not REPEAT's 10: cold
# builds of two architectures plus 10 runs of every row would not fit CI's
# 90 minutes on 2 cores (docs/performance.md). The 10- and 20-run proofs are
# in each reproducer's README.
TEST_REPEAT ?= 5
test: deps
	@$(MAKE) --no-print-directory check-patches
	@$(MAKE) --no-print-directory unit
	@$(MAKE) --no-print-directory repro-all REPEAT=$(TEST_REPEAT)

# The gate runs each reproducer once per kernel unless REPEAT is given.
BASE ?= patched
gate:
	@test -n "$(SERIES)" || { echo "usage: make gate SERIES=<patches or dir> [BASE=unpatched|patched|PATH] [REPEAT=N] [REPROS=...]" >&2; exit 2; }
	@scripts/gate.sh --base "$(BASE)" --repros "$(REPROS)" \
		--repeat $(if $(filter command line environment,$(origin REPEAT)),$(REPEAT),1) $(SERIES)

report:
	@test -n "$(DIR)" || { echo "usage: make report DIR=results/<run>" >&2; exit 2; }
	@./run-in-qemu.sh --report "$(DIR)"

clean:
	rm -rf $(BUILD)
