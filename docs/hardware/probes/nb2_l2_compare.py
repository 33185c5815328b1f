#!/usr/bin/env python3
"""The nb2-l2 probe (data/2026-11-25/nb2-l2.jsonl) against `bwsim time --chip h100`.

Prints each probe that reads HBM (the L2-warm ones cannot be modelled: every modelled launch
starts with a cold L2), measured and predicted microseconds and the error, then the mean
absolute error. Extra arguments are passed to `bwsim time` as `--set FIELD=VALUE`, e.g.
`wgmma_queue_instrs=6.5`. BWSIM names the binary (default target/release/bwsim).

  docs/hardware/probes/nb2_l2_compare.py [FIELD=VALUE ...]
"""

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
BWSIM = os.environ.get("BWSIM", os.path.join(ROOT, "target/release/bwsim"))
DATA = os.path.join(ROOT, "docs/hardware/data/2026-11-25/nb2-l2.jsonl")


def predict(r: dict, sets: list[str]) -> float:
    cmd = [BWSIM, "time", "matmul_pipelined", "--chip", "h100", "--timing-only", "--json"]
    for k in ["M", "N", "K", "BLOCK_K", "NUM_BUFFERS"]:
        cmd += ["--const", f"{k}={r[k]}"]
    cmd += ["--const", "NUM_WARPS=8"]
    for s in sets:
        cmd += ["--set", s]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)["microseconds"]


def main() -> None:
    with open(DATA) as f:
        rows = [json.loads(line) for line in f]
    rows = [r for r in rows if not r["probe"].startswith("warm")]
    with ThreadPoolExecutor(2) as ex:
        preds = list(ex.map(lambda r: predict(r, sys.argv[1:]), rows))
    errs = []
    for r, p in zip(rows, preds, strict=True):
        m = r["out"]["median_ms"] * 1000.0
        e = 100.0 * (p - m) / m
        errs.append(abs(e))
        config = f"{r['probe']:16} BLOCK_K={r['BLOCK_K']:<3} NUM_BUFFERS={r['NUM_BUFFERS']}"
        print(f"{config} measured {m:8.1f} model {p:8.1f} {e:+6.1f} %")
    print(f"mean absolute error {sum(errs) / len(errs):.1f} % over {len(errs)} probes")


if __name__ == "__main__":
    main()
