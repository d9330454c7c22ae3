# The two commands: `make run` and `make test` (see README.md). Everything else is a convenience.
BUILD_DIR ?= build
BUILD_TYPE ?= Release
JOBS ?= $(shell nproc)
CMAKE_FLAGS ?=
# ccache, when installed, makes rebuilds (and the install tests' consumer builds) cheap.
LAUNCHER := $(if $(shell command -v ccache),-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
FUZZ_SECONDS ?= 60
DEB_BUILD_DIR ?= build-deb

.PHONY: all deps configure build run test deb sanitize asan tsan fuzz bench plots plot-data attack lease-error format tidy clean

all: build

deps:
	@bash scripts/install-deps.sh

configure: deps
	@cmake -S . -B $(BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) $(LAUNCHER) $(CMAKE_FLAGS) >/dev/null

build: configure
	@cmake --build $(BUILD_DIR) -j$(JOBS) -- --no-print-directory

# Builds sluiced and the libraries it links, nothing else (no tests, benchmarks or examples).
run: configure
	@cmake --build $(BUILD_DIR) -j$(JOBS) --target sluiced -- --no-print-directory
	@bash scripts/run-sluiced.sh $(BUILD_DIR)

test: build
	@cd $(BUILD_DIR) && ctest --output-on-failure -j$(JOBS)

# The Debian packages sluiced and libsluice-dev, in $(DEB_BUILD_DIR)/deb/ (CPack's DEB generator,
# cmake/SluicePackaging.cmake). Its own build directory, installed to /usr, with no tests.
deb: deps
	@cmake -S . -B $(DEB_BUILD_DIR) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) -DCMAKE_INSTALL_PREFIX=/usr \
	  -DSLUICE_BUILD_TESTS=OFF -DSLUICE_BUILD_BENCHMARKS=OFF -DSLUICE_BUILD_FUZZ=OFF \
	  -DSLUICE_BUILD_EXAMPLES=OFF $(LAUNCHER) $(CMAKE_FLAGS) >/dev/null
	@cmake --build $(DEB_BUILD_DIR) -j$(JOBS) -- --no-print-directory
	@cd $(DEB_BUILD_DIR) && mkdir -p deb && (cpack -G DEB -B deb >deb/cpack.log 2>&1 || \
	  (cat deb/cpack.log; false)) && ls -1 "$$PWD"/deb/*.deb

# The concurrency-sensitive tests under ThreadSanitizer and the parsers, stores and fuzz corpora
# under ASan + UBSan, each in its own build directory with only those tests built (CI runs this
# after `make test`; scripts/sanitize.sh lists the tests).
sanitize: deps
	@JOBS=$(JOBS) bash scripts/sanitize.sh all

asan:
	@$(MAKE) test BUILD_DIR=build-asan BUILD_TYPE=Debug CMAKE_FLAGS="-DSLUICE_SANITIZE=ON -DSLUICE_BUILD_BENCHMARKS=OFF"

tsan:
	@$(MAKE) test BUILD_DIR=build-tsan BUILD_TYPE=RelWithDebInfo CMAKE_FLAGS="-DSLUICE_TSAN=ON -DSLUICE_BUILD_BENCHMARKS=OFF"

# Builds the libFuzzer targets with clang-14 in build-fuzz/ and runs each for FUZZ_SECONDS
# (docs/fuzzing.md). Needs clang-14 and libclang-rt-14-dev, which `make test` does not.
fuzz: deps
	@FUZZ_SECONDS=$(FUZZ_SECONDS) JOBS=$(JOBS) bash scripts/fuzz.sh

# The figures of docs/PERFORMANCE.md: SVGs in docs/img/ from the newest CSVs in bench/results/
# (bench/plot.sh; gnuplot, Debian package gnuplot-nox). `make plot-data` first measures new CSVs
# with short runs (about 8 minutes on 2 cores; Release build, redis-server, node and npm for the
# peer). Neither is part of `make test`.
plots:
	@bash bench/plot.sh

plot-data: configure
	@cmake --build $(BUILD_DIR) -j$(JOBS) --target sluiced rls_load redis_store_load script_load -- --no-print-directory
	@ROUNDS=3 SECONDS_PER_RUN=3 bash bench/inflight_sweep.sh $(BUILD_DIR)
	@SECONDS_PER_RUN=4 bash bench/sluiced_bench.sh $(BUILD_DIR)
	@ROUNDS=3 REQUESTS=100000 bash bench/script_cost.sh $(BUILD_DIR)
	@bash bench/plot.sh

# The attack run of docs/reliability.md: one table of the attacks of issue 13 (about 2 minutes on
# 2 cores; redis-server). Not part of `make test`.
attack: configure
	@cmake --build $(BUILD_DIR) -j$(JOBS) --target sluiced rls_load attack_load -- --no-print-directory
	@bash bench/attack.sh $(BUILD_DIR)

# The error harness of issue 20 (docs/PERFORMANCE.md, "Leases: error harness"): N limiter processes
# per store mode against each algorithm's exact bound; fails when exact mode over-admits. About 3
# minutes on 2 cores (redis-server; gnuplot for docs/img/lease_error.svg). LEASE_ERROR=--full for
# the whole sweep (about 50 minutes), --faults for the faults alone, --shift for traffic shifts
# alone. Not part of `make test`.
LEASE_ERROR ?=
lease-error: configure
	@cmake --build $(BUILD_DIR) -j$(JOBS) --target lease_error -- --no-print-directory
	@bash bench/lease_error.sh $(LEASE_ERROR) $(BUILD_DIR)

format:
	@git ls-files '*.h' '*.cc' | xargs clang-format -i

tidy: configure
	@git ls-files 'src/*.cc' | xargs clang-tidy -p $(BUILD_DIR) --quiet --extra-arg=-Wno-unknown-warning-option

clean:
	@rm -rf build build-asan build-tsan build-fuzz $(DEB_BUILD_DIR)
