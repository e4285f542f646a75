#!/usr/bin/env bash
# kino-tiny's line for stars: the DiT continued on the latents of the joint VAE stage.
#   mkdir -p build/train && nohup bash tools/train/joint.sh >> build/train/joint.log 2>&1 &
# The decoder stage (stop 21's run.sh) blurs a star's points away: its reconstructions of the held-out stars
# keep 10 of 26, and a DiT trained on its latents draws none. Fine-tuning encoder and decoder
# together, with the latents anchored to the old encoder's (--anchor: the DiT's latent space moves
# ~0.07 std), keeps 16 of 26 (docs/MODEL-LOG.md, "A VAE stage for stars"). Every stage resumes:
#   1. the joint VAE stage (2000 steps from decoder step 6500; ~95 min on 2 threads)
#   2. PLAIN_SHARDS of run.sh's plain data shards and its 8 switch shards, encoded with it into
#      build/train/data-joint (16 + 8: 31-45 min on 2 threads)
#   3. the DiT from its kept checkpoint on those latents with the circle-twin recipe, to DIT_STEPS,
#      the lr decayed over DECAY_START..DIT_STEPS; then the held-out evaluation through the sampler
# Knobs (env): THREADS (2)  DIT_STEPS (67000)  DECAY_START (66000)  TWIN_CLIP (0.15)
#   TWIN_CTX (0), TWIN_STAR (0): train_dit.py's --twin-ctx-share/--twin-star-share (stop 22)
#   OWN_PAST (0.25), OWN_INPUT (0.5), OUTLINE (4): train_dit.py's --own-past-share/--own-input-share/
#   --outline-weight (stops 23-24; the export's recipe)
#   IMAGE_OUTLINE (0), IMAGE_STAR (0): train_dit.py's --image-outline-weight/--image-star-share (stop 25:
#   the first-frame objective, where a stream's stars are lost first)
#   STREAM_STAR (0): train_dit.py's --stream-star-share (stop 26: stars in the streamed clips too)
#   RAMP_CONT (0): train_dit.py's --ramp-cont-share (stop 30: a transition's chunks noised on the path a
#   continuing chunk's sampling takes from its predecessor)
#   RAMP_COLOR (0): train_dit.py's --ramp-color-share (stop 31: more of the ramps change the object's color)
#   CONT (0): train_dit.py's --cont-share (stop 30: plain clips noised on that path too)
#   CONT_SWITCH (0): train_dit.py's --cont-switch-share (stop 34: hard prompt switches among those)
#   PLAIN_SHARDS (16): how many of run.sh's plain shards to encode (fewer: the DiT starts sooner)
#   PATCH (1,4,4): the DiT's patch; another one (1,2,2: 64 tokens per latent frame, stop 27) trains
#   its own line in build/train/dit-p122, started by repatch.py from build/train/dit when it has no
#   checkpoint and no committed state (tools/train/state/dit-p122-ckpt.pt)
#   BS (16), IMAGE_BS (32): clips and extra first frames per step (1,2,2: 8 and 16, 2.1–2.4 s per step)
#   VAE_DIR (build/train/vae-joint), DATA (build/train/data-joint): the VAE whose latents the DiT trains on
#   and where they are encoded (stop 32: build/train/vae-ramp, the joint VAE taught cross-fades, and its
#   own data dir); the joint VAE stage runs regardless (done: it returns at once)
#   SINK (0): the DiT's attention sink in chunks (KINO_DIT_SINK, stop 28: frame 0 stays in view); 1 trains
#   its own line in <the patch's dir>-sink, begun as a copy of that dir's checkpoint
# (the committed DiT is step 66700: stop 25's first-frame run, IMAGE_OUTLINE=4 IMAGE_STAR=0.25,
#  DIT_STEPS=66700 DECAY_START=66000, from the export's step 64000; DIT_STEPS/DECAY_START must lie
#  past it. 64000 came from 56500 as stop 23: PLAIN_SHARDS=16 DIT_STEPS=59500 DECAY_START=58800 OWN_PAST=0.25 OWN_INPUT=0.5
#  OUTLINE=0, then OUTLINE=4 with DIT_STEPS=61000 DECAY_START=60400, then DIT_STEPS=64000
#  DECAY_START=63000; stop 22's PLAIN_SHARDS=24 DIT_STEPS=60200 DECAY_START=59400 TWIN_CLIP=0.25
#  TWIN_CTX=0.5 TWIN_STAR=0.5 from 56500 was not kept)
# The sink line (stop 28): SINK=1 from 66700, then TWIN_CLIP=0.25 TWIN_CTX=1
#  TWIN_STAR=0.5 DIT_STEPS=71000 DECAY_START=70200 IMAGE_OUTLINE=4 IMAGE_STAR=0.25, then DIT_STEPS=71750
#  DECAY_START=71000 (the export of stops 28-29).
# The export's DiT of stops 30-33 was step 80750: from 71750 TWIN_CLIP=0.375 TWIN_CTX=1
#  TWIN_STAR=0.67 DIT_STEPS=75000 DECAY_START=74000, then TWIN_CLIP=0.25 TWIN_STAR=0.5 DIT_STEPS=75750
#  DECAY_START=75000 (stop 29), then RAMP_CONT=1 DIT_STEPS=78000 DECAY_START=77250, then RAMP_CONT=1 CONT=1
#  DIT_STEPS=80750 DECAY_START=80000 (the rest as above).
# The export's DiT and the committed sink state of stops 34-36 were step 87400, on the cross-fade VAE's
#  latents: from 80750 VAE_DIR=build/train/vae-ramp DATA=build/train/data-ramp PLAIN_SHARDS=8 RAMP_CONT=1
#  CONT=1 DIT_STEPS=83000 DECAY_START=82300 (stop 33), then RAMP_COLOR=0.75 DIT_STEPS=86000
#  DECAY_START=85300, then also CONT_SWITCH=0.5 DIT_STEPS=87400 DECAY_START=86900 (the rest as above).
# The export's DiT since stop 37 is step 89400: from 87400 CONT_SWITCH=0.75 DIT_STEPS=89400 DECAY_START=88700
#  (the rest as for 87400); continue it with those two dirs. (Edit this file only while no run of it is going: bash reads a
#  script as it runs, and a shifted tail ran garbled after the 87400 run.)
# Export (when it beats models/kino-tiny): [KINO_DIT_SINK=1] export.py --vae build/train/vae-ramp/ckpt.pt
#  (the export decodes with the cross-fade VAE since stop 33, whichever latents its DiT trained on).
set -euo pipefail
source "$(dirname "$0")/env.sh"
THREADS=${THREADS:-2}
DIT_STEPS=${DIT_STEPS:-67000}
DECAY_START=${DECAY_START:-66000}
TWIN_CLIP=${TWIN_CLIP:-0.15}
TWIN_CTX=${TWIN_CTX:-0}
TWIN_STAR=${TWIN_STAR:-0}
OWN_PAST=${OWN_PAST:-0.25}
OWN_INPUT=${OWN_INPUT:-0.5}
OUTLINE=${OUTLINE:-4}
IMAGE_OUTLINE=${IMAGE_OUTLINE:-0}
IMAGE_STAR=${IMAGE_STAR:-0}
STREAM_STAR=${STREAM_STAR:-0}
RAMP_CONT=${RAMP_CONT:-0}
CONT=${CONT:-0}
CONT_SWITCH=${CONT_SWITCH:-0}
RAMP_COLOR=${RAMP_COLOR:-0}
PLAIN_SHARDS=${PLAIN_SHARDS:-16}
BS=${BS:-16}
IMAGE_BS=${IMAGE_BS:-32}
PATCH=${PATCH:-1,4,4}
SINK=${SINK:-0}
VAE=${VAE_DIR:-build/train/vae-joint}/ckpt.pt
DATA=${DATA:-build/train/data-joint}
DIT=build/train/dit
mkdir -p build/train
bash tools/train/state.sh restore
if [ "$PATCH" != 1,4,4 ]; then
  export KINO_DIT_PATCH=$PATCH
  DIT=build/train/dit-p${PATCH//,/}
  [ -e "$DIT/ckpt.pt" ] || { mkdir -p "$DIT"; $PY tools/train/repatch.py build/train/dit/ckpt.pt "$DIT/ckpt.pt"; }
fi
if [ "$SINK" != 0 ]; then
  export KINO_DIT_SINK=$SINK
  [ -e "$DIT-sink/ckpt.pt" ] || { mkdir -p "$DIT-sink"; cp "$DIT/ckpt.pt" "$DIT-sink/ckpt.pt"; }
  DIT=$DIT-sink
fi
echo "== $(date -u +%FT%TZ) joint line: DIT_STEPS=$DIT_STEPS DECAY_START=$DECAY_START THREADS=$THREADS"
$PY tools/train/train_vae.py --init build/train/vae/decoder/ckpt.pt --anchor 0.1 --hole-weight 8 --switch-prob 0.5 \
    --lr 1e-4 --steps 8500 --schedule-from 6500 --frames 13,29,61c,125c --out build/train/vae-joint --threads "$THREADS"
bash tools/train/state.sh save
encode_shards "$VAE" "$DATA" "$PLAIN_SHARDS" 8 1000 "$THREADS"
$PY tools/train/train_dit.py --data "$DATA" --vae "$VAE" --out "$DIT" --steps "$DIT_STEPS" --bs "$BS" \
    --image-bs "$IMAGE_BS" --lr 1e-4 --warmup 300 \
    --threads "$THREADS" --ramp-share 0.25 --twin-share 0.5 --twin-clip-share "$TWIN_CLIP" \
    --twin-ctx-share "$TWIN_CTX" --twin-star-share "$TWIN_STAR" \
    --own-past-share "$OWN_PAST" --own-input-share "$OWN_INPUT" --outline-weight "$OUTLINE" \
    --image-outline-weight "$IMAGE_OUTLINE" --image-star-share "$IMAGE_STAR" --stream-star-share "$STREAM_STAR" \
    --ramp-cont-share "$RAMP_CONT" --cont-share "$CONT" --cont-switch-share "$CONT_SWITCH" --ramp-color-share "$RAMP_COLOR" \
    --decay-start "$DECAY_START" --decay-end "$DIT_STEPS"
bash tools/train/state.sh save
$PY tools/train/keep_state.py --ckpt "$DIT/ckpt.pt" --out "tools/train/state/$(basename "$DIT")-ckpt.pt"
$PY tools/train/sample.py --eval --ckpt "$DIT/ckpt.pt" --vae "$VAE" --threads "$THREADS" --json build/train/eval-joint.jsonl
echo "== $(date -u +%FT%TZ) joint line done"
