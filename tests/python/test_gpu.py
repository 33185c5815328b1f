"""`run(..., device="gpu")`: bwsim's PTX on the local GPU, compared with the simulator.

Without a GPU the call raises `NoGpu` (checked here, skipped where a GPU is present); with an
sm_90a GPU tutorial 05's small MMA with A in registers runs and matches bit for bit (skipped,
with the reason printed, where there is none).
"""

import subprocess

import numpy as np
import pytest
from wgmma_regs import wgmma_regs_kernel

import bwsim
import bwsim.gluon as bg


def local_gpu() -> str | None:
    """The local GPU as `bwsim gpu --probe` names it, or None."""
    p = subprocess.run([bwsim.binary(), "gpu", "--probe"], capture_output=True, text=True, check=False)
    return p.stdout.strip() if p.returncode == 0 else None


def small_mma(rng: np.random.Generator, acc: type) -> tuple[list, np.ndarray, np.ndarray]:
    a = rng.standard_normal((64, 64)).astype(np.float16)
    b = rng.standard_normal((64, 128)).astype(np.float16)
    c = rng.standard_normal((64, 128)).astype(acc)
    d = np.zeros((64, 128), acc)
    descs = [bg.TensorDescriptor.from_tensor(x, list(x.shape)) for x in (a, b, c, d)]
    want = a.astype(np.float64) @ b.astype(np.float64) + c.astype(np.float64)
    return descs, d, want


def run_small_mma(descs: list, device: str, instr_n: int = 128) -> bg.RunResult | bg.GpuResult:
    """Tutorial 05's kernel on `descs` (`small_mma`'s), A in registers, for sm_90a on `device`."""
    return bg.run(
        wgmma_regs_kernel,
        (1,),
        *descs,
        LHS_IN_REG=True,
        TRANSPOSE_B=False,
        INSTR_N=instr_n,
        target="sm_90a",
        device=device,
    )


def test_device_is_sim_or_gpu(rng):
    descs, _, _ = small_mma(rng, np.float32)
    with pytest.raises(bwsim.ArgumentError, match="device: `tpu`"):
        run_small_mma(descs, "tpu")


def test_without_a_gpu_device_gpu_raises_no_gpu(rng):
    gpu = local_gpu()
    if gpu is not None:
        pytest.skip(f"a GPU is present ({gpu}): test_on_a_gpu_a_in_registers_matches_bit_for_bit runs instead")
    descs, d, _ = small_mma(rng, np.float32)
    with pytest.raises(bwsim.NoGpu, match="no CUDA driver/GPU found"):
        run_small_mma(descs, "gpu")
    assert not d.any(), "nothing is written back when nothing ran"


@pytest.mark.parametrize("acc", [np.float32, np.float16])
def test_on_a_gpu_a_in_registers_matches_bit_for_bit(rng, acc):
    gpu = local_gpu()
    if gpu is None or "sm_90a" not in gpu:
        pytest.skip(f"needs an sm_90a GPU; bwsim gpu --probe says: {gpu or 'none'}")
    descs, d, want = small_mma(rng, acc)
    r = run_small_mma(descs, "gpu", instr_n=128 if acc is np.float32 else 64)
    assert (r.result, r.max_err) == ("pass", 0.0)
    assert r.written == ["d_desc"]
    np.testing.assert_allclose(d.astype(np.float64), want, atol=0.5 if acc is np.float16 else 1e-3, rtol=1e-2)
