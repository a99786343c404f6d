# torchtpu build. `make run` builds everything and runs the main example;
# `make test` runs every Go and Python test.
SHELL := /bin/bash
ROOT := $(abspath .)
VENV := $(shell $(ROOT)/tools/setup_env.sh)
PY := $(VENV)/bin/python
SITE := $(shell $(PY) -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
TORCH := $(SITE)/torch
PLUGIN_DIR := $(SITE)/xla_plugins/xla_cpu_pjrt
LIB := python/torchtpu/lib/libtorchtpu.so
BUILD := build
CXXFLAGS := -O2 -g0 -fPIC -std=c++20 -D_GLIBCXX_USE_CXX11_ABI=1 -Wall -Wno-unused-parameter \
	-I$(TORCH)/include -I$(TORCH)/include/torch/csrc/api/include -Ibridge
SHIM_SRC := $(wildcard csrc/*.cpp)
# The device profiler implements Kineto's plugin interface (torch's headers guard it with USE_KINETO).
$(BUILD)/shim/device_profiler.o: CXXFLAGS += -DUSE_KINETO -I$(TORCH)/include/kineto
SHIM_OBJ := $(patsubst csrc/%.cpp,$(BUILD)/shim/%.o,$(SHIM_SRC))
GO_SRC := $(shell find pjrt hlo dispatch engine compile_cache bridge -name '*.go' -o -name '*.c' -o -name '*.h' 2>/dev/null)
export CGO_CFLAGS := -I$(ROOT)/$(BUILD)/include -O2
export TORCHTPU_PLUGIN_PATH := $(PLUGIN_DIR)/xla_cpu_pjrt.so
export PYTHONPATH := $(ROOT)/python$(if $(PYTHONPATH),:$(PYTHONPATH))

.PHONY: build run test test-go test-py test-models test-zoo-wide env clean bench bench-peers bench-floors conformance test-conformance \
	test-device-generic test-all-modes
# The shim's translation units compile in parallel, one per core.
build:
	@$(MAKE) --no-print-directory -j$(shell nproc) $(LIB)

env:
	@echo $(VENV)

$(BUILD)/include/pjrt_c_api.h: $(PLUGIN_DIR)/include/pjrt_c_api.h
	@mkdir -p $(dir $@)
	ln -sf $< $@

$(BUILD)/shim/%.o: csrc/%.cpp $(wildcard csrc/*.h) bridge/torchtpu.h
	@mkdir -p $(dir $@)
	g++ $(CXXFLAGS) -c $< -o $@

$(BUILD)/libshim.a: $(SHIM_OBJ)
	rm -f $@ && ar rcs $@ $^

$(LIB): $(BUILD)/include/pjrt_c_api.h $(BUILD)/libshim.a $(GO_SRC) go.mod
	@mkdir -p $(dir $@)
	# The shim goes in through -extldflags (cgo would link CGO_LDFLAGS twice); its
	# digest joins the flags so that Go's build cache relinks when it changes.
	CGO_LDFLAGS="-L$(TORCH)/lib -Wl,--no-as-needed -ltorch -ltorch_cpu -lc10 -lstdc++ -Wl,--as-needed -Wl,-rpath,$(TORCH)/lib" \
	  go build -buildmode=c-shared \
	  -ldflags "-X main.shimDigest=$$(sha256sum $(BUILD)/libshim.a | cut -c1-16) -extldflags '-Wl,--whole-archive $(ROOT)/$(BUILD)/libshim.a -Wl,--no-whole-archive'" \
	  -o $@ ./bridge
	@rm -f $(basename $@).h

run: build
	$(PY) examples/hello_tpu.py
	cd examples && $(PY) train_gpt.py --device tpu --mode fused --steps 150

test: build
	$(MAKE) --no-print-directory test-go test-py

test-go: $(BUILD)/include/pjrt_c_api.h
	TORCHTPU_REQUIRE_PLUGIN=1 go test -count=1 ./...

# TESTS picks what test-py runs, e.g. make test-py TESTS="tests/test_ops.py -k add". The files run in
# JOBS worker processes (one per core, at most 4; JOBS=0 runs them in this process), each file whole in one
# worker, so a file's module fixtures are made once.
TESTS ?= tests
JOBS ?= $(shell n=$$(nproc); echo $$((n < 4 ? n : 4)))
test-py: build
	$(PY) -m pytest -q -n $(JOBS) --dist loadfile $(TESTS)

# Debug mode on every file that runs its tests in each mode (make test runs it on tests/conftest.py's DEBUG_SLICE).
test-all-modes: build
	TORCHTPU_TEST_MODES=all $(PY) -m pytest -q -n $(JOBS) --dist loadfile $(TESTS)

# The model zoo's full tier (tests/models): every model trained several steps in each mode, greedy generation,
# bf16 autocast. `make test` runs its one-step slice.
test-models: build
	HF_HUB_OFFLINE=1 TORCHTPU_ZOO=full $(PY) -m pytest -q tests/models

# The wide zoo: 56 more architectures (tests/models/wide_cases.py), two training steps each in every mode.
test-zoo-wide: build
	HF_HUB_OFFLINE=1 TORCHTPU_ZOO=wide $(PY) -m pytest -q -n $(JOBS) tests/models/test_wide.py

bench: build
	$(PY) bench/op_latency.py

# The peer benchmark (bench/peers.py): PEERS_ARGS passes options through, e.g.
# PEERS_ARGS="--workloads gpt,norm --backends fused,jax --rounds 1 --plot peers.png".
bench-peers: build
	$(PY) bench/peers.py $(PEERS_ARGS)

# Where each fused workload's time goes against the programs under it (bench/floors.py):
# FLOORS_ARGS passes options through, e.g. FLOORS_ARGS="--workloads norm,mlp".
bench-floors: build $(BUILD)/include/pjrt_c_api.h
	$(PY) bench/floors.py $(FLOORS_ARGS)

clean:
	rm -rf $(BUILD) $(LIB)

# The OpInfo conformance sweep (tests/conformance/): results.json and summary.md in build/conformance/.
# CONFORMANCE_ARGS passes options through, e.g. CONFORMANCE_ARGS="--ops 'nn.functional.*' --limit-samples 2".
conformance: build
	$(PY) -m tests.conformance.run $(CONFORMANCE_ARGS)

# Every case sweep (tests/conformance/test_sweep_*.py: error inputs, out=, ...) in full, a pass-rate table of
# them from build/conformance/sweeps/, then the OpInfo sweep above; fails when a sweep does not match its
# expected-failure list.
SWEEP_REPORT := $(BUILD)/conformance/sweeps
test-conformance: build
	rm -rf $(SWEEP_REPORT) && mkdir -p $(SWEEP_REPORT)
	TORCHTPU_CONFORMANCE=full TORCHTPU_CONFORMANCE_REPORT=$(ROOT)/$(SWEEP_REPORT) \
	  $(PY) -m pytest -q tests/conformance/test_sweep_*.py; status=$$?; \
	  $(PY) -m tests.conformance.sweep_report $(SWEEP_REPORT); \
	  $(MAKE) --no-print-directory conformance && exit $$status

# PyTorch 2.6.0's own device-generic tests on tpu, downloaded once into ~/.cache/torchtpu/device_generic
# (tests/device_generic/run.py): a per-file pass rate with failures that also fail on CPU left out, written to
# build/device_generic/. Not part of `make test`. DEVGEN_ARGS passes options through, e.g.
# DEVGEN_ARGS="--files test_indexing.py,test_view_ops.py --failures /tmp/failures.txt".
test-device-generic: build
	$(PY) -m tests.device_generic.run $(DEVGEN_ARGS)
