# The step harness of tools/gpu-check.sh (sourced by it; test/tools/gpu-check-steps.test.ts runs it with
# stand-in steps). The check must report within one timed command on a GPU machine, so it runs under
# one wall-clock budget (KINO_GPU_CHECK_BUDGET seconds, default 540) and every step under a cap of its own, cut to what the budget has left. A step that
# runs past its cap is killed and reported as TIMEOUT with the last lines it printed (what it had
# measured so far); a step that would start with less than KINO_GPU_CHECK_MIN_STEP seconds left (default
# 15) is SKIPPED without running; either way the later steps still get their turn, and summary()
# lists every step with PASS / FAIL / TIMEOUT / SKIPPED and its seconds. With GPU_CHECK_OFF set (to
# the reason), the steps from then on are SKIPPED without running (the build failed: nothing to check).
#
#   run_step NAME CAP_SECONDS FUNCTION   runs FUNCTION (a shell function, exported with export -f, or
#                                        a command) in a process group of its own under the cap.
#                                        Its exit status: 0 PASS, 77 SKIPPED (it found nothing to
#                                        check here, e.g. no bun), anything else FAIL.
#                                        With GPU_CHECK_RESERVE=SECONDS set for the call, the cap is
#                                        cut to leave that much of the budget to the steps after it
#                                        (never below KINO_GPU_CHECK_MIN_STEP): a step that overruns
#                                        cannot starve the next one that matters.
#   summary                              prints the table; returns 1 when any step failed or timed out.
#
# KINO_GPU_CHECK_DRY_RUN=1 runs every step as a stand-in that prints what it would run and sleeps
# KINO_GPU_CHECK_DRY_SLEEP seconds (default 0): the script's order, caps, budget and summary checked
# where no GPU is (test/tools/gpu-check-steps.test.ts). With KINO_GPU_CHECK_DRY_FIXTURES=DIR too, a step
# whose DIR/FUNCTION.sh exists runs that script instead, its output and exit status the step's: device
# output played through the real harness (test/tools/gpu-verdicts.test.ts).

GPU_CHECK_BUDGET="${KINO_GPU_CHECK_BUDGET:-540}"
GPU_CHECK_MIN_STEP="${KINO_GPU_CHECK_MIN_STEP:-15}"
GPU_CHECK_STARTED=$SECONDS
STEP_NAMES=()
STEP_RESULTS=()
STEP_SECONDS=()
STEP_NOTES=()

budget_left() {
  echo $((GPU_CHECK_BUDGET - (SECONDS - GPU_CHECK_STARTED)))
}

record_step() { # name result seconds note
  STEP_NAMES+=("$1")
  STEP_RESULTS+=("$2")
  STEP_SECONDS+=("$3")
  STEP_NOTES+=("$4")
}

run_step() {
  local name="$1" cap="$2"
  shift 2
  local left
  left=$(budget_left)
  echo
  echo "== $name (cap ${cap} s, budget left ${left} s)"
  if [ -n "${GPU_CHECK_OFF:-}" ]; then
    echo "SKIPPED: $GPU_CHECK_OFF"
    record_step "$name" SKIPPED 0 "$GPU_CHECK_OFF"
    return 0
  fi
  if [ "$left" -lt "$GPU_CHECK_MIN_STEP" ]; then
    echo "SKIPPED: ${left} s of the ${GPU_CHECK_BUDGET} s budget left (a step needs ${GPU_CHECK_MIN_STEP} s)"
    record_step "$name" SKIPPED 0 "budget spent"
    return 0
  fi
  local limit=$cap note="" reserve="${GPU_CHECK_RESERVE:-0}"
  if [ "$left" -lt "$cap" ]; then
    limit=$left
    note="cap cut to the budget's ${left} s"
  fi
  if [ "$reserve" -gt 0 ] && [ $((left - reserve)) -lt "$limit" ]; then
    limit=$((left - reserve))
    [ "$limit" -lt "$GPU_CHECK_MIN_STEP" ] && limit=$GPU_CHECK_MIN_STEP
    note="cap cut to ${limit} s, ${reserve} s kept for the steps after it"
  fi
  if [ -n "${KINO_GPU_CHECK_DRY_RUN:-}" ]; then
    set -- dry_step "$@"
  fi
  local out
  out=$(mktemp "${TMPDIR:-/tmp}/kino-gpu-step.XXXXXX")
  local start=$SECONDS rc
  # timeout puts itself and the step in a process group of their own and signals the whole group (and
  # KILLs it 5 s later, for a step that ignores TERM): the step's own children go with it.
  timeout --kill-after=5 "$limit" bash -c '"$@"' step "$@" 2>&1 | tee "$out"
  rc=${PIPESTATUS[0]}
  local took=$((SECONDS - start))
  case $rc in
    0) record_step "$name" PASS "$took" "$note" ;;
    77) record_step "$name" SKIPPED "$took" "nothing to check here" ;;
    124 | 137)
      echo "TIMEOUT after ${limit} s ($name); what was measured so far:"
      tail -n 20 "$out" | sed 's/^/  > /'
      record_step "$name" TIMEOUT "$took" "${note:-cap ${cap} s}" ;;
    *) record_step "$name" FAIL "$took" "exit $rc" ;;
  esac
  rm -f "$out"
  return 0
}

dry_step() {
  echo "dry run: would run $*"
  local fixture="${KINO_GPU_CHECK_DRY_FIXTURES:-}/$1.sh"
  if [ -n "${KINO_GPU_CHECK_DRY_FIXTURES:-}" ] && [ -f "$fixture" ]; then exec bash "$fixture"; fi
  sleep "${KINO_GPU_CHECK_DRY_SLEEP:-0}"
}
export -f dry_step

summary() {
  local i bad=0
  echo
  echo "== summary ($((SECONDS - GPU_CHECK_STARTED)) s of a ${GPU_CHECK_BUDGET} s budget)"
  for i in "${!STEP_NAMES[@]}"; do
    printf '%-8s %5s s  %s%s\n' "${STEP_RESULTS[$i]}" "${STEP_SECONDS[$i]}" "${STEP_NAMES[$i]}" "${STEP_NOTES[$i]:+ (${STEP_NOTES[$i]})}"
    case "${STEP_RESULTS[$i]}" in FAIL | TIMEOUT) bad=1 ;; esac
  done
  return $bad
}
