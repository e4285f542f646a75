#!/usr/bin/env bash
# The one prepared check for a GPU machine (`npm run gpu:check`), sized to finish on an H200 within
# 9 minutes whatever hangs or runs slow, so one timed command gives a complete report. It runs under one
# wall-clock budget (KINO_GPU_CHECK_BUDGET, default 540 s) with a cap per step (tools/gpu-check-steps.sh):
# a step past its cap is cut and reported TIMEOUT with what it had printed so far, a step the budget
# can no longer fit is SKIPPED, and the summary at the end lists every step with PASS / FAIL /
# TIMEOUT / SKIPPED and its seconds. The steps run in the order of what a run is for — first what no
# device has verified yet, the long op sweep last:
#    1. device: nvidia-smi's name, driver, memory and clock;
#    2. build: build/libkino_cuda.so (tools/build/cuda.ts through bun when bun is there, else the same
#       nvcc flags directly), and the HGMMA / TMA / HMMA instruction counts of its sm_90a code;
#    3. the unverified Hopper kernels (tools/gpu-check-kernels.py wgmma, then persistent, pingpong and
#       persistent-tma, each in a process of its own): the persistent GEMM (gemm path 4), the ping-pong GEMM
#       (path 5) and the persistent GEMM with the TMA-store epilogue (path 6), each at awkward and Wan
#       shapes with every epilogue against PyTorch, then its TFLOP/s at the Wan shapes beside the
#       one-block-per-tile wgmma GEMM and cuBLAS (the TMA-store one beside the register one too);
#       the attention kernel (attention path 2) at awkward shapes against PyTorch and its precision
#       promise, f32 and bf16 inputs, then its TFLOP/s beside SDPA, with 128- and (D 128,
#       KINO_CUDA_ATTENTION_BKV=176) 176-key tiles, and with 128 by stream-K and with whole items
#       (KINO_CUDA_ATTENTION_SPLIT=0); none is chosen by auto yet, and a watchdog in each
#       prints what was measured if it hangs;
#    4. causal DiT as CUDA graphs and with bf16 activations (tools/bench/dit-graph.ts): Wan2.1-1.3B at
#       real size, 832x480, 3-frame chunks, 4 steps + context pass, window 21 — launches bit for bit
#       against eager (the RoPE frame offset read from a device tensor), recordings per stream (the
#       denoising and the context graph each recorded 7 times while the window fills, then only
#       launched: chunks 7-9), bf16 against f32 activations, seconds per chunk four ways (and the host's
#       share), no cudaMalloc in the steady state;
#    5. end to end through the server (tools/bench/e2e-realtime.ts): a random Wan2.1-T2V-1.3B checkpoint
#       of the real geometry written here (3.9 GB; its umT5 of full width but 2 layers), `kino serve`
#       on it on CUDA, realtime sessions at 832x480 in 3-latent-frame chunks (4 steps + context pass,
#       window 21): first-chunk latency (the server's first session, every kernel's first use, apart)
#       and steady video fps after the 7 chunks that fill the window, against the targets (≥ 30 fps,
#       first chunk ≤ 0.5 s);
#    6. bidirectional DiT clip as one CUDA graph (tools/bench/dit-clip-graph.ts): Wan2.1-1.3B t2v at
#       832x480, 81 frames, 3 guided UniPC steps, eager and graphed — bit for bit, s/step both ways;
#    7. the readback of chunk i overlapped with the DiT of chunk i + 1, and apart from it chunk i's encode
#       on the worker's encoder thread (tools/bench/readback-overlap.ts): the same bytes as the
#       synchronous readback with the encode inline, first chunk and steady interval each way;
#    8. conv3d (tools/gpu-check-conv.py): the mma.sync (also with each block tile forced:
#       KINO_CUDA_CONV_MMA_TILE) and SIMT paths against PyTorch and their promise (conv.cuh), TFLOP/s
#       beside cuDNN at the Wan-VAE decoder's 832x480 levels (mma.sync with the tile its model picks
#       and with each tile it could pick forced); then the unverified
#       wgmma conv (conv path 3, sm_90 only) at the same cases (a watchdog reports a hang) and, where it
#       kept its promise, its TFLOP/s beside mma.sync at those levels;
#    9. kernels vs PyTorch (tools/gpu-check-kernels.py verify): every GEMM path (wgmma, mma.sync — also
#       with each block tile forced —, SIMT;
#       bf16 and f32 activations; epilogues; split outputs) and the attention kernels (mma.sync also
#       with its 128- and 64-row query blocks forced);
#   10. kernel benchmarks (tools/gpu-check-kernels.py bench): bf16 GEMM at 4096³ and the Wan shapes (the
#       kernel auto picks, and mma.sync with the block tile its model picks and with each of its three
#       forced: KINO_CUDA_GEMM_MMA_TILE), mma.sync attention at the Wan shapes and two smaller ones (with the query
#       rows per block its model picks, and with 128 and 64 forced: KINO_CUDA_ATTENTION_BQ), TFLOP/s beside cuBLAS and SDPA;
#   11. Wan2.1 VAE decode at 832x480 per 3-latent-frame chunk and the frames' readback (tools/bench/vae-decode.ts);
#   12. the image models at real size, random weights (tools/bench/image-models.ts): Wan2.2 TI2V-5B at
#       1280x704, 121 frames — s per guided denoising step and the Wan2.2 VAE decode; Wan2.1 I2V-14B at
#       832x480 — s per step (late in the bun part: a short budget cuts it before the headline figures);
#   13. multi-GPU: with ≥ 2 GPUs, `kino serve` with num_gpus = that count on kino-tiny, every worker
#       on a distinct GPU; with one, num_gpus 2 refused naming worker 1's CUDA_VISIBLE_DEVICES=1;
#   14. a kernel fault on purpose (tools/gpu-check-fault.cu, built by nvcc into a library of its own)
#       in the process of an open CUDA backend: its next call must throw DeviceLostError
#       (tools/gpu-check-device-lost.ts), the error the worker is replaced on;
#   15. the op sweep on CUDA (bun test): test/runtime/ops.test.ts with every kernel path forced,
#       cuda.test.ts, the golden DiT with bf16 activations, DiT graphs causal and bidirectional, the
#       causal context pass's K/V (its k|v-rows GEMM) bit for bit against a full forward's, kino's
#       latent-patch image branch (chunked with the cache against the block-causal pass).
# GPU machines of the lab image have python3 + torch (and nvcc) but no bun, no node_modules and no
# build/ (ignored, not carried): the device run carries the payload of tools/gpu-payload.sh, an
# xz-compressed tar of this commit's single executable (dist/kino) and the build/ files the bun steps
# import (the wasm kernels, the H.264 encoders), unpacked by find_kino below. That executable stands in
# for bun (BUN_BE_BUN=1 makes a compiled Bun program the bun CLI) and serves steps 5 and 12 (`kino
# serve`); a real bun can be carried instead (`gzip -9 -c node_modules/bun/bin/bun.exe > .gpu/bun.gz`)
# or named by KINO_BUN, and the bun steps are SKIPPED with neither. Since the tree and the payload exceed
# one call's carry (64 MiB), the payload is split in two and the check runs in two parts
# (KINO_GPU_CHECK_PART), each call carrying one part; `bash tools/gpu-rehearsal.sh` plays both calls on
# a machine without a GPU first, to catch script faults. Results are also written to $OUT/gpu-check.log
# when OUT is set.
# After the run, `bun tools/gpu-verdicts.ts OUT1/gpu-check.log OUT2/gpu-check.log [--apply]` (the two
# parts' logs) reads them instead of a person: the steps merged over the parts, then for each hand-set
# fast path (WGMMA_ATTENTION_VERIFIED, the GEMM_*_VERIFIED, CONV_WGMMA_VERIFIED, GRAPHS_VERIFIED,
# BF16_ACTIVATIONS_VERIFIED, READBACK_OVERLAP_VERIFIED) the evidence it needs and FLIP / KEEP (why) / NO EVIDENCE (step missing or
# cut), and the figures as rows for docs/BENCHMARKS.md; --apply sets the FLIP constants. It reads the
# one VERDICT-DATA line each check ends with, not the prose: keep those lines when changing a check.
set -uo pipefail
cd "$(dirname "$0")/.."
LOG="${OUT:-/tmp}/gpu-check.log"
exec > >(tee "$LOG") 2>&1
source tools/gpu-check-steps.sh

