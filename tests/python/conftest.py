"""Shared set-up of the Python tests: the Gluon seed kernels (tests/gluon) and this folder's
kernels are importable, and each test's arrays come from a fixed seed."""

import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve().parent
GLUON = HERE.parent / "gluon"
for p in (HERE, GLUON):
    if str(p) not in sys.path:
        sys.path.insert(0, str(p))


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261125)


def lines_of(path: Path, needle: str) -> list[int]:
    """The 1-based lines of `path` that contain `needle` (at least one)."""
    found = [i + 1 for i, line in enumerate(path.read_text().splitlines()) if needle in line]
    assert found, f"no line of {path.name} contains {needle!r}"
    return found


def at_lines(d: dict, path: Path, lines: set[int]) -> bool:
    """Whether the diagnostic's primary span or one of its labels is on one of `lines` of `path`."""
    spans = [(d["file"], d["line"])] + [(lab["file"], lab["line"]) for lab in d["labels"]]
    return any(Path(f).name == path.name and Path(f).resolve() == path.resolve() and ln in lines for f, ln in spans)
