#!/usr/bin/env bash
# kino-tiny from its seed: THE one command.   bash tools/train/run.sh
# Background:  mkdir -p build/train && nohup bash tools/train/run.sh >> build/train/run.log 2>&1 &
#
# Runs the stages that made models/kino-tiny, in order, with today's code (docs/MODEL.md, "Training
# recipe"); every stage resumes from its checkpoint under build/train/ and is skipped once done, so
# the command can be killed (SIGTERM saves) and run again at any time. The export's own history was
# a chain of sessions with the code changing under it (x0-prediction from DiT step 2437, the
# first-frame objective from 4202, upright shapes from 20028, ...): this is that chain as the code
# runs it now, the DiT on the joint VAE's latents from its first step. About a day and a half on 2 cores.
#   1. goldens check (the PyTorch modules against the reference Wan2.1 outputs)
#   2. VAE: encoder + decoder (2000 steps); the decoder alone to 4000, then to 6500 with spliced
#      prompt switches; the joint stage to 8500 (stars' points kept; latents anchored to the old encoder's)
#   3. data: PLAIN_SHARDS shards (25 % prompt switches) + SWITCH_SHARDS switch-heavy ones (75 %, half
#      of them gradual), rendered from the seed and encoded with the joint stage
#   4. DiT + text encoder, in the phases below (one train_dit.py run each; held-out eval after each)
#   5. the VAE taught cross-fades (from the joint stage to 10700), the export's VAE; the data encoded
#      again with it, and the DiT's last phases on those latents
#   6. contact sheet and loss curve into $DOCS, export to $OUT
# To continue the committed training state instead, `bash tools/train/state.sh restore` first (the
# DiT then resumes at its step; tools/train/joint.sh is the line past the export).
# Knobs (env): THREADS (2)  OUT (models/kino-tiny)  DOCS (docs)  PLAIN_SHARDS (32)  SWITCH_SHARDS (8)
#   PER_SHARD (1000 clips)  KINO_TRAIN_BUILD (build/train)  SCALE (1: every step count is divided by
#   it). A smoke run of the whole chain in a few minutes:
#   KINO_TRAIN_BUILD=build/smoke SCALE=500 PLAIN_SHARDS=2 SWITCH_SHARDS=2 PER_SHARD=32 \
#     OUT=build/smoke/export DOCS=build/smoke bash tools/train/run.sh
set -euo pipefail
source "$(dirname "$0")/env.sh"
THREADS=${THREADS:-2}
OUT=${OUT:-models/kino-tiny}
DOCS=${DOCS:-docs}
PLAIN_SHARDS=${PLAIN_SHARDS:-32}
SWITCH_SHARDS=${SWITCH_SHARDS:-8}
PER_SHARD=${PER_SHARD:-1000}
SCALE=${SCALE:-1}
export KINO_TRAIN_BUILD=${KINO_TRAIN_BUILD:-build/train}
B=$KINO_TRAIN_BUILD
n() { local v=$(( $1 / SCALE )); echo $(( v > 0 ? v : 1 )); }  # a step count, scaled (at least 1)
mkdir -p "$B"
echo "== $(date -u +%FT%TZ) kino-tiny run: THREADS=$THREADS SCALE=$SCALE shards $PLAIN_SHARDS+$SWITCH_SHARDS x $PER_SHARD -> $B, $OUT"
$PY tools/train/check_goldens.py > "$B/check_goldens.txt" || { cat "$B/check_goldens.txt"; exit 1; }
tail -1 "$B/check_goldens.txt"

# ---- 2. VAE. The long clips (61/125 frames as 32x32 crops) matter: the causal decoder runs on
# unbounded streams, and trained on 13-frame clips only it drifted after the 4th latent frame.
frames=(--frames 13,29,61c,125c --threads "$THREADS")
$PY tools/train/train_vae.py --steps "$(n 2000)" "${frames[@]}"
$PY tools/train/train_vae.py --decoder-only --lr 2e-4 --steps "$(n 4000)" "${frames[@]}"
# spliced prompt switches: a causal decoder otherwise paints the first chunk after red -> blue green-cyan
$PY tools/train/train_vae.py --decoder-only --lr 1e-4 --steps "$(n 6500)" --schedule-from "$(n 4000)" \
    --switch-prob 0.5 "${frames[@]}"