# The single executable and the build/ files the bun steps import (the wasm kernels and the H.264
# encoders: build/ is not carried), unpacked from .gpu/: tools/gpu-payload.sh's xz-compressed tar, split
# in parts (kino.xz.00, kino.xz.01, …) carried by successive calls to one warm machine, since the tree
# and the whole file together exceed what one call carries. Into a temporary folder, kept only when the
# stream unpacked whole: the first call of a split run has only part 00, and a truncated executable
# left as dist/kino would pass for one in the next call too (ignored files stay on the machine); again
# when the parts differ from the ones an unpacked dist/kino came from (a rerun with a new payload). A
# dist/kino or build/ file that did not come from a payload (a developer's own build) is left alone.
find_kino() {
  local parts=(.gpu/kino.xz.[0-9]*) stage=.gpu/unpacking sum f
  if [ -f "${parts[0]}" ] && { [ ! -e dist/kino ] || [ -f dist/kino.payload ]; }; then
    sum=$(cat "${parts[@]}" | sha1sum | cut -d' ' -f1)
    if [ "$(cat dist/kino.payload 2>/dev/null)" != "$sum" ]; then
      rm -rf "$stage" && mkdir -p "$stage"
      if cat "${parts[@]}" | xz -dc 2>/dev/null | tar -x -C "$stage" 2>/dev/null && [ -s "$stage/dist/kino" ]; then
        mkdir -p dist build
        touch dist/kino.files
        for f in $(cd "$stage" && find build -type f); do
          if [ ! -e "$f" ] || grep -qxF "$f" dist/kino.files; then mv -f "$stage/$f" "$f" && echo "$f"; fi
        done >dist/kino.files.new
        mv dist/kino.files.new dist/kino.files
        chmod +x "$stage/dist/kino" && mv -f "$stage/dist/kino" dist/kino && echo "$sum" >dist/kino.payload
      fi
      rm -rf "$stage"
    fi
  fi
  # newer than the sources this call copied, so that nothing here tries to rebuild them (no clang here)
  [ -f dist/kino.payload ] && [ -f dist/kino.files ] && xargs -r touch <dist/kino.files
  [ -x dist/kino ] && echo "$PWD/dist/kino"
}
KINO="$(find_kino)"
export KINO

