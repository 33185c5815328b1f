"""The package's promise on a kernel it has never seen: a tcgen05 matmul written in
user_matmul.py (Triton 3.9's Gluon API, which 3.8 reads too) or user_matmul_36.py (3.6's, which
3.7 reads too), whichever the installed Triton compiles, runs and matches `a @ b`; without its MMA
wait the checker raises HazardError at the line of the overwriting TMA load; the timing model
counts its FLOPs."""

import json
from pathlib import Path

import numpy as np
import pytest

import bwsim
import bwsim.gluon as bg
from conftest import HERE, at_lines, lines_of

if tuple(int(x) for x in bg.TRITON_VERSION.split(".")[:2]) >= (3, 8):
    from user_matmul import matmul_kernel

    USER = HERE / "user_matmul.py"
else:
    from user_matmul_36 import matmul_kernel

    USER = HERE / "user_matmul_36.py"
M, N, K = 256, 256, 192


def operands(rng: np.random.Generator):
    a = rng.standard_normal((M, K)).astype(np.float16)
    b = rng.standard_normal((K, N)).astype(np.float16)
    c = np.zeros((M, N), np.float32)
    descs = (
        bg.TensorDescriptor.from_tensor(a, [128, 64]),
        bg.TensorDescriptor.from_tensor(b, [64, 128]),
        bg.TensorDescriptor.from_tensor(c, [128, 128]),
    )
    return a, b, c, descs


def test_user_matmul_matches_numpy(rng):
    a, b, c, descs = operands(rng)
    a0, b0 = a.copy(), b.copy()
    r = bg.run(matmul_kernel, (M // 128, N // 128), *descs, K)
    assert r.outcome == "completed" and r.steps > 0
    assert r.counters["mmas"] > 0
    assert r.written == ["c_desc"]
    # fp16 products are exact in fp32; only the summation order differs from numpy's.
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4, atol=1e-3)
    np.testing.assert_array_equal(a, a0)
    np.testing.assert_array_equal(b, b0)


def test_missing_mma_wait_is_a_hazard_at_the_users_line(rng):
    _, _, c, descs = operands(rng)
    with pytest.raises(bwsim.HazardError) as e:
        bg.check(matmul_kernel, (1, 1), *descs, K, WAIT_MMA=False, schedules=8)
    load_a = set(lines_of(USER, "(a_desc, [off_m, k]"))
    mma = set(lines_of(USER, "tcgen05_mma(a_smem"))
    overwrite = [d for d in e.value.diagnostics if d["code"] == "write-while-in-flight"]
    assert overwrite, str(e.value)
    d = next(d for d in overwrite if d["line"] in load_a)
    assert Path(d["file"]).resolve() == USER.resolve()
    assert at_lines(d, USER, mma), d
    assert d["severity"] == "error" and isinstance(d["seed"], int)
    text = str(e.value)
    assert "error[write-while-in-flight]" in text
    assert f"{USER.name}:{d['line']}:" in text
    assert "bwsim.gluon.check(kernel, grid, *args, seed=" in text
    assert not c.any(), "check must not write the caller's arrays"


def test_the_correct_matmul_checks_clean(rng):
    _, _, _, descs = operands(rng)
    report = bg.check(matmul_kernel, (M // 128, N // 128), *descs, K, schedules=12)
    assert report.schedules == 12
    assert [d for d in report.diagnostics if d["severity"] == "error"] == []


def test_time_counts_the_matmuls_flops(rng):
    _, _, _, descs = operands(rng)
    t = bg.time(matmul_kernel, (M // 128, N // 128), *descs, K, chip="gb200")
    assert t["chip"] == "gb200"
    assert t["flops"] == 2 * M * N * K
    assert t["microseconds"] > 0 and t["tflops"] > 0
    assert t["critical"]


def test_traces_are_written(rng, tmp_path):
    _, _, _, descs = operands(rng)
    text, chrome = tmp_path / "run.txt", tmp_path / "run.json"
    bg.run(matmul_kernel, (1, 1), *descs, K, trace=text, chrome=chrome)
    assert "tcgen05.mma" in text.read_text()
    events = json.loads(chrome.read_text())
    assert isinstance(events, (list, dict)) and events


def test_simulate_runs_an_unchanged_launch(rng):
    a, b, c, descs = operands(rng)
    with bg.simulate(check=True, schedules=4):
        matmul_kernel[(M // 128, N // 128)](*descs, K)
        with pytest.raises(bwsim.HazardError):
            matmul_kernel[(1, 1)](*descs, K, WAIT_MMA=False)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32), rtol=1e-4, atol=1e-3)
    # Outside the block the launch is Triton's again (which needs a GPU here).
    from triton.experimental.gluon._runtime import GluonJITFunction

    assert GluonJITFunction.run is not bg.run
    assert GluonJITFunction.run.__name__ == "run"


def test_time_reports_hazards_and_refusals(rng):
    _, _, _, descs = operands(rng)
    # The functional run before timing stops at the hazard the missing wait causes.
    with pytest.raises(bwsim.HazardError):
        bg.time(matmul_kernel, (1, 1), *descs, K, WAIT_MMA=False)
    # tcgen05 compiled for an H100 (sm_90a): Triton 3.6 to 3.8's compiler aborts the process it
    # ran in (not this one: a CompileError), Triton 3.9's raises its own error, which reaches the
    # caller unchanged.
    with pytest.raises(
        (bwsim.CompileError, RuntimeError),
        match="while compiling `matmul_kernel` for sm_90a|error encountered during parsing",
    ):
        bg.time(matmul_kernel, (1, 1), *descs, K, chip="h100")


def test_time_sweeps_configurations_ranked(rng):
    _, _, _, descs = operands(rng)
    grid = (M // 128, N // 128)
    s = bg.time(matmul_kernel, grid, *descs, K, chip="gb200", sweep={"num_warps": [8, 4, 3]})
    assert s["chip"] == "gb200"
    rows = s["configs"]
    assert sorted(r["config"]["num_warps"] for r in rows[:2]) == [4, 8]
    assert rows[0]["microseconds"] <= rows[1]["microseconds"] and rows[0]["slowdown"] == 1.0
    # Each row is the prediction a single timing-only call of that configuration makes.
    for r in rows[:2]:
        single = bg.time(matmul_kernel, grid, *descs, K, chip="gb200", timing_only=True, **r["config"])
        assert r["microseconds"] == single["microseconds"]
        assert r["report"]["flops"] == 2 * M * N * K
    # Three warps is no launch Triton compiles: listed last, with the reason.
    assert rows[2]["config"] == {"num_warps": 3} and "error" in rows[2]
    with pytest.raises(bwsim.ArgumentError):
        bg.time(matmul_kernel, grid, *descs, K, sweep={"WAIT_MMA": []})
