#!/usr/bin/env python3
"""Compile one Gluon kernel to TTGIR for sm_100a or sm_90a, with no GPU and no torch.

    pip install triton==3.9.0                   # or 3.6.0, 3.7.x, 3.8.x
    python3 tools/gluon_to_ttgir.py my_kernels.py my_kernel --target sm_100a --num-warps 4 \\
        --arg a_desc='desc<fp32[32, 64]>' --arg n=i32 -D BLOCK=64 -o my_kernel.ttgir
    bwsim check my_kernel.ttgir

Every non-constexpr parameter of the kernel needs an `--arg NAME=TYPE`:
  i32, i64, fp32, ...              a scalar (Triton's signature names)
  *fp16, *i32, ...                 a global pointer
  TYPE:16                          a pointer or integer known to be a multiple of 16 (bytes for a
                                   pointer): `tt.divisibility = 16` on the parameter, as Triton's
                                   launcher specializes an argument that is (`--arg 'n=i32:16'`)
  desc<fp16[128, 64]>              a TMA tensor descriptor with the block [128, 64] and
                                   NVMMASharedLayout.get_default_for(block, dtype)
  desc<bf16[1, 64], [128, 64]>     the same, with the default layout of another shape (the
                                   gather/scatter descriptors of Gluon tutorial 09)
  desc<fp16[256, 64], cga=[[1, 0]]>  the default layout split over the CTAs of a cluster
                                   (`cga_layout`, Triton 3.7+): [[1, 0]] halves the rows between
                                   two CTAs, [[0, 0]] gives both the whole block (multicast)
  tensordesc<...>                  Triton's own descriptor signature, passed through
Every constexpr parameter needs a `-D NAME=VALUE`; VALUE is a Python expression evaluated in
the kernel's module (`-D num_buffers=3`, `-D MMAImpl=WGMMA`, `-D Sched='Grouped(8)'`). A
parameter named `num_warps` gets the value of `--num-warps`.

Pointer alignment: launched through `kernel[grid](...)`, Triton marks every pointer argument whose
address is a multiple of 16 bytes (every freshly allocated array) with `tt.divisibility = 16`, and
the lowering uses it (cp.async copies of 16 bytes, vector loads and stores). `--aligned`, the
default, does the same for every pointer parameter; `--no-aligned` marks only the `:16` ones.

`--allocation` writes the TTGIR after Triton's shared-memory allocation pass (the first step of
its lowering to LLVM): `allocation.offset` on each buffer and on each operation with shared
scratch, such as a layout conversion across warps, whose scratch may lie over a buffer still read
by a TMA store in flight. bwsim models that scratch traffic where the offsets are present.

`--num-ctas N` compiles for clusters of N CTAs (Triton's `num_ctas` option, `ttg.num-ctas` in the
module): multicast TMA, cluster barriers, two-CTA MMAs.

The Tritons this reads are 3.6.0, 3.7.x, 3.8.x and 3.9.x; any other is refused. The output's first
line is `// triton-version: X.Y.Z`, the Triton that compiled it.

Locations in the output are rewritten so that the file does not depend on where it was made:
source files become paths relative to the output file's directory, files of the Triton
package become `<triton>/...`. bwsim reads the Python files next to the .ttgir to quote the
lines its diagnostics point at.
"""

import argparse
import ast
import importlib.util
import os
import re
import sys

# Leave no __pycache__ next to the user's files (nor in the repository's python/).
sys.dont_write_bytecode = True
# What is shared with the Python package: the supported releases, the launcher's specialization,
# descriptor signatures and the compile call (python/bwsim/_triton.py). It needs no Triton to import.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))
from bwsim import _triton  # noqa: E402
from bwsim.errors import TritonMissing  # noqa: E402


def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("module", help="the Python file that defines the kernel")
    p.add_argument("kernel", help="the @gluon.jit kernel's name in that module")
    p.add_argument("--target", choices=["sm_100a", "sm_90a"], default="sm_100a")
    p.add_argument("--num-warps", type=int, default=4)
    p.add_argument("--num-ctas", type=int, default=1, help="CTAs per cluster (Triton's num_ctas)")
    p.add_argument("--debug", action="store_true",
                   help="Triton's debug option: device assertions (gl.device_assert) are compiled in")
    p.add_argument("--aligned", action=argparse.BooleanOptionalAction, default=True,
                   help="mark every pointer parameter 16-byte aligned, as Triton's launcher does for "
                        "aligned arrays (default: on)")
    p.add_argument("--arg", action="append", default=[], metavar="NAME=TYPE", help="a runtime parameter's type")
    p.add_argument("-D", dest="consts", action="append", default=[], metavar="NAME=VALUE",
                   help="a constexpr parameter's value (a Python expression)")
    p.add_argument("--allocation", action="store_true",
                   help="run Triton's shared-memory allocation pass on the TTGIR: each buffer and each "
                        "operation with shared scratch carries its `allocation.offset` (bwsim then models "
                        "the scratch traffic of layout conversions over the buffers it overlaps)")
    p.add_argument("-o", "--output", required=True, help="the .ttgir file to write")
    p.add_argument("--locations-relative-to", metavar="DIR",
                   help="write source paths relative to DIR (default: the output file's directory)")
    return p.parse_args(argv)


