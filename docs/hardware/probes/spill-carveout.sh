#!/usr/bin/env bash
# The L1 carve-out hypothesis for the H100's spilling 4-warp matmul rows
# (docs/hardware/h100-calibration.md, "What separates the spilling 4-warp rows").
#
# Usage on the device (an H100; needs nvcc, no Rust):
#   docs/hardware/probes/spill-carveout.sh [BWSIM] > spill-carveout.jsonl
# One JSON object per line:
#   1. "l1": SM cycles per dependent L1-cached load over rings of 8-192 KB, for the shared
#      memory of the 3-buffer (144.1 KiB) and 4-buffer (192.1 KiB) rows and of the persistent
#      3-buffer row (145.0 KiB), with no carve-out preference (-1, as the GPU runner
#      launches), 71 % and 85 % of the 228 KiB (aimed at the 164 and 196 KiB carve-outs;
#      the chase shows what the driver took) and 100 %. The ring size where the cycles jump
#      from L1 (tens) to L2 (hundreds) is the L1 left beside shared memory (256 KiB in all).
#   2. "swap": the spilled accumulator's local-memory traffic (78 STL.64 + 78 LDL.64 per
#      thread per step in the SASS's order, 128 threads, one CTA per SM, a 1568-byte frame)
#      with 1140 SM cycles of waiting per step (the HGMMAs of a 64-deep step) and with none,
#      one wave (132 CTAs) and the matmul's 2048 CTAs, under the same shared-memory sizes
#      and carve-outs.
#   2b. "swap" again for rows 5 and 11 alone (147,584 and 148,480 bytes of shared memory, no
#      carve-out preference) with each kernel's local frame, 1568 and 1056 bytes (a second
#      build, -DPROBE_FRAME=132; "local_bytes" in the output says which): the two differences
#      between those rows' launches, crossed.
#   3. With BWSIM (a release bwsim, e.g. .devbin/bwsim): rows 5, 7, 11 and 13 of
#      docs/timing.md's H100 table, three times each (`bwsim gpu ... --time 20`), for their
#      run-to-run spread.
# What settles what: if "swap" costs about 1400 SM cycles more per step with the 60 KiB L1
# (the 196 KiB carve-out) or 28 KiB (228) than with 92 KiB (164: 144.1 KiB at -1 or 71),
# the carve-out explains row 5 against row 7 (6100 against 7530 cycles per step on the
# hardware), and the model can charge the spill by the L1 it leaves; if "l1" shows the
# persistent kernel's 145.0 KiB also getting the small L1 at -1 (the driver's choice), the same
# mechanism covers row 11. If "swap" is the same for both L1 sizes, the hypothesis is wrong.
# If 2b shows the 1056-byte frame about 1200 SM cycles per step slower than the 1568-byte one
# (row 11's 7310 against row 5's 6100 on the hardware), the frame's layout, not the carve-out,
# separates rows 5 and 11.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
B=${1:-}
work=$(mktemp -d)
nvcc -O3 -arch=sm_90a -Xptxas -v -o "$work/spill_carveout" "$here/spill_carveout.cu" \
  2> "$work/ptxas.txt" || { cat "$work/ptxas.txt" >&2; exit 1; }
grep -E "stack frame|registers" "$work/ptxas.txt" | sed 's/^/# /' >&2
# The same program with persistent_matmul's 1056-byte frame (row 11; rows 5 and 7: 1568).
nvcc -O3 -arch=sm_90a -Xptxas -v -DPROBE_FRAME=132 -o "$work/spill_carveout_132" \
  "$here/spill_carveout.cu" 2> "$work/ptxas132.txt" || { cat "$work/ptxas132.txt" >&2; exit 1; }
grep -E "stack frame|registers" "$work/ptxas132.txt" | sed 's/^/# frame 1056: /' >&2
P="$work/spill_carveout"
# Dynamic shared memory of the rows (`bwsim ptx KERNEL --target sm_90a --const M=8192
# --const N=8192 --const K=16384 --const BLOCK_K=64 --const NUM_WARPS=4 --const NUM_BUFFERS=NB`,
# its `launch:` line): matmul_pipelined 3 and 4 buffers (rows 5, 7), persistent_matmul 3 (row 11).
sizes="147584 196736 148480"
for s in $sizes; do
  for c in -1 71 85 100; do
    "$P" l1 "$s" "$c" 8 16 24 32 48 64 80 96 112 128 160 192 || true
  done
done
for s in $sizes; do
  for c in -1 71 85 100; do
    for grid in 132 2048; do
      for delay in 1140 0; do
        "$P" swap "$s" "$c" "$grid" 2048 "$delay" || true
      done
    done
  done
done
# Row 5 against row 11 (the same K loop, 20-24 % apart on the H100 in both runs of
# 2026-11-23): their shared memory and frame sizes crossed, with no carve-out preference; the
# "local_bytes" field tells the two builds apart.
for s in 147584 148480; do
  for grid in 132 2048; do
    for Q in "$P" "$work/spill_carveout_132"; do
      "$Q" swap "$s" -1 "$grid" 2048 1140 || true
    done
  done
done
if [ -n "$B" ]; then
  mnk=(--const M=8192 --const N=8192 --const K=16384 --const BLOCK_K=64 --const NUM_WARPS=4)
  for rep in 1 2 3; do
    for kernel in matmul_pipelined persistent_matmul; do
      for nb in 3 4; do
        out=$("$B" gpu "$kernel" --target sm_90a "${mnk[@]}" --const NUM_BUFFERS=$nb \
          --time 20 --no-check --json --timeout 120 2>&1 | tail -1)
        echo "{\"probe\":\"row\",\"kernel\":\"$kernel\",\"NUM_BUFFERS\":$nb,\"rep\":$rep,\"out\":$out}"
      done
    done
  done
fi
rm -rf "$work"
