//! Unit tests of the inline-PTX interpreter against hand-computed values.

use super::*;
use crate::types::DType::*;

fn run1(asm: &str, cons: &str, args: &[DType], res: &[DType], pack: usize, input: &[u64]) -> Vec<u64> {
    let p = compile(asm, cons, args, res, pack).unwrap_or_else(|e| panic!("{e}"));
    p.run(input).unwrap_or_else(|e| panic!("{e}"))
}

fn f(x: f32) -> u64 {
    x.to_bits() as u64
}

#[test]
fn paired_f32_through_64_bit_registers() {
    let pack = "mov.b64 $0, { $1, $2 };";
    assert_eq!(run1(pack, "=l,r,r", &[F32, F32], &[I64], 1, &[f(1.5), f(-2.0)]), vec![f(-2.0) << 32 | f(1.5)]);
    let unpack = "mov.b64 { $0, $1 }, $2;";
    assert_eq!(run1(unpack, "=r,=r,l", &[I64], &[F32, F32], 1, &[f(-2.0) << 32 | f(1.5)]), vec![f(1.5), f(-2.0)]);
    let add = "add.f32x2 $0, $1, $2;";
    let a = f(1.0) << 32 | f(0.1);
    let b = f(2.0) << 32 | f(0.2);
    assert_eq!(run1(add, "=l,l,l", &[I64, I64], &[I64], 1, &[a, b]), vec![f(3.0) << 32 | f(0.1 + 0.2)]);
    let fma = "fma.rn.f32x2 $0, $1, $2, $3;";
    let c = f(-1.0) << 32 | f(1e-8);
    let want = f(1.0f32.mul_add(2.0, -1.0)) << 32 | f(0.1f32.mul_add(0.2, 1e-8));
    assert_eq!(run1(fma, "=l,l,l,l", &[I64, I64, I64], &[I64], 1, &[a, b, c]), vec![want]);
}
