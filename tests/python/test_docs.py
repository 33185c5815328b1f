"""docs/python.md tells the truth: its ten-line script runs as printed."""

import re
import subprocess
import sys

from conftest import HERE

DOC = HERE.parent.parent / "docs" / "python.md"


def test_the_ten_line_script_runs():
    script = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    assert len(script.strip().splitlines()) <= 13
    p = subprocess.run(
        [sys.executable, "-c", script], cwd=HERE, capture_output=True, text=True, timeout=300, check=False
    )
    assert p.returncode == 0, p.stderr
    printed = re.search(r"print\(result.outcome, result.steps\)\s+# (.*)", script).group(1)
    assert p.stdout.strip() == printed
