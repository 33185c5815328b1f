#!/usr/bin/env bash
# Two-buffer pipelines on the H100: what part of the loss is L2 residency between launches,
# what part is the number of SMs loading at once (docs/hardware/h100-calibration.md).
# matmul_pipelined, 8 warps; each line: the configuration and the GPU runner's JSON.
# Usage on the device: docs/hardware/probes/nb2-l2.sh .devbin/bwsim > OUT.jsonl
set -u
B=${1:-.devbin/bwsim}
run() { # label M N K BLOCK_K NUM_BUFFERS
  out=$("$B" gpu matmul_pipelined --target sm_90a --const M=$2 --const N=$3 --const K=$4 \
    --const BLOCK_K=$5 --const NUM_BUFFERS=$6 --const NUM_WARPS=8 --time 10 --no-check --json \
    --timeout 120 2>&1 | tail -1)
  echo "{\"probe\":\"$1\",\"M\":$2,\"N\":$3,\"K\":$4,\"BLOCK_K\":$5,\"NUM_BUFFERS\":$6,\"out\":$out}"
}
for nb in 2 3; do
  # L2-resident across the timed launches (A + B at most 24 MB of the 50 MB L2).
  run warm-1cta 128 256 4096 64 $nb
  run warm-16cta 512 1024 4096 64 $nb
  run warm-64cta 1024 2048 4096 64 $nb
  # Larger than the L2: every launch reads from HBM.
  run cold-1cta 128 256 131072 64 $nb
  run cold-16cta 512 1024 65536 64 $nb
  # One wave of 132 and 66 CTAs, and the full grid.
  run wave-132 4224 1024 16384 64 $nb
  run wave-66 4224 512 16384 64 $nb
  run full 8192 8192 16384 64 $nb
done
run cold-1cta-bk128 128 256 131072 128 2
run wave-132-bk128 4224 1024 16384 128 2
run full-bk128 8192 8192 16384 128 2
