#!/usr/bin/env python3
"""Compare two TTGIR files as programs: the same operations, types, layouts and attributes, in the
same order, whatever their source locations and value names.

    python3 tools/ttgir_diff.py OLD.ttgir NEW.ttgir            # exit 0 if the same program, else 1
    python3 tools/ttgir_diff.py --dirs OLD_DIR NEW_DIR         # every *.ttgir of OLD_DIR against NEW_DIR
    python3 tools/ttgir_diff.py --print FILE.ttgir             # the normalised text

Normalising drops comment lines (`// triton-version: ...`), the `#locN = loc(...)` definitions and
every `loc(...)` reference, and renames SSA values (`%a_desc`, `%xoff_12`, `%0`, `%acc.phase_2`) to
`%v0`, `%v1`, ... in order of first appearance. What remains differs only where the operations do:
a kernel ported to another spelling of the same Gluon API compiles to the same program when this
prints nothing.
"""

from __future__ import annotations

import argparse
import difflib
import os
import re
import signal
import sys

_SSA = re.compile(r"%[A-Za-z0-9_$.#-]+")
_DIVISIBILITY = re.compile(r" \{tt\.divisibility = 16 : i32\}")
_LOC_DEF = re.compile(r"^#loc[0-9]*\s*=")


def _strip_locs(line: str) -> str:
    """Remove every `loc(...)` (balanced parentheses, strings skipped) and the space before it."""
    out: list[str] = []
    i = 0
    n = len(line)
    while i < n:
        if line.startswith("loc(", i) and (i == 0 or not (line[i - 1].isalnum() or line[i - 1] in "_.#")):
            depth = 0
            j = i + 3
            in_str = False
            while j < n:
                c = line[j]
                if in_str:
                    if c == "\\":
                        j += 1
                    elif c == '"':
                        in_str = False
                elif c == '"':
                    in_str = True
                elif c == "(":
                    depth += 1
                elif c == ")":
                    depth -= 1
                    if depth == 0:
                        break
                j += 1
            while out and out[-1] == " ":
                out.pop()
            i = j + 1
            continue
        out.append(line[i])
        i += 1
    return "".join(out).rstrip()


def normalise(text: str, ignore_divisibility: bool = False) -> list[str]:
    """The program of a TTGIR text, one line per line, without locations and with canonical value names
    (and without the parameters' `tt.divisibility = 16` if `ignore_divisibility`)."""
    names: dict[str, str] = {}

    def rename(m: re.Match[str]) -> str:
        return names.setdefault(m.group(0), f"%v{len(names)}")

    lines = []
    for raw in text.splitlines():
        s = raw.strip()
        if not s or s.startswith("//") or _LOC_DEF.match(s):
            continue
        line = _SSA.sub(rename, _strip_locs(raw))
        if ignore_divisibility:
            line = _DIVISIBILITY.sub("", line)
        lines.append(line)
    return lines


def diff(old_path: str, new_path: str, ignore_divisibility: bool = False) -> list[str]:
    """A unified diff of the two normalised programs (empty when they are the same)."""
    with open(old_path) as f:
        old = normalise(f.read(), ignore_divisibility)
    with open(new_path) as f:
        new = normalise(f.read(), ignore_divisibility)
    return list(difflib.unified_diff(old, new, old_path, new_path, lineterm="", n=2))


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("paths", nargs="+")
    p.add_argument("--dirs", action="store_true", help="compare the *.ttgir files of two folders")
    p.add_argument("--print", action="store_true", help="print one file's normalised text")
    p.add_argument("-q", "--quiet", action="store_true", help="name the files that differ, no diff")
    p.add_argument(
        "--ignore-divisibility",
        action="store_true",
        help="ignore `{tt.divisibility = 16 : i32}` on parameters (alignment hints)",
    )
    a = p.parse_args(argv)
    if a.print:
        for path in a.paths:
            with open(path) as f:
                print("\n".join(normalise(f.read(), a.ignore_divisibility)))
        return 0
    if len(a.paths) != 2:
        p.error("give two files (or two folders with --dirs)")
    pairs: list[tuple[str, str]] = []
    if a.dirs:
        old_dir, new_dir = a.paths
        for name in sorted(os.listdir(old_dir)):
            if name.endswith(".ttgir"):
                other = os.path.join(new_dir, name)
                if not os.path.exists(other):
                    print(f"{name}: missing in {new_dir}")
                    continue
                pairs.append((os.path.join(old_dir, name), other))
    else:
        pairs.append((a.paths[0], a.paths[1]))
    status = 0
    for old, new in pairs:
        d = diff(old, new, a.ignore_divisibility)
        if d:
            status = 1
            print(f"{os.path.basename(old)}: differs ({sum(1 for x in d if x[:1] in '+-') - 2} lines)")
            if not a.quiet:
                print("\n".join(d))
        elif a.dirs:
            print(f"{os.path.basename(old)}: same")
    return status


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # quiet when piped into `head`
    sys.exit(main(sys.argv[1:]))
