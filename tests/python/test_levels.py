"""Diagnostic levels from Python: `check` and `run` take `deny=`, `warn=` and `allow=` as
`bwsim check --deny/--warn/--allow` does. A read of unfilled shared memory is a warning by
default (the check passes and reports it), an error with `deny=`, silent with `allow=`."""

import numpy as np
import pytest

import bwsim
import bwsim.gluon as bg
from conftest import HERE, lines_of
from scalar_kernels import unfilled_smem_kernel

PY = HERE / "scalar_kernels.py"


def test_uninit_read_is_a_warning_by_default():
    y = np.zeros(128, np.float32)
    r = bg.check(unfilled_smem_kernel, (1,), y, N=128, schedules=2)
    warn = [d for d in r.diagnostics if d["code"] == "uninit-read"]
    assert warn and all(d["severity"] == "warning" and d["level"] == "warning" for d in warn), r.diagnostics
    assert warn[0]["default_level"] == "warning"
    assert warn[0]["line"] in lines_of(PY, "v = smem.load(layout)")
    # The undefined bytes reach the global store, and the warning says where.
    store = lines_of(PY, "gl.store(y_ptr + gl.arange(0, N, layout), v)")
    assert any(lab["line"] in store and "global store" in lab["message"] for lab in warn[0]["labels"]), warn[0]


@pytest.mark.parametrize("deny", ["uninit-read", ["uninit-read"], "warnings"])
def test_deny_makes_it_an_error(deny):
    y = np.zeros(128, np.float32)
    with pytest.raises(bwsim.HazardError) as e:
        bg.check(unfilled_smem_kernel, (1,), y, N=128, schedules=2, deny=deny)
    assert [d["code"] for d in e.value.diagnostics] == ["uninit-read"]
    assert e.value.diagnostics[0]["level"] == "error"


def test_allow_silences_it_and_run_takes_levels_too():
    y = np.zeros(128, np.float32)
    r = bg.check(unfilled_smem_kernel, (1,), y, N=128, schedules=2, allow=["uninit-read"])
    assert r.diagnostics == []
    assert bg.run(unfilled_smem_kernel, (1,), y, N=128).outcome == "completed"
    with pytest.raises(bwsim.HazardError):
        bg.run(unfilled_smem_kernel, (1,), y, N=128, deny="uninit-read")


def test_bad_levels_are_refused():
    y = np.zeros(128, np.float32)
    with pytest.raises(bwsim.ArgumentError):
        bg.check(unfilled_smem_kernel, (1,), y, N=128, deny=[3])
    with pytest.raises(bwsim.BwsimError, match="not a diagnostic code"):
        bg.check(unfilled_smem_kernel, (1,), y, N=128, deny="no-such-code")
    with pytest.raises(bwsim.BwsimError, match="hard error"):
        bg.check(unfilled_smem_kernel, (1,), y, N=128, allow="deadlock")
