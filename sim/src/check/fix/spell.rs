//! How a suggested statement reads in `.tile` and in Gluon's Python API.
//!
//! Operands are printed as the kernel names them; in an imported Gluon kernel those are the
//! names the importer gave the TTGIR values, so the Gluon spelling names the Python call and
//! keeps the operands as the kernel has them.

use bwsim_isa::ir::{BinOp, Expr, ExprKind, OpKind, UnOp};
use bwsim_isa::printer::{print_expr, print_op_kind};

/// The statement in `.tile`.
pub fn tile(k: &OpKind) -> String {
    print_op_kind(k)
}

fn e(x: &Expr) -> String {
    print_expr(x)
}

/// The statement in Gluon (`fence_async_shared()`, `mbarrier.wait(bar, phase)`), or the
/// `.tile` text where Gluon has no call of its own for it.
pub fn gluon(k: &OpKind) -> String {
    use OpKind as K;
    match k {
        K::FenceAsyncShared {} => "fence_async_shared()".into(),
        // Gluon has no call for it: Triton emits it after every `tma.make_tensor_descriptor`.
        K::TmaDescAcquire { desc } => {
            format!("ttng.tensormap_fenceproxy_acquire of {}'s tensor map", e(desc))
        }
        K::TmaStoreWait { pendings, .. } => format!("tma.store_wait({})", e(pendings)),
        K::CpAsyncWait { pendings } => format!("async_copy.wait_group({})", e(pendings)),
        K::CpAsyncCommit {} => "async_copy.commit_group()".into(),
        K::CpAsyncArrive { bar, noinc } => match noinc {
            Some(n) => format!(
                "async_copy.mbarrier_arrive({}, increment_count={})",
                e(bar),
                if e(n) == "true" { "False" } else { "True" }
            ),
            None => format!("async_copy.mbarrier_arrive({})", e(bar)),
        },
        K::MbarWait { bar, phase } => format!("mbarrier.wait({}, {})", e(bar), e(phase)),
        K::MbarExpect { bar, bytes, .. } => format!("mbarrier.expect({}, {})", e(bar), e(bytes)),
        K::MbarArrive { bar, count, .. } => match count {
            Some(c) => format!("mbarrier.arrive({}, count={})", e(bar), e(c)),
            None => format!("mbarrier.arrive({})", e(bar)),
        },
        K::MbarInit { bar, count } => format!("mbarrier.init({}, count={})", e(bar), e(count)),
        K::MbarInvalidate { bar } => format!("mbarrier.invalidate({})", e(bar)),
        // An assertion restricted to a mask (`cond | !mask`): Gluon's `mask=`.
        K::DeviceAssert { cond, msg } => match &cond.kind {
            ExprKind::Binary(BinOp::BitOr, c, m) => match &m.kind {
                ExprKind::Unary(UnOp::Not, m) => {
                    format!("gl.device_assert({}, {}, mask={})", e(c), e(msg), e(m))
                }
                _ => format!("gl.device_assert({}, {})", e(cond), e(msg)),
            },
            _ => format!("gl.device_assert({}, {})", e(cond), e(msg)),
        },
        _ => tile(k),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spells_a_wait_in_both_languages() {
        let w = OpKind::MbarWait {
            bar: Expr::index(Expr::name("bars"), vec![Expr::name("i")]),
            phase: Expr::binary(BinOp::BitXor, Expr::name("phase"), Expr::int(1)),
        };
        assert_eq!(tile(&w), "mbar.wait bars[i], phase ^ 1");
        assert_eq!(gluon(&w), "mbarrier.wait(bars[i], phase ^ 1)");
        let s = OpKind::TmaStoreWait {
            pendings: Expr::int(1),
            full: None,
        };
        assert_eq!(
            (tile(&s).as_str(), gluon(&s).as_str()),
            ("tma.store_wait 1", "tma.store_wait(1)")
        );
    }

    #[test]
    fn spells_a_masked_assertion_with_gluons_mask() {
        let cond = Expr::binary(BinOp::Lt, Expr::name("x"), Expr::int(64));
        let not_mask = Expr::new(
            ExprKind::Unary(UnOp::Not, Box::new(Expr::name("inside"))),
            bwsim_isa::Span::DUMMY,
        );
        let a = OpKind::DeviceAssert {
            cond: Expr::binary(BinOp::BitOr, cond, not_mask),
            msg: Expr::new(ExprKind::Str("bad".into()), bwsim_isa::Span::DUMMY),
        };
        assert_eq!(tile(&a), "device.assert (x < 64) | !inside, \"bad\"");
        assert_eq!(gluon(&a), "gl.device_assert(x < 64, \"bad\", mask=inside)");
    }
}