$PY tools/train/train_vae.py --init "$B/vae/decoder/ckpt.pt" --anchor 0.1 --hole-weight 8 --switch-prob 0.5 \
    --lr 1e-4 --steps "$(n 8500)" --schedule-from "$(n 6500)" --out "$B/vae-joint" "${frames[@]}"
VAE=$B/vae-joint/ckpt.pt

# ---- 3. data (skipped when the DiT is done, e.g. restored from tools/train/state)
DATA=$B/data-joint
step_of() { $PY -c "import torch,os,sys;p=sys.argv[1];print(torch.load(p)['step'] if os.path.exists(p) else 0)" "$1"; }
JOINT_FINAL=80750  # the last step on the joint stage's latents
SINK_FROM=66700  # the phases past this step train (and the export samples) with the attention sink
[ "$(step_of "$B/dit/ckpt.pt")" -lt "$(n $JOINT_FINAL)" ] && encode_shards "$VAE" "$DATA" "$PLAIN_SHARDS" "$SWITCH_SHARDS" "$PER_SHARD" "$THREADS"

# ---- 4. DiT phases: last step, peak lr, lr decay start, then train_dit.py's objectives
#   A  the base recipe: first-frame objective, context noise, prompt switches (4x weight)
#   B  a quarter of each batch gradual switches (the server's transitions)
#   C  circle twins: scenes drawn with circles as the noised input, true shapes as the target
#   D  fewer twin clips (they cost color)
#   E  own pasts: a quarter of the clips continue the DiT's own continuations (the stream's exposure)
#   F  and the cells an object's outline crosses weigh 5x (two runs, each with its lr decay)
#   G  the first-frame objective's outlines weigh 5x too, a quarter of its frames stars
#   H  the attention sink (frame 0 stays in view), twins with a circle past and a true sink (two runs)
#   J  more star twins, then back to the shares of H
#   L  a transition's chunks noised on the path a continuing chunk samples from its predecessor
#   M  and 4 plain clips of each batch so too
#   N, P, Q (step 5, on the latents of the VAE taught cross-fades): M's objectives, then three of each
#      batch's four ramps changing the object's color, then hard switches on the continuation path (the export)
# (E and F ran on 16 + 8 shards; the export's E started from D's weights read back from the export,
#  its H from step 66700 with 1020 steps of the sink alone first: docs/MODEL-LOG.md, stops 23-30)
own="--own-past-share 0.25 --own-input-share 0.5"
img="--image-outline-weight 4 --image-star-share 0.25"
base="--ramp-share 0.25 --twin-share 0.5 $own --outline-weight 4 $img"
sink="$base --twin-clip-share 0.25 --twin-ctx-share 1 --twin-star-share 0.5"
phases=(
  "19000 5e-4 15000"
  "32000 2e-4 28500 --ramp-share 0.25"
  "41400 1e-4 38800 --ramp-share 0.25 --twin-share 0.5 --twin-clip-share 0.25"
  "56500 1e-4 54500 --ramp-share 0.25 --twin-share 0.5 --twin-clip-share 0.15"
  "59500 1e-4 58800 --ramp-share 0.25 --twin-share 0.5 --twin-clip-share 0.15 $own"
  "61000 1e-4 60400 --ramp-share 0.25 --twin-share 0.5 --twin-clip-share 0.15 $own --outline-weight 4"
  "64000 1e-4 63000 --ramp-share 0.25 --twin-share 0.5 --twin-clip-share 0.15 $own --outline-weight 4"
  "66700 1e-4 66000 $base --twin-clip-share 0.15"
  "71000 1e-4 70200 $sink"
  "71750 1e-4 71000 $sink"
  "75000 1e-4 74000 $base --twin-clip-share 0.375 --twin-ctx-share 1 --twin-star-share 0.67"
  "75750 1e-4 75000 $sink"
  "78000 1e-4 77250 $sink --ramp-cont-share 1"
  "$JOINT_FINAL 1e-4 80000 $sink --ramp-cont-share 1 --cont-share 1"
)
# run_phases DATA VAE PHASE...: each phase "last lr decay objectives" unless the DiT is past it
run_phases() {
  local data=$1 vae=$2 phase last lr decay objectives
  shift 2
  for phase in "$@"; do
    read -r last lr decay objectives <<< "$phase"
    [ "$last" -gt "$SINK_FROM" ] && export KINO_DIT_SINK=1
    [ "$(step_of "$B/dit/ckpt.pt")" -ge "$(n "$last")" ] && continue
    # shellcheck disable=SC2086  # the objectives are separate flags
    $PY tools/train/train_dit.py --data "$data" --vae "$vae" --steps "$(n "$last")" --bs 16 --lr "$lr" \
        --warmup "$(n 300)" --decay-start "$(n "$decay")" --decay-end "$(n "$last")" --threads "$THREADS" $objectives
    [ "$(step_of "$B/dit/ckpt.pt")" -lt "$(n "$last")" ] && { echo "DiT stopped before $(n "$last")"; exit 1; }
    $PY tools/train/sample.py --eval --transitions --vae "$vae" --json "$B/eval.jsonl" --threads "$THREADS"
  done
}
run_phases "$DATA" "$VAE" "${phases[@]}"

