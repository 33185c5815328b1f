"""The compiled `bwsim` command shipped in the wheel, and how it is called (JSON on stdout)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path
from typing import Any

from .errors import BwsimError


def binary() -> str:
    """The `bwsim` executable: `$BWSIM_BIN`, else the one installed beside this package's
    Python (the wheel's script), else the first on `PATH`."""
    env = os.environ.get("BWSIM_BIN")
    if env:
        return env
    exe = "bwsim.exe" if sys.platform == "win32" else "bwsim"
    for scheme_dir in (sysconfig.get_path("scripts"), os.path.dirname(sys.executable)):
        cand = Path(scheme_dir) / exe
        if cand.is_file():
            return str(cand)
    found = shutil.which("bwsim")
    if found:
        return found
    raise BwsimError("the `bwsim` executable is missing: reinstall the package (pip install bwsim)")


def call(
    args: list[str], timeout: float | None = None, statuses: tuple[int, ...] = (0, 1)
) -> tuple[int, dict[str, Any], str]:
    """Run `bwsim ARGS --json`; returns (exit status, the JSON object, stderr).

    A status outside `statuses` (0 and 1: the kernel passed or failed), or output that is not
    JSON, is an internal error of bwsim or a refused command line and raises `BwsimError` with
    bwsim's own message.
    """
    try:
        p = subprocess.run(
            [binary(), *args, "--json"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired as e:
        raise BwsimError(f"bwsim {args[0]} did not finish within {timeout} s") from e
    if p.returncode in statuses:
        try:
            return p.returncode, json.loads(p.stdout), p.stderr
        except json.JSONDecodeError:
            pass
    msg = p.stderr.strip() or p.stdout.strip() or f"exit status {p.returncode}"
    if msg.startswith("error: "):
        msg = msg[len("error: ") :]
    raise BwsimError(f"bwsim {args[0]}: {msg}")
