#!/usr/bin/env bash
# What a device run of tools/gpu-check.sh needs beside the tree, in .gpu/ (ignored by git): the single
# executable of this commit, xz-compressed and split in parts small enough that the tree plus one part
# fits what one device call carries (64 MiB; the tree is ~32 MB). Carry the parts over successive calls
# to one warm machine (it keeps ignored files between calls), each running half of the check:
#   call 1, carrying .gpu/kino.xz.00:  KINO_GPU_CHECK_PART=python bash tools/gpu-check.sh
#   call 2, carrying .gpu/kino.xz.01:  KINO_GPU_CHECK_PART=bun bash tools/gpu-check.sh
# The second joins the parts (find_kino); the executable also stands in for bun there.
#
#   bash tools/gpu-payload.sh [PART_MB]     (default 28)
set -euo pipefail
cd "$(dirname "$0")/.."
part_mb="${1:-28}"
export PATH="$PWD/node_modules/.bin:$PATH"
bun build.ts --compile
mkdir -p .gpu
rm -f .gpu/kino.xz .gpu/kino.xz.[0-9]*
xz -9 -T0 -c dist/kino | split -b "${part_mb}M" -d - .gpu/kino.xz.
ls -l .gpu/kino.xz.*
echo "carry, one call each: $(cd .gpu && ls kino.xz.* | sed 's#^#.gpu/#' | tr '\n' ' ')"
