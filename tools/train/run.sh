#!/usr/bin/env bash
# kino-tiny from its seed: every phase of tools/train/recipe.toml, in order (tools/train/recipe.py).
#   bash tools/train/run.sh [--dry-run] [--scale N] [--build DIR] [--phases NAME,...] [--from-export] ...
#   mkdir -p build/train && nohup bash tools/train/run.sh >> build/train/run.log 2>&1 &   # in the background
# Each phase resumes from its checkpoint in the build directory (build/train, outside git) and is
# skipped once done, so the command can be stopped (SIGTERM: the running stage saves) and run again.
# `--dry-run` prints every phase's state and commands. A smoke run of the chain at tiny scale:
#   bash tools/train/run.sh --build build/smoke --scale 500 --plain-shards 2 --switch-shards 2 --no-eval \
#     --per-shard 32 --out build/smoke/export --docs build/smoke
# Needs Debian's python3-torch and python3-numpy; tcmalloc (libtcmalloc-minimal4) is preloaded where
# installed, since torch's CPU ops allocate and free large buffers every step.
set -euo pipefail
cd "$(dirname "$0")/../.."
TC=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
if [ -e "$TC" ]; then export LD_PRELOAD="$TC"; fi
exec /usr/bin/python3 tools/train/recipe.py "$@"
