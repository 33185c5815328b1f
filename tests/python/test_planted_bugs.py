"""Each bug of tests/gluon/planted_bugs.py, launched from Python: `bwsim.gluon.check` raises
HazardError with the catalogue's code at the Python line of the mistake (except the matmul's
missing fence, which Triton 3.7 and later put back), `run` of the parity bug
raises Deadlock with its wait-for graph, and the correct kernels run clean and compute a + b and
a @ b."""

import numpy as np
import pytest

import bwsim
import bwsim.gluon as bg
from conftest import GLUON, at_lines, lines_of

PY = GLUON / "planted_bugs.py"


def bug_line(marker: str) -> int:
    """The line right after the `# BUG: ...` comment that contains `marker`."""
    comments = [ln for ln in lines_of(PY, "# BUG:") if marker in PY.read_text().splitlines()[ln - 1]]
    assert len(comments) == 1, marker
    return comments[0] + 1


def ws_add(rng, bug: str, op=bg.check, **kw):
    import planted_bugs

    a = rng.standard_normal((32, 384), dtype=np.float32)
    b = rng.standard_normal((32, 384), dtype=np.float32)
    c = np.zeros_like(a)
    descs = [bg.TensorDescriptor.from_tensor(x, [32, 64]) for x in (a, b, c)]
    r = op(
        planted_bugs.ws_add_kernel,
        (1,),
        *descs,
        32,
        384,
        XBLOCK=32,
        YBLOCK=64,
        NUM_LOAD_BUFFERS=2,
        NUM_STORE_BUFFERS=2,
        BUG=bug,
        **kw,
    )
    return r, a, b, c


def pipelined_matmul(rng, bug: str, op=bg.check, **kw):
    import planted_bugs

    a = rng.standard_normal((128, 256)).astype(np.float16)
    b = rng.standard_normal((256, 256)).astype(np.float16)
    c = np.zeros((128, 256), np.float16)
    descs = (
        bg.TensorDescriptor.from_tensor(a, [128, 64]),
        bg.TensorDescriptor.from_tensor(b, [64, 256]),
        bg.TensorDescriptor.from_tensor(c, [128, 256]),
    )
    r = op(planted_bugs.pipelined_matmul_kernel, (1, 1), *descs, num_buffers=3, num_warps=8, BUG=bug, **kw)
    return r, a, b, c


def hazard(launch, rng, bug: str, code: str) -> list[dict]:
    with pytest.raises(bwsim.HazardError) as e:
        launch(rng, bug, schedules=8)
    found = [d for d in e.value.diagnostics if d["code"] == code]
    assert found, f"no {code}:\n{e.value}"
    return found


@pytest.mark.parametrize("launch", [ws_add, pipelined_matmul])
def test_wrong_parity_is_a_deadlock_at_the_wait(rng, launch):
    line = bug_line("fresh barrier") if launch is ws_add else bug_line("off by one")
    found = hazard(launch, rng, "wrong_parity", "deadlock")
    assert any(at_lines(d, PY, {line}) for d in found), found
    with pytest.raises(bwsim.Deadlock) as e:
        launch(rng, "wrong_parity", op=bg.run)
    assert "wait-for cycle" in str(e.value), str(e.value)
    assert any(at_lines(d, PY, {line}) for d in e.value.diagnostics), str(e.value)


@pytest.mark.parametrize("launch", [ws_add, pipelined_matmul])
def test_short_expect_is_a_tx_mismatch_at_the_copies(rng, launch):
    line = bug_line("one of the two loads") if launch is ws_add else bug_line("expects the A tile only")
    found = hazard(launch, rng, "short_expect", "tx-mismatch")
    # The copies that overshoot follow the short expect and its `else` branch.
    assert any(at_lines(d, PY, {line + 3, line + 4}) for d in found), found


def test_ws_add_without_fence_is_a_missing_fence_at_the_copies(rng):
    copies = set(lines_of(PY, "tma.async_load("))
    release = lines_of(PY, "mbarrier.arrive(load_empty_bars.index(load_index), count=1)")[1]
    for d in hazard(ws_add, rng, "no_fence", "missing-fence"):
        assert d["line"] in copies and d["file"].endswith("planted_bugs.py"), d
        assert at_lines(d, PY, {release}), d


def test_ws_add_early_release_is_a_race_with_the_reads(rng):
    reads = {
        lines_of(PY, "a_val = a_bufs.index(load_index).load(layout)")[0],
        lines_of(PY, "b_val = b_bufs.index(load_index).load(layout)")[0],
    }
    found = hazard(ws_add, rng, "early_release", "race")
    assert any(at_lines(d, PY, reads) for d in found), found


def test_matmul_without_fence_is_a_missing_fence_at_the_epilogue_before_triton_3_7(rng):
    """Triton 3.7 and later put the fence before the TMA store of c_smem back when they lower the
    kernel (their proxy-fence pass; bwsim adds the same fence, docs/gluon.md): the kernel checks
    clean. Triton 3.6 does not, and the missing fence is reported at the epilogue."""
    if tuple(int(x) for x in bg.TRITON_VERSION.split(".")[:2]) >= (3, 7):
        report, *_ = pipelined_matmul(rng, "no_fence", schedules=8)
        assert not [d for d in report.diagnostics if d["severity"] == "error"], report.diagnostics
        return
    store = lines_of(PY, "c_smem.store(c.to(dtype))")[0]
    tma_store = lines_of(PY, "tma.async_store(c_desc, [off_m, off_n], c_smem)")[0]
    found = hazard(pipelined_matmul, rng, "no_fence", "missing-fence")
    assert all(at_lines(d, PY, {store}) and at_lines(d, PY, {tma_store}) for d in found), found


def test_matmul_early_release_overwrites_an_mma_operand(rng):
    copies = set(lines_of(PY, "tma.async_load("))
    found = hazard(pipelined_matmul, rng, "early_release", "write-while-in-flight")
    assert any(at_lines(d, PY, copies) for d in found), found


def test_correct_kernels_check_clean_and_compute(rng):
    report, *_ = ws_add(rng, "", schedules=8)
    assert not [d for d in report.diagnostics if d["severity"] == "error"]
    report, *_ = pipelined_matmul(rng, "", schedules=8)
    assert not [d for d in report.diagnostics if d["severity"] == "error"]
    _, a, b, c = ws_add(rng, "", op=bg.run)
    np.testing.assert_array_equal(c, a + b)
    _, a, b, c = pipelined_matmul(rng, "", op=bg.run)
    ref = (a.astype(np.float32) @ b.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(c.astype(np.float32), ref.astype(np.float32), rtol=1e-2, atol=1e-2)
