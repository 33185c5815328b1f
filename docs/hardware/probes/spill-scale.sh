#!/usr/bin/env bash
# The H100's spilling 4-warp matmul rows by grid size: which part of their per-step cost one SM
# pays alone and which part the SMs of a wave pay together
# (docs/hardware/h100-calibration.md, "The spilling rows by grid size").
#
# Usage on the device (an H100), with a release bwsim carried in .devbin/:
#   bash docs/hardware/probes/spill-scale.sh .devbin/bwsim > spill-scale.jsonl
# About two minutes (13 launches of 11, each assembled by ptxas first).
#   bash docs/hardware/probes/spill-scale.sh .devbin/bwsim tiles > spill-tiles.jsonl
# The persistent kernel's later tiles (added 2026-12-07, below), about two minutes.
#
# One JSON object per line: the kernel, its constants (4 warps, 128 x 256 tiles: the
# accumulator spills), the grid ("1cta": M = 128, N = 256, K = 131072, one CTA reading 96 MB
# from HBM; "wave": 4224 x 1024 at K = 16384, 132 CTAs, one wave; "full": 8192 x 8192 x 16384,
# the validation row), the GPU runner's JSON (`bwsim gpu ... --time 10 --no-check --json`), the
# model's prediction for the same launch (`bwsim time --chip h100 --timing-only`) and both as
# 1830-MHz cycles per K step of one CTA (the launch's time over its waves and K steps).
#
# What settles what:
#   1. BLOCK_K = 128, 2 buffers (rows 3 and 9 of docs/timing.md's H100 table, 8-11 % slower in
#      the model than measured). The model gives 10213 cycles per step alone and 11491 for one
#      wave: its SMs stay in step and every step's loads meet in the L2 as one burst (132 x
#      96 KB), as the 8-warp two-buffer rows do on the hardware (3736 alone, 4700 per wave,
#      probes/nb2-l2.sh). The full grid measures 10520 (row 3) and 10310 (row 9). If "wave"
#      comes out near "1cta" on the hardware, the spilling SMs do not stay in step (their
#      local-memory swap, 78 + 78 8-byte spills per thread per step, takes a varying time) and
#      their loads do not meet as one burst: a spilling warpgroup's loads should then not pay
#      the whole burst in the model. If "wave" is about 1000 cycles above "1cta", the burst is
#      paid and the 1000-cycle excess of rows 3 and 9 lies elsewhere.
#   2. BLOCK_K = 64, 3 and 4 buffers, both kernels (rows 5, 7, 11 and 13: 6100, 7530, 7310 and
#      7650 cycles per step on the hardware, the same K loop in the SASS; the model gives 7240
#      for all four). If the four differ already at "1cta", what separates row 5 is in one SM
#      (its code outside the K loop, its shared memory); if they agree alone and part only at
#      "wave" or "full", it is in how the SMs share the L2.
#   3. "tiles": persistent_matmul, 4 warps, BLOCK_K = 64 (row 11 with 3 buffers, row 13 with
#      4). Row 11 costs 7310 cycles per step on the full grid (16 tiles per CTA) against 5651
#      in one wave and 5475 alone (one tile per CTA each), near row 13's 7650: as if its later
#      tiles' spill swap no longer fitted the 92 KiB L1 (the hypothesis: from a CTA's second
#      accumulation on, the L1 also holds the accumulator the last epilogue read out). One CTA (NUM_SMS = 1) runs T = 1, 2,
#      4 and 16 tiles of 128 x 256 over 2048 K steps in all (K = 131072 / T), and a full GPU
#      runs T = 1, 2 and 4 tiles per CTA (M = 4224 T, N = 1024, K = 16384). If with 3 buffers
#      one CTA's step rises from about 5500 at T = 1 to the 4-buffer level (about 6500) as T
#      grows, the later tiles lose the L1 in one SM; if it stays and only the
#      full GPU's rises with T, the cause is between SMs (the CTAs' tiles drifting apart and
#      their shared A and B boxes leaving the L2) and no one-SM rule can carry it.
set -u
B=${1:-.devbin/bwsim}
MODE=${2:-scale}
run() { # kernel grid M N K BLOCK_K NUM_BUFFERS [NUM_SMS]
  local consts="--const M=$3 --const N=$4 --const K=$5 --const BLOCK_K=$6 --const NUM_BUFFERS=$7 --const NUM_WARPS=4"
  local sms=${8:-132}
  [ -n "${8:-}" ] && consts="$consts --const NUM_SMS=$8"
  # shellcheck disable=SC2086
  out=$("$B" gpu "$1" --target sm_90a $consts --time 10 --no-check --json --timeout 120 2>&1 | tail -1)
  # shellcheck disable=SC2086
  pred=$("$B" time "$1" --chip h100 $consts --timing-only --json 2>/dev/null |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["microseconds"])' 2>/dev/null || echo null)
  python3 - "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$sms" "$out" "$pred" <<'PY'
import json, sys
kernel, grid, m, n, k, bk, nb, sms, out, pred = sys.argv[1:]
m, n, k, bk, nb, sms = int(m), int(n), int(k), int(bk), int(nb), int(sms)
try:
    out = json.loads(out)
except ValueError:
    out = {"result": out}
tiles = (m // 128) * (n // 256)
# Tiles one CTA (persistent: NUM_SMS programs) or one SM (one wave of 132 at a time) runs.
waves = -(-tiles // min(sms, tiles))
steps = waves * k // bk
per_step = lambda us: None if us is None else round(us * 1830 / steps, 1)
measured = out.get("median_ms")
pred = None if pred == "null" else float(pred)
print(json.dumps({
    "probe": "spill-scale", "kernel": kernel, "grid": grid, "M": m, "N": n, "K": k,
    "BLOCK_K": bk, "NUM_BUFFERS": nb, "NUM_WARPS": 4, "NUM_SMS": sms, "tiles_per_cta": waves,
    "measured_cycles_per_step": per_step(None if measured is None else measured * 1000),
    "predicted_cycles_per_step": per_step(pred), "predicted_us": pred, "out": out,
}))
PY
}
if [ "$MODE" = tiles ]; then
  for nb in 3 4; do
    for t in 1 2 4 16; do
      run persistent_matmul 1cta $((128 * t)) 256 $((131072 / t)) 64 "$nb" 1
    done
    for t in 1 2 4; do
      run persistent_matmul wave $((4224 * t)) 1024 16384 64 "$nb" 132
    done
  done
  exit 0
fi
run matmul_pipelined 1cta 128 256 131072 128 2
run matmul_pipelined wave 4224 1024 16384 128 2
run matmul_pipelined full 8192 8192 16384 128 2
for kernel in matmul_pipelined persistent_matmul; do
  for nb in 3 4; do
    run "$kernel" 1cta 128 256 131072 64 "$nb"
    run "$kernel" wave 4224 1024 16384 64 "$nb"
  done
done
run persistent_matmul 1cta 128 256 131072 128 2
run persistent_matmul wave 4224 1024 16384 128 2