# ---- 5. the VAE taught cross-fades (stop 32): the joint stage on switches that are mostly gradual, the
# cross-faded frames weighted and free of the anchor. The DiT trained on the joint stage's latents, but
# decoded with this VAE a transition's in-between chunks come out in the in-between colors (stop 33).
$PY tools/train/train_vae.py --init "$VAE" --anchor 0.1 --fade-free --hole-weight 8 --switch-prob 0.75 \
    --ramp-prob 0.75 --fade-weight 4 --lr 1e-4 --steps "$(n 10700)" --schedule-from "$(n 8500)" \
    --out "$B/vae-ramp" "${frames[@]}"
DECODER=$B/vae-ramp/ckpt.pt
# The DiT's last phases on this VAE's latents (stops 33-34 and 37: the export's 3-chunk transition went
# from 25 to 32 of 32 sessions, the hard switch from 26 to 32). The export's ran on 8 plain + 8 switch
# shards: a quarter of the plain ones (at least 2) are encoded again.
FINAL=89400
[ "$(step_of "$B/dit/ckpt.pt")" -lt "$(n $FINAL)" ] && encode_shards "$DECODER" "$B/data-ramp" \
    $(( PLAIN_SHARDS / 4 > 2 ? PLAIN_SHARDS / 4 : 2 )) "$SWITCH_SHARDS" "$PER_SHARD" "$THREADS"
run_phases "$B/data-ramp" "$DECODER" \
  "83000 1e-4 82300 $sink --ramp-cont-share 1 --cont-share 1" \
  "86000 1e-4 85300 $sink --ramp-cont-share 1 --cont-share 1 --ramp-color-share 0.75" \
  "87400 1e-4 86900 $sink --ramp-cont-share 1 --cont-share 1 --ramp-color-share 0.75 --cont-switch-share 0.5" \
  "$FINAL 1e-4 88700 $sink --ramp-cont-share 1 --cont-share 1 --ramp-color-share 0.75 --cont-switch-share 0.75"

# ---- 6. samples, loss curve, export
$PY tools/train/sample.py --eval --seeds 2 --vae "$DECODER" --sheet "$DOCS/kino-tiny-samples.png" \
    --json "$B/eval_final.jsonl" --threads "$THREADS"
$PY tools/train/plots.py --out "$DOCS/kino-tiny-loss.png"
$PY tools/train/export.py --vae "$DECODER" --out "$OUT"
echo "== $(date -u +%FT%TZ) done"
