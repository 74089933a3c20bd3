# xpv: the front door. `make demo` and `make test` do all set-up first.
#
#   make setup     Debian packages + DPDK driver SDK headers (idempotent, seconds when done)
#   make build     release-ish build in build/
#   make test      unit + integration tests (plain and ASan/UBSan builds), fuzz smoke, real-Xen e2e
#   make demo      the main job on the simulated backend
#   make bench     benchmarks and report
#   make docs      API reference of include/xpv (Doxygen) and the NIC guide page, in build/docs;
#                  any warning fails
#   make e2e-xen   real Xen (4.17 in QEMU) end-to-end checks
#   make fuzz      libFuzzer targets (response path, backend xenstore keys) for FUZZ_SECONDS (default 60)
#   make deb       Debian packages (libxpv0, libxpv-dev, dpdk-pmd-xenpv, xpv-tools) into build/deb/
#   make soak      SOAK_MINUTES (default 10) over xpv-netback: bridge, 4 queues, 60..9000-byte
#                  frames, reconnects every minute; memory, fds and payloads checked

BUILD      ?= build
BUILD_ASAN ?= build-asan
MESON_OPTS  = -Ddpdk_sdk_include=$(shell scripts/setup.sh --print-sdk-dir 2>/dev/null)
NINJA      ?= ninja
FUZZ_SECONDS ?= 60
SOAK_MINUTES ?= 10

# Compiler cache outside the repository (meson uses ccache when it finds it; setup installs it):
# a clean clone compiles only what no earlier build on this machine compiled. BASEDIR turns the
# checkout's absolute paths into relative ones and NOHASHDIR leaves the build directory out of
# the key (it only reaches the debug info), so that clones in other directories share entries.
export CCACHE_DIR ?= $(or $(XPV_CACHE),/var/cache/xpv)/ccache
export CCACHE_BASEDIR ?= $(CURDIR)
export CCACHE_NOHASHDIR ?= 1

.PHONY: all setup build build-asan test unit-test demo bench docs e2e-xen fuzz soak deb clean format

all: build

setup:
	@scripts/setup.sh

$(BUILD)/build.ninja:
	meson setup $(BUILD) $(MESON_OPTS) >/dev/null

$(BUILD_ASAN)/build.ninja:
	meson setup $(BUILD_ASAN) $(MESON_OPTS) -Db_sanitize=address,undefined -Db_lundef=false \
	  -Dbuildtype=debug -Doptimization=1 >/dev/null

build: setup $(BUILD)/build.ninja
	@$(NINJA) -C $(BUILD)

build-asan: setup $(BUILD_ASAN)/build.ninja
	@$(NINJA) -C $(BUILD_ASAN)

# Everything, with one summary line at the end.
test: build build-asan
	@scripts/run-tests.sh --build $(BUILD) --asan $(BUILD_ASAN)

# Only the unit tests of the plain build (quick).
unit-test: build
	@scripts/run-tests.sh --build $(BUILD) --only unit

demo: build
	@scripts/demo.sh --build $(BUILD)

bench: build
	@scripts/bench.sh --build $(BUILD)

docs: setup
	@scripts/docs.sh --build $(BUILD)

e2e-xen: build
	@scripts/run-tests.sh --build $(BUILD) --only e2e-xen

fuzz: setup
	@scripts/fuzz.sh --seconds $(FUZZ_SECONDS)

soak: build
	@scripts/soak.sh --build $(BUILD) --minutes $(SOAK_MINUTES)

deb: setup
	@scripts/build-deb.sh --build $(BUILD)

format:
	@git ls-files '*.cc' '*.h' | xargs clang-format -i

clean:
	rm -rf $(BUILD) $(BUILD_ASAN) build-fuzz
