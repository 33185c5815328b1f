//! Tensor maps built on the device: what Triton's TMA lowering makes of Gluon's
//! `tma.make_tensor_descriptor` (docs/gluon.md, "Tensor maps built on the device").
//!
//! Each call becomes, at its line, a 128-byte global scratch buffer (`ttg.global_scratch_alloc`),
//! the tensor map written into it (`ttng.tensormap_create`: base, box, dimensions and byte
//! strides, innermost first), the tensormap-proxy acquire (`ttng.tensormap_fenceproxy_acquire`)
//! and the buffer read as a descriptor (`ttng.reinterpret_tensor_descriptor`, whose type gives
//! the block and the shared layout). bwsim's IR has no global scratch: the buffer is the
//! descriptor's name, and the four operations import as `let D = tma.make_desc PTR, OFFSET,
//! [DIMS], [STRIDES], tensor_desc(...)` at the `tensormap_create` and `tma.desc_acquire D` at
//! the acquire. The map's fields are kept until the reinterpretation names the type, so the
//! `tma.make_desc` is emitted there (with the acquire after it when the acquire came first, as
//! Triton orders them), each at its own operation's location.

use super::*;

/// A global scratch buffer holding a tensor map (`ttg.global_scratch_alloc`).
#[derive(Clone, Debug, Default)]
pub(super) struct Scratch {
    /// The map `ttng.tensormap_create` wrote, until the buffer is read as a descriptor.
    map: Option<Map>,
    /// The acquire seen before the descriptor was made.
    acquire: Option<Span>,
    /// The descriptor's name once made.
    desc: Option<String>,
}

/// The fields of a `ttng.tensormap_create`, outermost first.
#[derive(Clone, Debug)]
struct Map {
    ptr: String,
    offset: Expr,
    shape: Vec<Expr>,
    strides: Vec<Expr>,
    /// `elem_type`'s element size in bytes.
    elem_bytes: u32,
    /// The box's outer dimensions.
    box_outer: Vec<i64>,
    oob_nan: bool,
    span: Span,
}

/// The element size in bytes of `cuTensorMapEncodeTiled`'s `CUtensorMapDataType` `code`
/// (UINT8, UINT16, UINT32, INT32, UINT64, INT64, FLOAT16, FLOAT32, FLOAT64, BFLOAT16,
/// FLOAT32_FTZ, TFLOAT32, TFLOAT32_FTZ).
fn elem_bytes(code: i64) -> Option<u32> {
    const SIZES: [u32; 13] = [1, 2, 4, 4, 8, 8, 2, 4, 8, 2, 4, 4, 4];
    usize::try_from(code).ok().and_then(|i| SIZES.get(i).copied())
}

impl<'m> Cx<'m> {
    /// `ttg.global_scratch_alloc`: a buffer only a tensor map may live in.
    pub(super) fn global_scratch_alloc(&mut self, op: &Op) -> R<()> {
        let r = self.result(op, 0)?;
        let nbytes = self.int_attr(op, "nbytes")?;
        if nbytes != 128 {
            return Err(self.misuse(
                op,
                format!("a global scratch buffer of {nbytes} bytes: bwsim models only the 128-byte tensor maps of `tma.make_tensor_descriptor`"),
            ));
        }
        self.scratch.insert(r.clone(), Scratch::default());
        self.bind(
            &r,
            Val::Unusable(
                "a global scratch buffer is read only as the tensor map built in it (`ttng.tensormap_create`, `ttng.reinterpret_tensor_descriptor`)"
                    .into(),
            ),
        );
        Ok(())
    }

    /// The scratch buffer named by the first operand of `op`.
    fn scratch_of(&self, op: &Op, v: &(String, Span)) -> R<String> {
        if self.scratch.contains_key(&v.0) {
            return Ok(v.0.clone());
        }
        if self.is_poison(&v.0) {
            return Err(ImportError::Cascade { span: v.1 });
        }
        Err(self.misuse(
            op,
            "the tensor map's buffer is not a `ttg.global_scratch_alloc` of this function",
        ))
    }

