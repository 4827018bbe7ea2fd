# The two commands of the README: `make run` (the main job) and `make test` (every test).
CARGO ?= cargo

.PHONY: run test stress loom fmt-check clippy bench

ARGS ?= run examples/randread-libaio.fio --platform example --interrupts

run:
	$(CARGO) run --release -p irqlab -- $(ARGS)

# Unit, property and integration tests of every crate, then the loom model checks.
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

fmt-check:
	$(CARGO) fmt --all --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

bench:
	$(CARGO) bench -p irqlab-core
	$(CARGO) bench -p irqlab-sim
