#!/usr/bin/env bash
# A rehearsal of the two-call device run of tools/gpu-check.sh on a machine without a GPU, driven as the
# device would be, to find script faults before a lent GPU's minutes are spent on them:
#   - the tree copied as a device call carries it (tracked and untracked-not-ignored files) into
#     DIR/tree, afresh for each call, the ignored outputs of the first call kept for the second;
#   - call 1 carries .gpu/kino.xz.00 and runs KINO_GPU_CHECK_PART=python, call 2 carries .gpu/kino.xz.01
#     and runs KINO_GPU_CHECK_PART=bun, each with KINO_GPU_CHECK_BUDGET (default 330) and OUT an empty
#     folder (DIR/out1, DIR/out2), no node_modules and no bun on the PATH (the device has neither);
#   - then gpu-verdicts on both logs (NO EVIDENCE is what a GPU-less run should give).
# First: `bun build.ts && bash tools/gpu-payload.sh` (the parts must be of this commit). Checks too that
# the tree plus each part fits one call's carry (64 MiB) and that every check script compiles.
# Without a GPU the GPU steps FAIL or SKIP; what to read in DIR/out*/gpu-check.log: the executable
# unpacked (part 2), every step's command found and started (no "command not found", no missing file,
# no import or syntax error before the first CUDA call), the summary printed.
#
#   bash tools/gpu-rehearsal.sh [DIR]     (default ${TMPDIR:-/tmp}/kino-gpu-rehearsal; emptied first)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
dir="${1:-${TMPDIR:-/tmp}/kino-gpu-rehearsal}"
budget="${KINO_GPU_CHECK_BUDGET:-330}"
parts=(.gpu/kino.xz.00 .gpu/kino.xz.01)
for f in "${parts[@]}"; do [ -f "$f" ] || { echo "no $f: run bash tools/gpu-payload.sh first" >&2; exit 2; }; done
[ -f .gpu/kino.xz.02 ] && { echo ".gpu/kino.xz.02 exists: the device run carries two parts only" >&2; exit 2; }

tree_bytes=$(git ls-files -co --exclude-standard -z | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
limit=$((64 * 1024 * 1024))
for f in "${parts[@]}"; do
  total=$((tree_bytes + $(stat -c %s "$f")))
  echo "carry: tree $((tree_bytes / 1048576)) MiB + $f $(($(stat -c %s "$f") / 1048576)) MiB = $((total / 1048576)) MiB of 64"
  [ "$total" -le "$limit" ] || { echo "FAIL: over one call's 64 MiB carry (smaller parts: bash tools/gpu-payload.sh 24)" >&2; exit 1; }
done
for f in tools/*.py; do python3 -m py_compile "$f" || { echo "FAIL: $f does not compile" >&2; exit 1; }; done
rm -rf tools/__pycache__

rm -rf "$dir"
mkdir -p "$dir/tree"
# The device's PATH: without node_modules/.bin or any other directory holding a bun.
device_path=$(tr ':' '\n' <<<"$PATH" | while read -r d; do [ -n "$d" ] && [ ! -x "$d/bun" ] && [[ "$d" != *node_modules* ]] && echo "$d"; done | paste -sd:)

for i in 0 1; do
  part=$([ $i = 0 ] && echo python || echo bun)
  # the tree as the device call copies it (over what the last call left), then the carried part
  git ls-files -co --exclude-standard -z | tar --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -xf - -C "$dir/tree"
  mkdir -p "$dir/tree/.gpu" && cp "${parts[$i]}" "$dir/tree/.gpu/"
  out="$dir/out$((i + 1))"
  mkdir -p "$out"
  echo
  echo "=== call $((i + 1)): carrying ${parts[$i]}, KINO_GPU_CHECK_PART=$part KINO_GPU_CHECK_BUDGET=$budget (log: $out/gpu-check.log)"
  started=$SECONDS
  (cd "$dir/tree" && env -u KINO_BUN -u KINO_CUDA_LIB PATH="$device_path" OUT="$out" KINO_GPU_CHECK_PART="$part" \
    KINO_GPU_CHECK_BUDGET="$budget" timeout 600 bash tools/gpu-check.sh) || echo "(gpu-check.sh exited $?)"
  echo "=== call $((i + 1)) took $((SECONDS - started)) s"
  [ -s "$out/gpu-check.log" ] || { echo "FAIL: no $out/gpu-check.log" >&2; exit 1; }
  grep -q '^== summary' "$out/gpu-check.log" || { echo "FAIL: no summary in $out/gpu-check.log" >&2; exit 1; }
  # part 00 alone must not unpack; both parts must give the executable and the build/ files it names
  if [ $i = 0 ] && [ -e "$dir/tree/dist/kino" ]; then echo "FAIL: call 1 unpacked dist/kino from part 00 alone" >&2; exit 1; fi
  if [ $i = 1 ]; then
    cmp -s "$dir/tree/dist/kino" dist/kino || { echo "FAIL: call 2 did not unpack this checkout's dist/kino" >&2; exit 1; }
    for f in $(cat "$dir/tree/dist/kino.files"); do cmp -s "$dir/tree/$f" "$f" || { echo "FAIL: $f not unpacked" >&2; exit 1; }; done
  fi
done

# What would fail on the device too: a command, module, file or import that is not there, a syntax error.
faults=$(grep -nE "command not found|Cannot find module|Traceback|Error:|No such file|syntax error|unbound variable" \
  "$dir/out1/gpu-check.log" "$dir/out2/gpu-check.log" | grep -v "nvidia-smi: command not found" || true)
if [ -n "$faults" ]; then echo "FAIL: script faults in the logs:"; echo "$faults"; exit 1; fi

echo
echo "=== gpu-verdicts on both logs"
"$repo/node_modules/.bin/bun" "$repo/tools/gpu-verdicts.ts" "$dir/out1/gpu-check.log" "$dir/out2/gpu-check.log" --root "$dir/tree"
echo
echo "rehearsal done: read $dir/out1/gpu-check.log and $dir/out2/gpu-check.log line by line"
