"""Per-thread inline PTX through Triton 3.9's `gl.inline_asm`, written for bwsim's tests.

`gl.inline_asm` runs one assembly block per thread over all of its registers of a tensor (the older
`inline_asm_elementwise` runs one snippet per element, or per `pack` elements); the block is generated
by a `@gluon.constexpr_function` from the operand references, one `fma.rn.f32` per register here:
`y = x * scale + x`, then `out = y`. In the TTGIR: `ttg.inline_asm` with one constraint per register.
"""
from triton.experimental import gluon
from triton.experimental.gluon import language as gl


@gluon.constexpr_function
def fma_self_asm(outputs, inputs):
    # outputs: (the result's registers,); inputs: (x's registers, (the scalar scale,)).
    (out,) = outputs
    x, scale = inputs
    return "\n".join(f"fma.rn.f32 {d}, {a}, {scale[0]}, {a};" for d, a in zip(out, x))


@gluon.jit
def inline_asm_kernel(x_ptr, out_ptr, scale, BLOCK: gl.constexpr):
    layout: gl.constexpr = gl.BlockedLayout([4], [32], [gl.num_warps()], [0])
    offs = gl.program_id(0) * BLOCK + gl.arange(0, BLOCK, layout)
    x = gl.load(x_ptr + offs)
    y = gl.inline_asm(fma_self_asm, ("=f", "f", "f"), (x, scale), gl.distributed_type(gl.float32, [BLOCK], layout),
                      is_pure=True)
    gl.store(out_ptr + offs, y)
