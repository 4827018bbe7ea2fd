#!/bin/sh
# Prepares target/tools/ (ignored by git) for a machine with no network and maybe no fio,
# where scripts/device-capture.sh then runs:
#   target/tools/irqlab   irqlab, linked statically (glibc's crt-static): runs on any
#                         x86-64 Linux whatever its C library
#   target/tools/fio      fio 3.33 built from Debian's source, linked statically, with the
#                         engines the capture runs (psync, pvsync2, libaio, io_uring)
# Needs cargo, gcc, make, libc6-dev and libaio-dev; fio's source comes from Debian's
# archive through apt-get source (no root needed), or from FIO_SRC=DIR (an unpacked fio
# source tree). FIO=PATH copies that fio instead of building one (it must be static, or
# the machine must have its libraries). `make device-tools` runs this.
set -eu
root=$(cd "$(dirname "$0")/.." && pwd)
tools=$root/target/tools
build=$root/target/tools-build
mkdir -p "$tools" "$build"

echo "device-tools: irqlab, statically linked"
RUSTFLAGS="-C target-feature=+crt-static" cargo build --release -p irqlab \
  --target x86_64-unknown-linux-gnu --target-dir "$root/target/static"
cp "$root/target/static/x86_64-unknown-linux-gnu/release/irqlab" "$tools/irqlab"
strip "$tools/irqlab" 2>/dev/null || true

if [ -n "${FIO:-}" ]; then
  cp "$FIO" "$tools/fio"
elif [ ! -x "$tools/fio" ]; then
  src=${FIO_SRC:-}
  if [ -z "$src" ]; then
    echo "device-tools: fio's source from Debian (apt-get source, into $build)"
    apt=$build/apt
    mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
    echo "deb-src http://deb.debian.org/debian bookworm main" > "$apt/sources.list"
    set -- -o Dir::Etc::SourceList="$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null \
           -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache" -o Debug::NoLocking=1
    apt-get "$@" -qq update
    (cd "$build" && apt-get "$@" -qq source --download-only fio)
    tar -C "$build" -xzf "$build"/fio_*.orig.tar.gz
    src=$(ls -d "$build"/fio-*/ | head -n 1)
  fi
  [ -f /usr/lib/x86_64-linux-gnu/libaio.a ] || [ -f /usr/lib64/libaio.a ] || {
    echo "device-tools: a static fio needs libaio.a: apt-get install libaio-dev" >&2; exit 1; }
  echo "device-tools: building fio in $src (static, no -march=native)"
  (cd "$src" && ./configure --build-static --disable-native --disable-numa --disable-rdma \
      --disable-rados --disable-rbd --disable-http --disable-gfapi --disable-libnfs \
      --disable-pmem --disable-xnvme --disable-libzbc --disable-tcmalloc --disable-dfs \
      --disable-lex >/dev/null && make -s -j"$(nproc)" fio)
  cp "$src/fio" "$tools/fio"
  strip "$tools/fio" 2>/dev/null || true
fi
"$tools/fio" --version
"$tools/irqlab" --version
du -sh "$tools"
echo "device-tools: ready; carry target/tools and run scripts/device-capture.sh"
