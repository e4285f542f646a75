#!/usr/bin/env bash
# What a device run of tools/gpu-check.sh needs beside the tree, in .gpu/ (ignored by git): this commit's
# single executable (dist/kino) and the build/ files the bun steps import from the tree (the wasm kernels
# and the H.264 encoders; build/ is ignored, so not carried), as one xz-compressed tar split in parts
# small enough that the tree plus one part fits what one device call carries (64 MiB; the tree is
# ~32 MB). Carry the parts over successive calls to one warm machine (it keeps ignored files between
# calls), each running half of the check:
#   call 1, carrying .gpu/kino.xz.00:  KINO_GPU_CHECK_PART=python bash tools/gpu-check.sh
#   call 2, carrying .gpu/kino.xz.01:  KINO_GPU_CHECK_PART=bun bash tools/gpu-check.sh
# The second joins the parts (gpu-check.sh's find_kino); the executable also stands in for bun there.
# Then rehearse both calls here: bash tools/gpu-rehearsal.sh.
#
#   bash tools/gpu-payload.sh [PART_SIZE] [--no-build]    (PART_SIZE as split -b takes it; default 28M)
# --no-build packs the dist/kino and build/ files already there (tests).
set -euo pipefail
cd "$(dirname "$0")/.."
part_size=28M build=1
for a in "$@"; do
  case "$a" in
    --no-build) build=0 ;;
    *) part_size="$a" ;;
  esac
done
export PATH="$PWD/node_modules/.bin:$PATH"
[ "$build" = 1 ] && bun build.ts --compile
files=(dist/kino)
for f in build/h264.wasm build/kino-cpu.wasm build/kino-cpu-st.wasm build/libkino_h264.so; do
  if [ -f "$f" ]; then files+=("$f"); elif [ "$f" != build/libkino_h264.so ]; then echo "no $f: run bun build.ts" >&2; exit 1; fi
done
[ -x dist/kino ] || { echo "no dist/kino: run bun build.ts --compile" >&2; exit 1; }
mkdir -p .gpu
rm -f .gpu/kino.xz .gpu/kino.xz.[0-9]*
tar -cf - "${files[@]}" | xz -9 -T0 -c | split -b "$part_size" -d - .gpu/kino.xz.
ls -l .gpu/kino.xz.*
tree=$({ git ls-files -co --exclude-standard -z 2>/dev/null || true; } | du -cb --files0-from=- | tail -1 | cut -f1)
tree=${tree:-0}
for p in .gpu/kino.xz.*; do
  total=$((tree + $(stat -c %s "$p")))
  if [ "$total" -gt $((64 * 1024 * 1024)) ]; then
    echo "tree ($tree bytes) + $p exceed one call's 64 MiB carry: use smaller parts" >&2
    exit 1
  fi
done
echo "packed: ${files[*]}"
echo "carry, one call each: $(cd .gpu && ls kino.xz.* | sed 's#^#.gpu/#' | tr '\n' ' ')"