find_bun() {
  if [ -n "${KINO_BUN:-}" ]; then echo "$KINO_BUN"; return; fi
  if command -v bun >/dev/null; then command -v bun; return; fi
  if [ -x node_modules/.bin/bun ]; then echo node_modules/.bin/bun; return; fi
  for z in .gpu/bun.gz .gpu/bun.xz; do
    if [ -f "$z" ]; then
      case "$z" in *.gz) gzip -dc "$z" >/tmp/kino-bun ;; *.xz) xz -dc "$z" >/tmp/kino-bun ;; esac
      chmod +x /tmp/kino-bun && echo /tmp/kino-bun && return
    fi
  done
  if [ -n "$KINO" ]; then
    printf '#!/bin/sh\nBUN_BE_BUN=1 exec "%s" "$@"\n' "$KINO" >/tmp/kino-bun
    chmod +x /tmp/kino-bun && echo /tmp/kino-bun
  fi
}
BUN="$(find_bun)"
export BUN

# Each step is a function run by run_step in a process of its own (hence the exports); it exits 0 for
# PASS, 77 for SKIPPED and anything else for FAIL.
need_bun() {
  if [ -z "$BUN" ]; then
    echo "skipped: no bun on this machine (carry .gpu/bun.gz or set KINO_BUN)"
    exit 77
  fi
}

