#!/usr/bin/env bash
# Keeps kino-tiny's training state across sessions. build/train/ lives in the work tree, which a new
# session lays anew, so:  `state.sh save` copies the checkpoints to $KINO_TRAIN_STATE (default
# ~/.cache/kino-train, kept when the machine is handed back as it was) and `state.sh restore` copies
# them back when build/train has none. When the cache is gone too (it goes with the machine), the
# checkpoints committed in tools/train/state/ (weights only; keep_state.py packs the DiT's) are the
# fallback, and without a committed DiT it is rebuilt from the exported model (import_model.py: its
# weights at its training step, the optimizer anew).
# run.sh restores before it starts.
set -euo pipefail
cd "$(dirname "$0")/../.."
STATE=${KINO_TRAIN_STATE:-$HOME/.cache/kino-train}
case "${1:-}" in
  save)
    mkdir -p "$STATE"
    for part in vae vae/decoder vae-joint vae-ramp vae-speck2 dit dit-p122 dit-sink; do
      [ -e "build/train/$part/ckpt.pt" ] && mkdir -p "$STATE/$part" && cp "build/train/$part/ckpt.pt" "$STATE/$part/ckpt.pt"
    done
    echo "saved training state to $STATE"
    ;;
  restore)
    for part in vae vae/decoder vae-joint vae-ramp vae-speck2 dit dit-p122 dit-sink; do
      [ -e "build/train/$part/ckpt.pt" ] && continue
      mkdir -p "build/train/$part"
      if [ -e "$STATE/$part/ckpt.pt" ]; then cp "$STATE/$part/ckpt.pt" "build/train/$part/ckpt.pt"; echo "restored $part from $STATE"
      elif [ -e "tools/train/state/${part//\//-}-ckpt.pt" ]; then
        cp "tools/train/state/${part//\//-}-ckpt.pt" "build/train/$part/ckpt.pt"; echo "restored $part from tools/train/state"
      elif [ "$part" = dit ] && [ -e models/kino-tiny/model_index.json ]; then
        ${PY:-/usr/bin/python3} tools/train/import_model.py --dit build/train/dit/ckpt.pt
      fi
    done
    ;;
  *) echo "usage: $0 save|restore" >&2; exit 2 ;;
esac
