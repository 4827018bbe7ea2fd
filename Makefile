# The two commands of the README: `make run` (the main job) and `make test` (every test).
CARGO ?= cargo

.PHONY: run test install python stress loom fuzz fmt-check clippy bench bench-instructions device-tools

ARGS ?= run examples/randread-libaio.fio --platform example --interrupts

run:
	$(CARGO) run --release -p irqlab -- $(ARGS)

# Puts `irqlab` on PATH: cargo installs the release build into ~/.cargo/bin, which
# rustup's installer puts on PATH (PREFIX=DIR installs into DIR/bin instead).
PREFIX ?=
install:
	$(CARGO) install --locked --path crates/irqlab $(if $(PREFIX),--root $(PREFIX))

# Unit, property and integration tests of every crate (the fuzz targets included, a few
# fixed cases each), the Python package's tests, then the stress test and the loom model
# checks.
test:
	$(CARGO) test --workspace
	$(MAKE) python
	$(MAKE) stress
	$(MAKE) loom

# The Python package (crates/irqlab-py): a virtual environment in $(PYENV) with maturin,
# pytest, pandas and Dask (crates/irqlab-py/requirements-dev.txt), the package built
# with maturin and installed there, then pytest. The tests compare irqlab.run with
# `irqlab run` and sweeps on threads, on a local Dask cluster and with a worker killed
# mid-task byte for byte with `irqlab sweep`'s CSV ($(IRQLAB_BIN), which `cargo test`
# builds). A failing or missing test fails the target (pytest's exit 5, no tests, too).
PYTHON3 ?= python3
PYENV ?= target/pyenv
IRQLAB_BIN ?= $(CURDIR)/target/debug/irqlab

python: $(PYENV)/.installed
	rm -f target/wheels/irqlab-*.whl
	VIRTUAL_ENV=$(CURDIR)/$(PYENV) $(PYENV)/bin/maturin build --quiet -m crates/irqlab-py/Cargo.toml --out target/wheels
	$(PYENV)/bin/python -m pip install --quiet --disable-pip-version-check --force-reinstall --no-deps target/wheels/irqlab-*.whl
	IRQLAB_BIN=$(IRQLAB_BIN) $(PYENV)/bin/python -m pytest -q crates/irqlab-py/tests

# python3 -m venv needs ensurepip, which Debian and Ubuntu ship apart (python3-venv):
# as root with apt-get it is installed here, otherwise the message says what to install.
$(PYENV)/.installed: crates/irqlab-py/requirements-dev.txt
	@$(PYTHON3) --version >/dev/null 2>&1 || { echo "make python: needs python3 (3.9 or newer) on PATH" >&2; exit 1; }
	@$(PYTHON3) -c 'import ensurepip, venv' 2>/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "make python: installing python3-venv (python3 -m venv needs it)"; \
	    apt-get update -qq && apt-get install -y -qq python3-venv >/dev/null; \
	  else \
	    echo "make python: python3 -m venv needs the venv module and ensurepip;" \
	         "on Debian or Ubuntu: sudo apt-get install python3-venv" >&2; exit 1; \
	  fi; }
	rm -rf $(PYENV)
	$(PYTHON3) -m venv $(PYENV)
	$(PYENV)/bin/python -m pip install --quiet --disable-pip-version-check -r crates/irqlab-py/requirements-dev.txt
	touch $@

# 10^8 posted messages from controller threads to CPU threads, in release (about 20 s);
# IRQLAB_SOAK_SECS=N turns it into a longer soak.
stress:
	$(CARGO) test -p irqlab-rt --release --test stress

# loom explores every interleaving of the posted-descriptor protocol, a vector moving
# between CPUs while posted, and the NVMe completion ring; it needs --cfg loom
# and its own target directory so it does not invalidate the normal build.
loom:
	RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom $(CARGO) test -p irqlab-core --release --test loom_posted --test nvme_loom_cq --test loom_migrate

# The fuzz targets (fio parser, platform loader, whole simulations; scenario loader and
# `irqlab run` through the command) with fresh seeds for about FUZZ_SECS seconds in all:
# each of the two test binaries runs its targets side by side for half of it.
# FUZZ_SEED=N replays a failure's seed.
FUZZ_SECS ?= 60
fuzz:
	$(CARGO) build --release -p irqlab --tests
	FUZZ_SECS=$$(( $(FUZZ_SECS) / 2 )) $(CARGO) test --release -p irqlab-fuzz --test fuzz -- --nocapture --test-threads 3
	FUZZ_SECS=$$(( $(FUZZ_SECS) / 2 )) $(CARGO) test --release -p irqlab --test fuzz_cli -- --nocapture --test-threads 2

fmt-check:
	$(CARGO) fmt --all --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

bench:
	$(CARGO) bench -p irqlab-core
	$(CARGO) bench -p irqlab-sim

# Instructions and events per simulated I/O from callgrind (needs valgrind): the same on
# every run, so a change can be judged on a noisy machine.
bench-instructions:
	$(CARGO) build --release -p irqlab
	scripts/instructions-per-io

# A static irqlab and a static fio (built from Debian's source) in target/tools, for a
# machine with no network and maybe no fio: carry target/tools there and run
# scripts/device-capture.sh OUT (see crates/irqlab-capture/README.md).
device-tools:
	scripts/device-tools.sh
