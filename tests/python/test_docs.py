"""docs/python.md tells the truth: the kernels it prints are the test files' (3.9's API and 3.6's),
and its script runs as printed, with the kernel the installed Triton compiles, printing what its
comments say (the run's outcome, the planted bug's code and line, the timed FLOPs)."""

import re
import subprocess
import sys

import bwsim.gluon as bg
from conftest import HERE, lines_of

DOC = HERE.parent.parent / "docs" / "python.md"
TRITON = tuple(int(x) for x in bg.TRITON_VERSION.split(".")[:2])


def blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)


def kernel_of(path):
    text = path.read_text()
    return text[text.index("@gluon.jit") :]


def test_the_printed_kernels_are_the_test_files():
    for name in ("user_matmul.py", "user_matmul_36.py"):
        assert any(kernel_of(HERE / name) in b for b in blocks()), f"docs/python.md does not print {name}'s kernel"


def test_the_script_runs_as_printed():
    script = next(b for b in blocks() if b.startswith("import numpy as np"))
    assert "from user_matmul import matmul_kernel" in script
    if TRITON >= (3, 8):
        kernel_file = HERE / "user_matmul.py"
    else:
        # docs/python.md: "runs as printed with `from user_matmul_36 import matmul_kernel`"
        script = script.replace("from user_matmul import matmul_kernel", "from user_matmul_36 import matmul_kernel")
        kernel_file = HERE / "user_matmul_36.py"
    p = subprocess.run(
        [sys.executable, "-c", script], cwd=HERE, capture_output=True, text=True, timeout=600, check=False
    )
    assert p.returncode == 0, p.stderr
    printed = re.findall(r"print\(.*\)\s+# (.*)", script)
    assert len(printed) == 3
    load_a = lines_of(kernel_file, "(a_desc, [off_m, k]")[0]
    if kernel_file.name == "user_matmul_36.py":
        # The 3.6 section states the line its kernel reports.
        assert f"(`write-while-in-flight {load_a}`)" in DOC.read_text()
        printed[1] = f"write-while-in-flight {load_a}"
    else:
        assert printed[1] == f"write-while-in-flight {load_a}"
    assert p.stdout.strip().splitlines() == printed
