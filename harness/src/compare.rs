//! Element-wise comparison of a GPU output with the simulator's, by the one comparator
//! (`bwsim_kernels::compare`, whose documentation states the rules): bit for bit
//! ([`Check::Exact`]: data movement and elementwise arithmetic, where the hardware's result is
//! defined to the bit) or within `atol + rtol * |sim|` ([`Check::Tolerance`]: MMA results,
//! whose accumulation order the hardware does not specify). Under a tolerance NaNs match NaNs,
//! an infinity matches only the same-sign infinity, and integer outputs compare bit for bit.

use crate::cases::Check;
use bwsim_isa::launch::HostTensor;
use bwsim_kernels::compare::{self as cmp, Tolerance};

/// How two tensors differ.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Elements outside the check.
    pub mismatches: u64,
    /// Largest |gpu - sim| over elements that are both finite (0 when identical).
    pub max_err: f64,
    /// The first few mismatches, described.
    pub first: Vec<String>,
}

/// Compare `gpu` with `sim` (same dtype and shape).
pub fn compare(sim: &HostTensor, gpu: &HostTensor, check: Check) -> Comparison {
    let mut c = Comparison::default();
    if sim.dtype != gpu.dtype || sim.shape != gpu.shape {
        c.mismatches = sim.numel().max(gpu.numel()).max(1);
        c.first.push(format!(
            "shape/type {:?}{:?} vs {:?}{:?}",
            sim.dtype, sim.shape, gpu.dtype, gpu.shape
        ));
        return c;
    }
    // `WgmmaExact` unresolved (see `Check::on`) compares exactly.
    let tol = match check {
        Check::Tolerance { atol, rtol } => Tolerance::Close { atol, rtol },
        Check::Exact | Check::Trap(_) | Check::WgmmaExact { .. } => Tolerance::Exact,
    };
    let m = cmp::elements(gpu, sim, tol, 5);
    c.mismatches = m.count;
    c.max_err = m.max_abs_err;
    c.first = m
        .first
        .iter()
        .map(|&i| {
            let (sb, gb) = (sim.get_bits(i), gpu.get_bits(i));
            let (sv, gv) = (sim.get(i), gpu.get(i));
            let idx = unravel(i, &sim.shape);
            format!("{idx:?}: simulator {sv} (0x{sb:x}), GPU {gv} (0x{gb:x})")
        })
        .collect();
    c
}

/// The multi-index of row-major linear index `i` in `shape`.
pub fn unravel(mut i: u64, shape: &[u64]) -> Vec<u64> {
    let mut idx = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        let e = shape[d].max(1);
        idx[d] = i % e;
        i /= e;
    }
    idx
}

#[cfg(test)]
mod tests {
    use super::*;
    use bwsim_isa::DType;

    fn t(vals: &[f64]) -> HostTensor {
        let mut h = HostTensor::zeros("x", DType::F32, vec![vals.len() as u64]);
        for (i, v) in vals.iter().enumerate() {
            h.set(i as u64, *v);
        }
        h
    }

    #[test]
    fn exact_is_bitwise() {
        let a = t(&[1.0, 2.0, f64::NAN]);
        assert_eq!(compare(&a, &a.clone(), Check::Exact).mismatches, 0);
        let b = t(&[1.0, 2.0000002, f64::NAN]);
        let c = compare(&a, &b, Check::Exact);
        assert_eq!(c.mismatches, 1);
        assert!(c.first[0].starts_with("[1]"), "{:?}", c.first);
        // -0.0 and 0.0 differ in bits.
        assert_eq!(compare(&t(&[0.0]), &t(&[-0.0]), Check::Exact).mismatches, 1);
    }

    #[test]
    fn tolerance_is_absolute_plus_relative() {
        let tol = Check::Tolerance {
            atol: 0.01,
            rtol: 0.001,
        };
        let a = t(&[100.0, 0.0, f64::NAN]);
        // 100 +- (0.01 + 0.1) passes; 0 +- 0.01 passes; NaN matches NaN.
        let b = t(&[100.105, 0.009, f64::NAN]);
        let c = compare(&a, &b, tol);
        assert_eq!(c.mismatches, 0);
        assert!((c.max_err - 0.105).abs() < 1e-4, "{}", c.max_err);
        let b = t(&[100.2, 0.02, 1.0]);
        assert_eq!(compare(&a, &b, tol).mismatches, 3);
    }

    #[test]
    fn a_tolerance_leaves_integer_outputs_exact() {
        let tol = Check::Tolerance {
            atol: 0.0,
            rtol: 1e-3,
        };
        let mut a = HostTensor::zeros("x", DType::I32, vec![2]);
        a.set_bits(0, 100_000);
        a.set_bits(1, 7);
        let mut b = a.clone();
        b.set_bits(0, 100_001); // within 1e-3 relative, but an integer differs
        assert_eq!(compare(&a, &b, tol).mismatches, 1);
        assert_eq!(compare(&a, &a.clone(), tol).mismatches, 0);
    }
}