device() {
  command -v nvidia-smi >/dev/null || { echo "no nvidia-smi on this machine"; exit 1; }
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader
}

# What the library was built from: a later part on the same machine reuses it when the sources match
# (the tree is copied afresh at every call, so the build's own mtime check would rebuild it all).
cuda_sources_hash() { cat kernels/cuda/* tools/build/cuda.ts | sha1sum | cut -d' ' -f1; }

build() {
  local start=$SECONDS
  if [ -f build/libkino_cuda.so ] && [ -s build/cuda-sources.sha1 ] && [ "$(cat build/cuda-sources.sha1)" = "$(cuda_sources_hash)" ]; then
    echo "build/libkino_cuda.so kept: built on this machine from these sources by an earlier part"
    return 0
  fi
  rm -f build/cuda-sources.sha1
  if [ -n "$BUN" ]; then
    "$BUN" tools/build/cuda.ts || exit 1
    [ -f build/libkino_cuda.so ] || { echo "no build/libkino_cuda.so (no nvcc?)"; exit 1; }
  else
    # Same flags as tools/build/cuda.ts (kept in step with it).
    mkdir -p build/cuda-obj
    local flags=(-O3 -std=c++17 --expt-relaxed-constexpr -Xcompiler -fPIC -Xcompiler -fvisibility=hidden
      -gencode arch=compute_90a,code=sm_90a -gencode arch=compute_80,code=sm_80 -gencode arch=compute_80,code=compute_80)
    local pids=() pid failed=0
    for f in kernels/cuda/*.cu; do
      nvcc "${flags[@]}" -c "$f" -o "build/cuda-obj/$(basename "${f%.cu}").o" &
      pids+=($!)
    done
    # a file that failed to compile must fail the build, not link without its kernels
    for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
    [ "$failed" = 0 ] || exit 1
    echo '{ global: kc_*; local: *; };' >build/cuda-obj/exports.map
    nvcc -shared -cudart static -Xlinker --version-script=build/cuda-obj/exports.map -o build/libkino_cuda.so build/cuda-obj/*.o || exit 1
  fi
  cuda_sources_hash >build/cuda-sources.sha1
  echo "built in $((SECONDS - start)) s: $(ls -la build/libkino_cuda.so)"
  if command -v cuobjdump >/dev/null; then
    local sass
    sass=$(cuobjdump --dump-sass --gpu-architecture sm_90a build/libkino_cuda.so 2>/dev/null)
    echo "sm_90a SASS: $(grep -c HGMMA <<<"$sass") HGMMA, $(grep -c UTMALDG <<<"$sass") UTMALDG (TMA), $(grep -c UTMASTG <<<"$sass") UTMASTG (TMA store), $(grep -c 'HMMA' <<<"$sass") HMMA instructions"
  fi
}

unverified_hopper() {
  local part code rc=77
  # Attention first: it is most of a chunk's time, so its verdict matters most if the cap cuts the rest.
  # FAIL when one part failed, SKIPPED (77) when every part found no GPU, else PASS.
  for part in wgmma persistent pingpong persistent-tma; do
    python3 tools/gpu-check-kernels.py "$part"
    code=$?
    if [ "$code" != 0 ] && [ "$code" != 77 ]; then rc=1; elif [ "$code" = 0 ] && [ "$rc" = 77 ]; then rc=0; fi
  done
  return $rc
}
causal_graphs() { need_bun; "$BUN" tools/bench/dit-graph.ts; }
clip_graph() { need_bun; "$BUN" tools/bench/dit-clip-graph.ts --steps 3; }
readback_overlap() { need_bun; "$BUN" tools/bench/readback-overlap.ts --chunks 12 --runs 2; }
conv3d() { python3 tools/gpu-check-conv.py; }
kernels_verify() { python3 tools/gpu-check-kernels.py verify; }
kernels_bench() { python3 tools/gpu-check-kernels.py bench; }
vae_decode() { need_bun; "$BUN" tools/bench/vae-decode.ts --width 832 --height 480 --chunk 3 --chunks 4; }
image_models() { need_bun; "$BUN" tools/bench/image-models.ts --steps 2 --vae-latents 3; }
# A kernel fault on purpose, in a library of its own, then the backend's next call: DeviceLostError.
device_lost() {
  need_bun
  nvcc -shared -Xcompiler -fPIC -gencode arch=compute_80,code=compute_80 -o build/gpu-check-fault.so tools/gpu-check-fault.cu || exit 1
  "$BUN" tools/gpu-check-device-lost.ts build/gpu-check-fault.so
}

e2e_realtime() {
  need_bun
  local kino
  if [ -n "$KINO" ]; then kino="$KINO"
  elif [ -d node_modules/elysia ]; then kino=source
  else
    echo "skipped: no kino to serve with (carry the tools/gpu-payload.sh parts or have node_modules)"
    exit 77
  fi
  # The executable would load the CUDA library it embeds; the one step 2 built from this tree is the
  # one every other step ran.
  KINO_CUDA_LIB="$PWD/build/libkino_cuda.so" "$BUN" tools/bench/e2e-realtime.ts --kino "$kino" --preset wan-1.3b --device cuda \
    --size 832x480 --chunks 10 --target-fps 30 --target-first-chunk 0.5 --ready-timeout 120
}

multi_gpu() {
  local gpus kino=()
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  if [ -n "$BUN" ] && [ -d node_modules/elysia ]; then kino=("$BUN" src/cli/main.ts)
  elif [ -n "$KINO" ]; then kino=("$KINO"); fi
  if [ "$gpus" -lt 1 ]; then echo "multi-GPU: no GPU answers nvidia-smi"; exit 1; fi
  if [ ${#kino[@]} -eq 0 ]; then
    echo "multi-GPU: no way to run kino serve here (needs bun with node_modules, or dist/kino), skipped"
    exit 77
  fi
  [ "$gpus" -lt 2 ] && echo "multi-GPU: $gpus GPU on this machine: checking that num_gpus 2 is refused instead"
  # The worker pins come from the server's own environment when it has CUDA_VISIBLE_DEVICES: start clean.
  env -u CUDA_VISIBLE_DEVICES python3 tools/gpu-check-multi.py "$gpus" builtin:kino-tiny cuda "${kino[@]}"
}

op_sweep() {
  need_bun
  local sweep=(test/runtime/cuda.test.ts test/models/dit-graph.test.ts test/models/dit-sequence-graph.test.ts test/models/dit-activations.test.ts test/models/dit-context-pass.test.ts test/models/dit-image-branch.test.ts)
  [ -f test/runtime/ops.test.ts ] && sweep+=(test/runtime/ops.test.ts)
  "$BUN" test --timeout 120000 "${sweep[@]}"
}

export -f cuda_sources_hash need_bun device build unverified_hopper causal_graphs clip_graph readback_overlap conv3d kernels_verify kernels_bench vae_decode image_models e2e_realtime multi_gpu device_lost op_sweep

# KINO_GPU_CHECK_PART=python runs only the steps that need no bun, =bun only the others (device and
# build run in both): the two halves of a check split over two calls to one warm machine, the first
# carrying part 00 of the executable (tools/gpu-payload.sh) and the second the rest. Unset: every step.
# KINO_GPU_CHECK_STEPS=FUNCTION,... (the step functions below) runs only those of the steps after the
# build: a later device call spends its minutes on what an earlier run's budget cut or left out
# (tools/gpu-verdicts.ts prints the command for them).
PART="${KINO_GPU_CHECK_PART:-}"
ONLY=",${KINO_GPU_CHECK_STEPS:-},"
ONLY="${ONLY// /,}"
for fn in ${ONLY//,/ }; do  # a misspelt name would skip every step
  declare -F "$fn" >/dev/null || { echo "KINO_GPU_CHECK_STEPS: no step function '$fn' in tools/gpu-check.sh"; exit 2; }
done
step() { # KIND NAME CAP FUNCTION, KIND python or bun
  local kind="$1"
  shift
  if [ -n "$PART" ] && [ "$kind" != "$PART" ]; then
    echo
    echo "== $1: in the other part (KINO_GPU_CHECK_PART=$kind)"
    record_step "$1" SKIPPED 0 "the $kind part"
    return 0
  fi
  if [ "$ONLY" != ",," ] && [[ "$ONLY" != *",$3,"* ]]; then
    echo
    echo "== $1 (cap $2 s, budget left $(budget_left) s)"
    echo "SKIPPED: not in KINO_GPU_CHECK_STEPS"
    record_step "$1" SKIPPED 0 "not in KINO_GPU_CHECK_STEPS"
    return 0
  fi
  run_step "$@"
}

run_step "device" 20 device
run_step "build (nvcc)" 240 build
# Without the library no later step has anything to run.
[ "${STEP_RESULTS[-1]}" = PASS ] || GPU_CHECK_OFF="the build failed"
export GPU_CHECK_OFF
# A step that matters most is kept from starving the next one that does (GPU_CHECK_RESERVE): in the
# python part the Hopper kernels leave the conv check (its wgmma pass is last in it) 120 s, in the bun
# part the causal DiT leaves the end-to-end session 120 s.
GPU_CHECK_RESERVE=120 step python "persistent wgmma GEMM, ping-pong wgmma GEMM, persistent GEMM with TMA stores and wgmma attention vs PyTorch, then their benchmarks" 260 unverified_hopper
GPU_CHECK_RESERVE=120 step bun "causal DiT as CUDA graphs and with bf16 activations, Wan2.1-1.3B at 832x480 (bun)" 150 causal_graphs
# the headline figure next: a bun part with a short budget still reaches it
# writing 3.9 GB (~10 s) + loading it (~30 s) + 17 chunks at ~2 s before any speed-up, with room left
step bun "end to end: kino serve, Wan2.1-1.3B random checkpoint, realtime session at 832x480 (target ≥ 30 fps, first chunk ≤ 0.5 s)" 180 e2e_realtime
step bun "bidirectional t2v clip as one CUDA graph, Wan2.1-1.3B at 832x480, 81 frames (bun)" 60 clip_graph
step bun "readback of chunk i overlapped with the DiT of chunk i + 1, and its encoding on a thread (bun)" 60 readback_overlap
step python "conv3d vs PyTorch, then benchmarks" 150 conv3d
step python "GEMM and attention kernels vs PyTorch" 150 kernels_verify
step python "GEMM and attention benchmarks beside cuBLAS and SDPA" 90 kernels_bench
step bun "Wan2.1 VAE decode and the frames' readback at 832x480 (bun)" 120 vae_decode
step bun "image models at real size: Wan2.2 TI2V-5B 1280x704 s/step and VAE decode, Wan2.1 I2V-14B 832x480 s/step (bun)" 150 image_models
step bun "multi-GPU (one worker per GPU)" 45 multi_gpu
step bun "a kernel fault: the CUDA backend's next call reports the context lost" 30 device_lost
step bun "op sweep on CUDA (bun test)" 300 op_sweep
summary
