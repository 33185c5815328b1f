//! Typing of `inline_asm`: the argument tiles and scalars, the result types, and the snippet
//! checked once by [`crate::inline_ptx::compile`] (kept in [`Checked`] for the simulator and
//! the backends).

use super::*;
use crate::inline_ptx;
use std::sync::Arc;

impl<'k> Cx<'k> {
    #[allow(clippy::too_many_arguments)]
    pub(super) fn inline_asm(
        &mut self,
        op: &'k Op,
        asm: &'k Expr,
        constraints: &'k Expr,
        args: &'k Expr,
        dtypes: &'k Expr,
        pack: &'k Option<Expr>,
        pure: &'k Option<Expr>,
    ) -> Result<Ty, Diagnostic> {
        let text = |e: &Expr, what: &str| match &e.kind {
            ExprKind::Str(s) => Ok(s.clone()),
            _ => Err(e_type(e.span, format!("{what} is a string"), "not a string")),
        };
        let asm_text = text(asm, "the PTX snippet")?;
        let cons = text(constraints, "the constraint string")?;
        let list = |e: &'k Expr, what: &str| match &e.kind {
            ExprKind::List(v) => Ok(v),
            _ => Err(e_type(e.span, format!("{what} is a list `[...]`"), "not a list")),
        };
        let arg_exprs = list(args, "the argument list")?;
        let mut arg_dtypes = Vec::new();
        let mut tile: Option<TileTy> = None;
        for a in arg_exprs {
            match self.expr_inner(a)? {
                Ty::Scalar(s) => arg_dtypes.push(s.dtype()),
                Ty::Tile(t) => {
                    arg_dtypes.push(t.dtype);
                    match &tile {
                        Some(t0) if t0.shape != t.shape => {
                            return Err(e_type(
                                a.span,
                                format!(
                                    "inline_asm arguments are tiles of one shape: {:?} and {:?}",
                                    t0.shape, t.shape
                                ),
                                "another shape",
                            )
                            .with_help("broadcast the arguments to one shape first"))
                        }
                        Some(_) => {}
                        None => tile = Some(t),
                    }
                }
                other => {
                    return Err(e_type(
                        a.span,
                        format!(
                            "an inline_asm argument is a tile or a scalar, found {}",
                            other.describe()
                        ),
                        "here",
                    ))
                }
            }
        }
        let mut res_dtypes = Vec::new();
        for d in list(dtypes, "the result types")? {
            res_dtypes.push(self.checked.consts.dtype(d)?);
        }
        let pack_n = match pack {
            Some(p) => {
                let v = self.checked.consts.int(p)?;
                usize::try_from(v).map_err(|_| e_type(p.span, "pack is a positive count", "here"))?
            }
            None => 1,
        };
        if let Some(p) = pure {
            self.checked.consts.bool(p)?;
        }
        if tile.is_none() && pack_n != 1 {
            return Err(e_type(op.span, "inline_asm of scalars takes pack=1", "here"));
        }
        let prog = inline_ptx::compile(&asm_text, &cons, &arg_dtypes, &res_dtypes, pack_n).map_err(|e| {
            Diagnostic::error(
                crate::Code::InlineAsm,
                format!("inline PTX: {}", e.message),
                asm.span,
                "in this snippet",
            )
            .with_note(
                "bwsim interprets the PTX subset of elementwise helpers: docs/tile-format.md, `inline_asm`",
            )
        })?;
        if self.checked.target == Target::Sm90a && prog.needs_sm100() {
            return Err(Diagnostic::error(
                crate::Code::InlineAsm,
                "inline PTX: `.f32x2` arithmetic needs sm_100a",
                asm.span,
                "in this snippet",
            ));
        }
        if let Some(slot) = at_mut(&mut self.checked.inline_asm, op.id) {
            *slot = Some(Arc::new(prog));
        }
        let one = |d: DType| -> Result<Ty, Diagnostic> {
            match &tile {
                Some(t) => Ok(Ty::Tile(TileTy {
                    dtype: d,
                    shape: t.shape.clone(),
                    layout: t.layout.clone(),
                })),
                None => match d {
                    DType::I32 => Ok(Ty::Scalar(ScalarTy::I32)),
                    DType::I64 => Ok(Ty::Scalar(ScalarTy::I64)),
                    DType::F32 => Ok(Ty::Scalar(ScalarTy::F32)),
                    _ => Err(e_type(
                        dtypes.span,
                        format!("a scalar result is i32, i64 or f32, found {d}"),
                        "here",
                    )),
                },
            }
        };
        let tys = res_dtypes
            .iter()
            .map(|d| one(*d))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(if tys.len() == 1 {
            tys.into_iter().next().unwrap_or(Ty::Tuple(Vec::new()))
        } else {
            Ty::Tuple(tys)
        })
    }
}