    /// `ttng.tensormap_create %buf, %base, [box], [dims], [byte strides], [element strides]`
    /// (lists innermost first).
    pub(super) fn tensormap_create(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.operands(op)?;
        // 2 + 4 * rank - 1 operands: the byte strides are the outer dimensions'.
        let rank = (v.len().saturating_sub(1)) / 4;
        if rank == 0 || v.len() != 4 * rank + 1 {
            return Err(self.misuse(op, format!("{} operands do not make a tensor map", v.len())));
        }
        let buf = self.scratch_of(op, &v[0])?;
        if self.scratch.get(&buf).is_some_and(|s| s.desc.is_some()) {
            return Err(self.misuse(op, "a tensor map rewritten after it was read as a descriptor"));
        }
        let attrs = self.attr_dict(op)?;
        let attr = |k: &str| attrs.get(k).and_then(|a| a.as_int());
        let Some(elem) = attr("elem_type").and_then(elem_bytes) else {
            return Err(self.misuse(op, "needs an `elem_type` of cuTensorMapEncodeTiled's numbering"));
        };
        if attr("interleave_layout") != Some(0) {
            return Err(self.misuse(
                op,
                "an interleaved tensor map (bwsim models tiled ones without interleave)",
            ));
        }
        let oob_nan = match attr("fill_mode") {
            Some(0) => false,
            Some(1) => true,
            _ => return Err(self.misuse(op, "needs `fill_mode` 0 (zeros) or 1 (NaN)")),
        };
        let Val::Ptr { base, offs, ty } = self.get(&v[1].0, v[1].1)? else {
            return Err(self.misuse(op, "the tensor map's base is not a pointer of a kernel argument"));
        };
        // (A pointer's binding keeps its offsets' type: a tensor for a tensor of pointers.)
        if ty.is_tensor() {
            return Err(self.misuse(op, "the tensor map's base is a tensor of pointers"));
        }
        let offset = offs.unwrap_or_else(|| int_e(0, span));
        let (boxes, rest) = v[2..].split_at(rank);
        let (dims, rest) = rest.split_at(rank);
        let (strides, elem_strides) = rest.split_at(rank - 1);
        let mut box_outer = Vec::new();
        for (n, s) in boxes.iter().rev().take(rank - 1) {
            let e = self.math_operand(n, *s)?;
            match e.kind {
                ExprKind::Int(b) => box_outer.push(b),
                _ => return Err(self.misuse(op, "a tensor map box that is not a constant")),
            }
        }
        for (n, s) in elem_strides {
            if !matches!(self.math_operand(n, *s)?.kind, ExprKind::Int(1)) {
                return Err(self.misuse(
                    op,
                    "element strides other than 1 in a tensor map built on the device",
                ));
            }
        }
        let mut list = |xs: &[(String, Span)]| -> R<Vec<Expr>> {
            xs.iter().rev().map(|(n, s)| self.math_operand(n, *s)).collect()
        };
        let (shape, strides) = (list(dims)?, list(strides)?);
        if let Some(s) = self.scratch.get_mut(&buf) {
            s.map = Some(Map {
                ptr: base,
                offset,
                shape,
                strides,
                elem_bytes: elem,
                box_outer,
                oob_nan,
                span,
            });
        }
        Ok(())
    }

    /// `ttng.tensormap_fenceproxy_acquire %buf`: `tma.desc_acquire` of the buffer's
    /// descriptor, once it is made.
    pub(super) fn tensormap_acquire(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let buf = self.scratch_of(op, &v[0])?;
        let Some(s) = self.scratch.get_mut(&buf) else {
            return Ok(());
        };
        match s.desc.clone() {
            Some(d) => self.op_stmt(
                OpKind::TmaDescAcquire {
                    desc: name_e(&d, span),
                },
                span,
            ),
            None => s.acquire = Some(span),
        }
        Ok(())
    }

    /// `ttng.reinterpret_tensor_descriptor %buf : !tt.ptr<i8> to !tt.tensordesc<...>`: the
    /// descriptor of the map written into the buffer.
    pub(super) fn reinterpret_descriptor(&mut self, op: &Op, span: Span) -> R<()> {
        let v = self.n_operands(op, 1)?;
        let buf = self.scratch_of(op, &v[0])?;
        let r = self.result(op, 0)?;
        let ty = self.result_type(op, 0)?;
        let Type::TensorDesc { block, elem, enc } = &ty else {
            return Err(self.misuse(op, "expected a tensor descriptor type"));
        };
        let scratch = self.scratch.get(&buf).cloned().unwrap_or_default();
        if let Some(d) = &scratch.desc {
            let e = name_e(d, span);
            self.bind(&r, Val::E(e, ty.clone()));
            return Ok(());
        }
        let Some(map) = scratch.map else {
            return Err(self.misuse(
                op,
                "the buffer is read as a descriptor before a tensor map is written into it",
            ));
        };
        let dtype = dtype_of(*elem, span)?;
        let outer = &block[..block.len().saturating_sub(1)];
        if dtype.bits() != map.elem_bytes * 8
            || block.len() != map.shape.len()
            || outer != map.box_outer.as_slice()
        {
            return Err(self.misuse(
                op,
                format!(
                    "the descriptor type {dtype}{block:?} does not match its tensor map (elements of {} bytes, box rows {:?})",
                    map.elem_bytes, map.box_outer
                ),
            ));
        }
        let (shaped, layout) = self.desc_parts(block, *elem, enc, span)?;
        let kw = if map.oob_nan {
            vec![("oob", name_e("nan", span))]
        } else {
            Vec::new()
        };
        let name = self.let_op(
            &r,
            OpKind::TmaMakeDesc {
                ptr: name_e(&map.ptr, map.span),
                offset: map.offset,
                shape: ex(ExprKind::List(map.shape), map.span),
                strides: ex(ExprKind::List(map.strides), map.span),
                ty: call_kw("tensor_desc", vec![shaped, layout], kw, map.span),
            },
            map.span,
        );
        if let Some(a) = scratch.acquire {
            self.op_stmt(
                OpKind::TmaDescAcquire {
                    desc: name_e(&name, a),
                },
                a,
            );
        }
        if let Some(s) = self.scratch.get_mut(&buf) {
            s.desc = Some(name.clone());
        }
        self.bind(&r, Val::E(name_e(&name, span), ty.clone()));
        Ok(())
    }
}
