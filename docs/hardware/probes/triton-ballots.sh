#!/bin/bash
# Triton 3.6/3.7's own PTX (sm_90a) of the histogram and pair-reduction fixtures on the GPU
# against the PTX front end (`vote.sync.ballot`, undefined bits through `shfl.sync`), and
# bwsim's lowering of the same releases' TTGIR. Prepare here (the PTX is what the full tier's
# tests/ptx_corpus.rs writes to target/ptx-corpus/R, or BWSIM_REGEN_PTX=1 bash
# tests/gluon/regenerate.sh 3.7.1 DIR), then run on the device with carry [".devbin"]:
#   for r in 3.6 3.7; do for k in register_gather_histogram pair_reductions; do
#     mkdir -p .devbin/ptx/$r; cp target/ptx-corpus/$r/$k.sm_90a.ptx tests/gluon/$k.launch .devbin/ptx/$r/
#   done; done
#   bash docs/hardware/probes/triton-ballots.sh > $OUT/hist-ptx.jsonl
B=.devbin/bwsim
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
for r in 3.6 3.7; do
  for k in register_gather_histogram pair_reductions; do
    for s in 0 1; do
      echo "== PTX $r $k seed $s"
      $B gpu .devbin/ptx/$r/$k.sm_90a.ptx --launch .devbin/ptx/$r/$k.launch --seed $s --json
    done
  done
  for k in register_gather_histogram pair_reductions; do
    echo "== TTGIR $r $k"
    $B gpu tests/gluon/$r/$k.sm_90a.ttgir --seed 0 --json
  done
done
echo "== TTGIR 3.9 register_gather_histogram"
$B gpu tests/gluon/3.9/register_gather_histogram.sm_90a.ttgir --seed 0 --json
