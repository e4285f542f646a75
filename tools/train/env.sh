# Sourced by the training scripts (run.sh, joint.sh): the repository root as the working directory,
# Debian's python3 (with python3-torch) as $PY, and tcmalloc preloaded where installed (torch's CPU ops
# allocate and free large buffers every step).
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PY=/usr/bin/python3
TC=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
if [ -e "$TC" ]; then export LD_PRELOAD="$TC"; fi
