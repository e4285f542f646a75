#!/usr/bin/env bash
# kino-tiny: THE one command.  bash tools/train/run.sh
# Trains the VAE, renders+encodes the training clips, trains text encoder + causal DiT, evaluates
# and exports models/kino-tiny/. Every stage resumes from build/train/ (gitignored): re-running
# continues where a previous run stopped (checkpoints every 5 min, also on SIGTERM); state.sh keeps
# the checkpoints across sessions.
# Background:  mkdir -p build/train && nohup bash tools/train/run.sh >> build/train/run.log 2>&1 &
# Knobs (env): THREADS (1 per process)  VAE_STEPS (2000)  DEC_STEPS (4000 decoder fine-tuning steps)
#   SHARDS (32 x 1000 clips: 4 before the DiT starts, +2 per segment)  DIT_STEPS (19000)
#   SEGMENT (1000 DiT steps between evals)  DECAY (4000: the last DECAY DiT steps decay the lr)
#   LR (5e-4: the DiT's peak learning rate; a run continued past a finished decay may want less)
#   DEC_SWITCH_STEPS (2500 decoder steps with prompt switches after DEC_STEPS, their own lr schedule)
#   SWITCH_FROM (12000: from this DiT step on, 8 more shards with 75 % prompt-switch clips)
#   RAMP_FROM (27257: from this DiT step on, a quarter of each batch are gradual switches)
set -euo pipefail
source "$(dirname "$0")/env.sh"
THREADS=${THREADS:-1}
export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS
VAE_STEPS=${VAE_STEPS:-2000}
SHARDS=${SHARDS:-32}
DIT_STEPS=${DIT_STEPS:-19000}
DECAY=${DECAY:-4000}
LR=${LR:-5e-4}
SWITCH_FROM=${SWITCH_FROM:-12000}
RAMP_FROM=${RAMP_FROM:-27257}
SEGMENT=${SEGMENT:-1000}
DEC_STEPS=${DEC_STEPS:-4000}
DEC_SWITCH_STEPS=${DEC_SWITCH_STEPS:-2500}
mkdir -p build/train
bash tools/train/state.sh restore   # checkpoints from an earlier session
echo "== $(date -u +%FT%TZ) kino-tiny run: VAE_STEPS=$VAE_STEPS SHARDS=$SHARDS DIT_STEPS=$DIT_STEPS THREADS=$THREADS"
$PY tools/train/check_goldens.py > build/train/check_goldens.txt || { cat build/train/check_goldens.txt; exit 1; }
tail -1 build/train/check_goldens.txt
# VAE on 13/29-frame clips and 61/125-frame 32x32 crops: the causal decoder runs on unbounded streams
# (its effective temporal receptive field is ~25 latent frames; trained on 13 frames only, it broke
# down after the 4th latent frame)
$PY tools/train/train_vae.py --steps "$VAE_STEPS" --frames 13,29,61c,125c --threads "$THREADS"
$PY tools/train/train_vae.py --preview build/train/vae_recon.png
bash tools/train/state.sh save
$PY tools/train/encode_data.py --shards 4 --threads "$THREADS"
# The decoder goes on learning on the frozen encoder's latents (same latent space, so the DiT stays
# valid) in a second process while the DiT trains: 2000 joint steps leave the decoder the weak part.
# Then DEC_SWITCH_STEPS more with spliced prompt switches (the decoder learns to turn the old object
# into the new one at a splice).
dec_args=(--decoder-only --frames 13,29,61c,125c --threads "$THREADS")
{ $PY tools/train/train_vae.py "${dec_args[@]}" --lr 2e-4 --steps "$DEC_STEPS" &&
  $PY tools/train/train_vae.py "${dec_args[@]}" --lr 1e-4 --steps $(( DEC_STEPS + DEC_SWITCH_STEPS )) \
      --schedule-from "$DEC_STEPS" --switch-prob 0.5
} >> build/train/decoder.log 2>&1 &
dec_pid=$!
trap 'kids=$(pgrep -P $dec_pid || true); kill $dec_pid $kids 2>/dev/null || true' EXIT  # the decoder stages and their python
step_of() { $PY -c "import torch,os,sys;p=sys.argv[1];print(torch.load(p)['step'] if os.path.exists(p) else 0)" "$1"; }
cur=$(step_of build/train/dit/ckpt.pt)
# DiT in segments; after each: more encoded data, held-out eval, samples and the loss curve
while [ "$cur" -lt "$DIT_STEPS" ]; do
  nxt=$(( (cur / SEGMENT + 1) * SEGMENT )); [ "$nxt" -gt "$DIT_STEPS" ] && nxt=$DIT_STEPS
  want=$(( 4 + 2 * (cur / SEGMENT) )); [ "$want" -gt "$SHARDS" ] && want=$SHARDS
  $PY tools/train/encode_data.py --shards "$want" --threads "$THREADS"
  # red -> blue prompt switches still came out green at step 12000: more switches from then on,
  # half of them gradual (the server's transitions over N chunks)
  if [ "$cur" -ge "$SWITCH_FROM" ]; then
    $PY tools/train/encode_data.py --first 100 --shards 8 --switch-prob 0.75 --ramp-prob 0.5 --threads "$THREADS"
  fi
  ramp_share=0; [ "$cur" -ge "$RAMP_FROM" ] && ramp_share=0.25
  $PY tools/train/train_dit.py --steps "$nxt" --bs 16 --warmup 300 --lr "$LR" --threads "$THREADS" \
      --ramp-share "$ramp_share" \
      --decay-start $(( DIT_STEPS - DECAY )) --decay-end "$DIT_STEPS"
  cur=$(step_of build/train/dit/ckpt.pt)
  [ "$cur" -lt "$nxt" ] && { echo "DiT stopped at $cur"; exit 1; }
  bash tools/train/state.sh save
  $PY tools/train/train_vae.py --decoder-only --preview build/train/vae_recon.png || true
  $PY tools/train/sample.py --eval --transitions --switch-matrix --sheet build/train/samples_latest.png --json build/train/eval.jsonl \
      --threads "$THREADS"
  $PY tools/train/plots.py --out build/train/loss_latest.png
done
wait $dec_pid
bash tools/train/state.sh save
$PY tools/train/sample.py --eval --seen --seeds 2 --sheet docs/kino-tiny-samples.png --interp build/train/interp.png \
    --json build/train/eval_final.jsonl
$PY tools/train/plots.py --out docs/kino-tiny-loss.png
$PY tools/train/export.py
echo "== $(date -u +%FT%TZ) done"
