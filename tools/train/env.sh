# Sourced by the training scripts (run.sh, joint.sh): the repository root as the working directory,
# Debian's python3 (with python3-torch) as $PY, and tcmalloc preloaded where installed (torch's CPU ops
# allocate and free large buffers every step).
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
PY=/usr/bin/python3
TC=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
if [ -e "$TC" ]; then export LD_PRELOAD="$TC"; fi

# encode_shards VAE DATA PLAIN SWITCH PER_SHARD THREADS: run.sh's training data rendered from the seed
# and encoded with VAE into DATA (resumable per shard): PLAIN shards with 25 % prompt switches
# (shard_000...), SWITCH switch-heavy ones (75 %, half of them gradual; shard_100...). Two 1-thread
# encoders side by side: the rendering is single-threaded numpy (two did 2 shards in 129 s where
# one 2-thread encoder takes 82 s a shard).
encode_shards() {
  local vae=$1 data=$2 plain=$3 switch=$4 per=$5 threads=$6 half
  trap 'kill $(jobs -p) 2>/dev/null || true' EXIT  # a failed half takes its twin down with it
  enc() { $PY tools/train/encode_data.py --vae "$vae" --out "$data" --per-shard "$per" \
      --threads $(( threads > 1 ? threads / 2 : 1 )) "$@"; }
  enc --first 0 --shards $(( plain / 2 )) & half=$!
  enc --first $(( plain / 2 )) --shards $(( plain - plain / 2 )); wait "$half"
  local switches=(--switch-prob 0.75 --ramp-prob 0.5)
  enc --first 100 --shards $(( switch / 2 )) "${switches[@]}" & half=$!
  enc --first $(( 100 + switch / 2 )) --shards $(( switch - switch / 2 )) "${switches[@]}"; wait "$half"
}