def fail(msg):
    print(f"gluon_to_ttgir: error: {msg}", file=sys.stderr)
    sys.exit(2)


def split_pairs(items, what):
    out = {}
    for item in items:
        if "=" not in item:
            fail(f"{what} `{item}` is not NAME=VALUE")
        k, v = item.split("=", 1)
        out[k.strip()] = v.strip()
    return out


def load_module(path):
    path = os.path.abspath(path)
    if not os.path.exists(path):
        fail(f"no such file: {path}")
    sys.path.insert(0, os.path.dirname(path))
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def check_triton_version():
    """The installed Triton's version, or a clear refusal if bwsim does not read its TTGIR."""
    try:
        return _triton.require_triton()
    except TritonMissing as e:
        fail(str(e))


DIVISIBLE_RE = re.compile(r"^(.*?)\s*:\s*(\d+)$")


def split_divisibility(text):
    """`*fp32:16` -> (`*fp32`, 16); `i32` -> (`i32`, None)."""
    m = DIVISIBLE_RE.match(text)
    if not m or "<" in text:  # descriptors carry no divisibility
        return text, None
    if m.group(2) != "16":
        fail(f"`{text}`: the only divisibility Triton specializes on is 16")
    return m.group(1), 16


DESC_RE = re.compile(r"^desc<\s*(\w+)\s*\[([^\]]*)\]\s*(?:,\s*\[([^\]]*)\])?\s*(?:,\s*cga\s*=\s*(\[.*\]))?\s*>$")


def signature_type(text):
    """Expand the `desc<...>` shorthand into Triton's `tensordesc<...>` signature string."""
    m = DESC_RE.match(text)
    if not m:
        return text
    dtype_name, block, layout_shape, cga = m.group(1), m.group(2), m.group(3), m.group(4)
    block = [int(x) for x in block.split(",")]
    shape = [int(x) for x in layout_shape.split(",")] if layout_shape else block
    cga_layout = None
    if cga:
        try:
            cga_layout = ast.literal_eval(cga)
        except (ValueError, SyntaxError):
            fail(f"`{text}`: cga={cga} is not a list of bases such as [[1, 0]]")
    layout = _triton.default_layout(shape, dtype_name, cga_layout)
    return _triton.descriptor_signature(dtype_name, block, layout)


def specialise(a):
    """The kernel `a.kernel` of `a.module` and what `triton.compile` takes for it from the
    arguments `a` (`parse_args`): `(fn, signature, constexprs, attrs)`. Fails on a parameter the
    arguments leave out and on an argument the kernel has no parameter for."""
    module = load_module(a.module)
    fn = getattr(module, a.kernel, None)
    if fn is None or not hasattr(fn, "params"):
        fail(f"`{a.kernel}` is not a @gluon.jit function of {a.module}")
    args = split_pairs(a.arg, "--arg")
    consts = split_pairs(a.consts, "-D")
    signature, constexprs, attrs = {}, {}, {}
    for i, p in enumerate(fn.params):
        if p.is_constexpr:
            if p.name == "num_warps" and p.name not in consts:
                value = a.num_warps
            elif p.name in consts:
                try:
                    value = eval(consts.pop(p.name), vars(module))
                except Exception as e:  # report the user's expression, not a traceback
                    fail(f"-D {p.name}: {e}")
            elif p.has_default:
                value = p.default
            else:
                fail(f"constexpr parameter `{p.name}` needs -D {p.name}=VALUE")
            signature[p.name] = "constexpr"
            constexprs[p.name] = value
        else:
            if p.name not in args:
                fail(f"parameter `{p.name}` needs --arg {p.name}=TYPE")
            ty, divisible = split_divisibility(args.pop(p.name))
            if divisible is None and a.aligned and ty.startswith("*"):
                divisible = 16
            if divisible is not None:
                if not (ty.startswith("*") or re.fullmatch(r"[iu](8|16|32|64)", ty)):
                    fail(f"--arg {p.name}: only pointers and integers take `:16`, not `{ty}`")
                # As JITFunction.run hands them to triton.compile: {(index,): [[attribute, value]]}.
                attrs[(i, )] = [["tt.divisibility", divisible]]
            signature[p.name] = signature_type(ty)
    for extra in list(args) + list(consts):
        fail(f"`{a.kernel}` has no parameter `{extra}`")
    return fn, signature, constexprs, attrs


def main(argv):
    a = parse_args(argv)
    # Triton 3.9 warns when the FP-fusion default is left implicit; fusion changes the PTX, not
    # the TTGIR, and this keeps the default of every release.
    os.environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")
    check_triton_version()

    fn, signature, constexprs, attrs = specialise(a)
    ttgir = _triton.compile_ttgir(fn, signature, constexprs, attrs, a.target, a.num_warps, a.num_ctas, a.debug)
    if a.allocation:
        ttgir = _triton.allocate_shared_memory(ttgir)
    out = os.path.abspath(a.output)
    base = os.path.abspath(a.locations_relative_to) if a.locations_relative_to else os.path.dirname(out)
    text = _triton.relocate(ttgir, base)
    with open(out, "w") as f:
        f.write(text)


if __name__ == "__main__":
    main(sys.argv[1:])
    # Triton 3.9's bindings report reference leaks at interpreter exit (nanobind); the output is
    # written, so leave without the teardown that prints them.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
