# The two commands of the README: `make run` (the main job) and `make test` (every test).
CARGO ?= cargo

.PHONY: run test stress loom fuzz fmt-check clippy bench

ARGS ?= run examples/randread-libaio.fio --platform example --interrupts

run:
	$(CARGO) run --release -p irqlab -- $(ARGS)

# Unit, property and integration tests of every crate (the fuzz targets included, a few
# fixed cases each), then the loom model checks.
test:
	$(CARGO) test --workspace
	$(MAKE) stress
	$(MAKE) loom

# 10^8 posted messages from controller threads to CPU threads, in release (about 20 s);
# IRQLAB_SOAK_SECS=N turns it into a longer soak.
stress:
	$(CARGO) test -p irqlab-rt --release --test stress

# loom explores every interleaving of the posted-descriptor protocol; it needs --cfg loom
# and its own target directory so it does not invalidate the normal build.
loom:
	RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom $(CARGO) test -p irqlab-core --release --test loom_posted --test nvme_loom_cq

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
