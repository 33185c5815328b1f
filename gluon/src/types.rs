//! MLIR types and attributes of TTGIR: element types, tensors, pointers, shared/tensor memory
//! descriptors, TMA descriptors, and the layout attributes (`#ttg.blocked`, `#ttg.slice`,
//! `#ttg.linear`, `#ttg.nvidia_mma`, `#ttg.nvmma_shared`, `#ttg.swizzled_shared`,
//! `#ttng.tensor_memory_encoding`, ...), parsed from tokens.
//!
//! Attributes are first read into a generic [`AttrVal`] tree, then decoded into a [`Layout`];
//! aliases (`#blocked = #ttg.blocked<...>`) resolve through [`Attrs`].

use crate::error::ImportError;
use crate::lexer::{Tok, Token};
use crate::syntax::{describe, Cursor};
use bwsim_isa::{DType, Span};
use std::cell::RefCell;
use std::collections::HashMap;

/// A generic attribute value.
#[derive(Clone, Debug, PartialEq)]
pub enum AttrVal {
    Int(i64),
    Float(f64),
    /// `0x...`: the bits of a float.
    Hex(u64),
    Bool(bool),
    Str(String),
    /// A bare word (`x`, `sge`, `mutable`).
    Word(String),
    List(Vec<AttrVal>),
    Dict(Vec<(String, Option<AttrVal>)>),
    /// `#name` without parameters: an alias (or a parameterless dialect attribute).
    Alias(String),
    /// `#dialect.name<params>`.
    Dialect(String, Box<AttrVal>),
    /// `dense<v>`.
    Dense(Box<AttrVal>),
}

impl AttrVal {
    pub fn get(&self, key: &str) -> Option<&AttrVal> {
        match self {
            AttrVal::Dict(v) => v.iter().find(|(k, _)| k == key).and_then(|(_, v)| v.as_ref()),
            _ => None,
        }
    }
    pub fn has(&self, key: &str) -> bool {
        matches!(self, AttrVal::Dict(v) if v.iter().any(|(k, _)| k == key))
    }
    /// The attribute as an integer (booleans are 0/1).
    pub fn as_int(&self) -> Option<i64> {
        match self {
            AttrVal::Int(v) => Some(*v),
            AttrVal::Bool(b) => Some(*b as i64),
            _ => None,
        }
    }
    /// The attribute as a boolean (a non-zero integer is true).
    pub fn as_bool(&self) -> Option<bool> {
        self.as_int().map(|v| v != 0)
    }
    pub fn ints(&self) -> Option<Vec<i64>> {
        match self {
            AttrVal::List(v) => v.iter().map(|x| x.as_int()).collect(),
            _ => None,
        }
    }
}

/// Read one attribute value. A trailing `: type` (typed literal) is skipped.
pub fn attr_val(c: &mut Cursor) -> Result<AttrVal, ImportError> {
    let v = match literal(c.peek()) {
        Some(v) => {
            c.bump();
            v
        }
        None => compound_attr(c)?,
    };
    if matches!(c.peek(), Tok::Punct(":")) {
        c.bump();
        c.skip_item();
    }
    Ok(v)
}

/// The attribute a single literal token is: a number, a string, `true` or `false`.
fn literal(t: &Tok) -> Option<AttrVal> {
    Some(match t {
        Tok::Int(v) => AttrVal::Int(*v),
        Tok::Float(v) => AttrVal::Float(*v),
        Tok::Hex(v) => AttrVal::Hex(*v),
        Tok::Str(s) => AttrVal::Str(s.clone()),
        Tok::Ident(w) if w == "true" || w == "false" => AttrVal::Bool(w == "true"),
        _ => return None,
    })
}

/// An attribute that is not a [`literal`]: a list, a dictionary, a dialect attribute or an
/// alias, `array<...>`, `dense<...>`, or a bare word.
fn compound_attr(c: &mut Cursor) -> Result<AttrVal, ImportError> {
    Ok(match c.peek().clone() {
        Tok::Punct("[") => {
            let inner = c.group()?;
            AttrVal::List(list(inner, c.end)?)
        }
        Tok::Punct("{") => {
            let inner = c.group()?;
            AttrVal::Dict(dict(inner, c.end)?)
        }
        Tok::Hash(name) => {
            c.bump();
            if matches!(c.peek(), Tok::Punct("<")) {
                let inner = c.group()?;
                let mut ic = Cursor::new(inner, c.end);
                let body = if matches!(ic.peek(), Tok::Punct("{")) {
                    attr_val(&mut ic)?
                } else {
                    AttrVal::Dict(dict(inner, c.end)?)
                };
                AttrVal::Dialect(name, Box::new(body))
            } else {
                AttrVal::Alias(name)
            }
        }
        Tok::Ident(w) if w == "array" && matches!(c.peek_at(1), Tok::Punct("<")) => {
            c.bump();
            let inner = c.group()?;
            // `array<i32: 1, 2>`
            let colon = inner.iter().position(|t| t.tok == Tok::Punct(":"));
            match colon {
                Some(i) => AttrVal::List(list(&inner[i + 1..], c.end)?),
                None => AttrVal::List(Vec::new()),
            }
        }
        Tok::Ident(w) if w == "dense" && matches!(c.peek_at(1), Tok::Punct("<")) => {
            c.bump();
            let inner = c.group()?;
            let mut ic = Cursor::new(inner, c.end);
            AttrVal::Dense(Box::new(attr_val(&mut ic)?))
        }
        Tok::Ident(w) => {
            c.bump();
            AttrVal::Word(w)
        }
        other => return Err(c.err(format!("expected an attribute, found {}", describe(&other)))),
    })
}

fn list(toks: &[Token], end: Span) -> Result<Vec<AttrVal>, ImportError> {
    let mut c = Cursor::new(toks, end);
    let mut v = Vec::new();
    while !c.at_end() {
        v.push(attr_val(&mut c)?);
        if !c.eat(",") && !c.at_end() {
            return Err(c.err("expected `,` in a list"));
        }
    }
    Ok(v)
}

/// `key = value, key, ...` (the inside of `{ }` or of a dialect attribute's `< >`).
pub fn dict(toks: &[Token], end: Span) -> Result<Vec<(String, Option<AttrVal>)>, ImportError> {
    let mut c = Cursor::new(toks, end);
    let mut v = Vec::new();
    while !c.at_end() {
        let key = match c.peek().clone() {
            Tok::Ident(s) | Tok::Str(s) => {
                c.bump();
                s
            }
            other => return Err(c.err(format!("expected an attribute name, found {}", describe(&other)))),
        };
        let val = if c.eat("=") { Some(attr_val(&mut c)?) } else { None };
        v.push((key, val));
        if !c.eat(",") && !c.at_end() {
            return Err(c.err("expected `,` between attributes"));
        }
    }
    Ok(v)
}

/// A scalar element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Elem {
    I1,
    I8,
    I16,
    I32,
    I64,
    F16,
    BF16,
    F32,
    F64,
    F8E4M3,
    F8E5M2,
    Index,
}

impl Elem {
    pub fn from_name(s: &str) -> Option<Elem> {
        Some(match s {
            "i1" => Elem::I1,
            // Triton keeps `ui8` and `si8`.. on tensor descriptors only (uint8 data: fp4 pairs,
            // ue8m0 scale factors; int8 and int32 MMA operands and results); the buffers they
            // fill and pointers to them are signless.
            "i8" | "ui8" | "si8" => Elem::I8,
            "i16" | "si16" => Elem::I16,
            "i32" | "si32" => Elem::I32,
            "i64" | "si64" => Elem::I64,
            "f16" => Elem::F16,
            "bf16" => Elem::BF16,
            "f32" => Elem::F32,
            "f64" => Elem::F64,
            "f8E4M3FN" => Elem::F8E4M3,
            "f8E5M2" => Elem::F8E5M2,
            "index" => Elem::Index,
            _ => return None,
        })
    }
    /// bwsim's element type, when it has one.
    pub fn dtype(self) -> Option<DType> {
        Some(match self {
            Elem::I1 => DType::I1,
            Elem::I8 => DType::I8,
            Elem::I16 => DType::I16,
            Elem::I32 => DType::I32,
            Elem::I64 => DType::I64,
            Elem::F16 => DType::F16,
            Elem::BF16 => DType::BF16,
            Elem::F32 => DType::F32,
            Elem::F8E4M3 => DType::F8E4M3,
            Elem::F8E5M2 => DType::F8E5M2,
            Elem::F64 | Elem::Index => return None,
        })
    }
    pub fn is_float(self) -> bool {
        matches!(
            self,
            Elem::F16 | Elem::BF16 | Elem::F32 | Elem::F64 | Elem::F8E4M3 | Elem::F8E5M2
        )
    }
}

/// A TTGIR type.
#[derive(Clone, Debug, PartialEq)]
pub enum Type {
    Scalar(Elem),
    /// `!tt.ptr<T>`.
    Ptr(Box<Type>),
    /// `tensor<dims x T, #layout>`; T is a scalar or a pointer.
    Tensor {
        shape: Vec<i64>,
        elem: Box<Type>,
        enc: Option<AttrVal>,
    },
    /// `!ttg.memdesc<dims x T, #enc, #space[, mutable][, alloc dims]>`.
    MemDesc {
        shape: Vec<i64>,
        elem: Elem,
        enc: AttrVal,
        tmem: bool,
        /// The shape of the buffer the view lies in, when Triton prints it (a subslice's).
        alloc: Option<Vec<i64>>,
    },
    /// `!tt.tensordesc<tensor<block x T, #shared>>`.
    TensorDesc {
        block: Vec<i64>,
        elem: Elem,
        enc: Option<AttrVal>,
    },
    /// `!ttg.async.token` and other types without meaning for bwsim.
    Other(String),
}

impl Type {
    pub fn shape(&self) -> Option<&[i64]> {
        match self {
            Type::Tensor { shape, .. } | Type::MemDesc { shape, .. } => Some(shape),
            _ => None,
        }
    }
    /// The scalar element type (of a scalar or a tensor of scalars).
    pub fn elem(&self) -> Option<Elem> {
        match self {
            Type::Scalar(e) => Some(*e),
            Type::Tensor { elem, .. } => elem.elem(),
            Type::MemDesc { elem, .. } => Some(*elem),
            _ => None,
        }
    }
    pub fn is_tensor(&self) -> bool {
        matches!(self, Type::Tensor { .. })
    }
    pub fn is_ptr_like(&self) -> bool {
        match self {
            Type::Ptr(_) => true,
            Type::Tensor { elem, .. } => matches!(**elem, Type::Ptr(_)),
            _ => false,
        }
    }
    pub fn encoding(&self) -> Option<&AttrVal> {
        match self {
            Type::Tensor { enc, .. } => enc.as_ref(),
            _ => None,
        }
    }
}

/// Read one type.
/// The inside of `tensor<...>` (`128x64xf16, #blocked`), or a `tensor<...>` type itself.
fn parse_tensor_body(c: &mut Cursor) -> Result<Type, ImportError> {
    if matches!(c.peek(), Tok::Ident(w) if w == "tensor") {
        return parse_type(c);
    }
    let shape = match c.peek().clone() {
        Tok::Shape(d) => {
            c.bump();
            d
        }
        _ => Vec::new(),
    };
    let elem = parse_type(c)?;
    let enc = if c.eat(",") { Some(attr_val(c)?) } else { None };
    Ok(Type::Tensor {
        shape,
        elem: Box::new(elem),
        enc,
    })
}

pub fn parse_type(c: &mut Cursor) -> Result<Type, ImportError> {
    match c.peek().clone() {
        Tok::Ident(w) if w == "tensor" => {
            c.bump();
            let inner = c.group()?;
            let mut ic = Cursor::new(inner, c.end);
            parse_tensor_body(&mut ic)
        }
        Tok::Ident(w) => {
            let e = Elem::from_name(&w).ok_or_else(|| ImportError::UnsupportedType {
                message: format!("unsupported element type `{w}`"),
                span: c.span(),
            })?;
            c.bump();
            Ok(Type::Scalar(e))
        }
        Tok::Bang(name) => {
            let span = c.span();
            c.bump();
            let inner: &[Token] = if matches!(c.peek(), Tok::Punct("<")) {
                c.group()?
            } else {
                &[]
            };
            let mut ic = Cursor::new(inner, span);
            match name.as_str() {
                "tt.ptr" => Ok(Type::Ptr(Box::new(parse_type(&mut ic)?))),
                // 3.6-3.7 print `!tt.tensordesc<tensor<32x64xf32, #shared>>`, 3.8 and later
                // `!tt.tensordesc<32x64xf32, #shared>` (crate::version: tensordesc-*).
                "tt.tensordesc" => match parse_tensor_body(&mut ic)? {
                    Type::Tensor { shape, elem, enc } => Ok(Type::TensorDesc {
                        block: shape,
                        elem: elem.elem().ok_or_else(|| ImportError::UnsupportedType {
                            message: "tensor descriptor of pointers".into(),
                            span,
                        })?,
                        enc,
                    }),
                    _ => Err(ImportError::UnsupportedType {
                        message: "malformed `!tt.tensordesc`".into(),
                        span,
                    }),
                },
                "ttg.memdesc" => {
                    let shape = match ic.peek().clone() {
                        Tok::Shape(d) => {
                            ic.bump();
                            d
                        }
                        _ => Vec::new(),
                    };
                    let elem = match parse_type(&mut ic)? {
                        Type::Scalar(e) => e,
                        _ => {
                            return Err(ImportError::UnsupportedType {
                                message: "memory descriptor of a non-scalar type".into(),
                                span,
                            })
                        }
                    };
                    ic.expect(",")?;
                    let enc = attr_val(&mut ic)?;
                    ic.expect(",")?;
                    let space = attr_val(&mut ic)?;
                    let tmem = match &space {
                        AttrVal::Alias(s) | AttrVal::Dialect(s, _) => s.contains("tensor_memory"),
                        _ => false,
                    };
                    // Then `mutable` and the alloc shape, each optional.
                    let mut alloc = None;
                    while ic.eat(",") {
                        match ic.peek().clone() {
                            Tok::Shape(d) => alloc = Some(d),
                            Tok::Int(n) => alloc = Some(vec![n]),
                            _ => {}
                        }
                        ic.bump();
                    }
                    Ok(Type::MemDesc {
                        shape,
                        elem,
                        enc,
                        tmem,
                        alloc,
                    })
                }
                other => Ok(Type::Other(other.to_string())),
            }
        }
        other => Err(c.err(format!("expected a type, found {}", describe(&other)))),
    }
}

/// A layout or memory encoding, decoded.
#[derive(Clone, Debug, PartialEq)]
pub enum Layout {
    Blocked {
        spt: Vec<i64>,
        tpw: Vec<i64>,
        wpc: Vec<i64>,
        order: Vec<i64>,
    },
    Slice {
        dim: i64,
        parent: Box<Layout>,
    },
    /// `#ttg.linear`: register/lane/warp bases.
    Linear {
        register: Vec<Vec<i64>>,
        lane: Vec<Vec<i64>>,
        warp: Vec<Vec<i64>>,
    },
    /// `#ttg.nvidia_mma` (version 3 is the wgmma accumulator).
    NvidiaMma {
        major: i64,
        warps: Vec<i64>,
        instr: Vec<i64>,
    },
    NvmmaShared {
        swizzle: i64,
        transposed: bool,
        fp4_padded: bool,
    },
    SwizzledShared {
        vec: i64,
        per_phase: i64,
        max_phase: i64,
        order: Vec<i64>,
    },
    /// `#ttg.shared_linear`: offset bit i of the shared view holds the coordinates `offset[i]`.
    SharedLinear {
        offset: Vec<Vec<i64>>,
    },
    TmemEncoding {
        block_m: i64,
        block_n: i64,
        col_stride: i64,
    },
    TmemScales,
    /// Anything else (named for the error message).
    Other(String),
}

/// The attribute aliases of a module, decoded on demand.
pub struct Attrs<'m> {
    aliases: &'m HashMap<String, Vec<Token>>,
    cache: RefCell<HashMap<String, AttrVal>>,
}

impl<'m> Attrs<'m> {
    pub fn new(aliases: &'m HashMap<String, Vec<Token>>) -> Attrs<'m> {
        Attrs {
            aliases,
            cache: RefCell::new(HashMap::new()),
        }
    }

    /// The value of an alias.
    pub fn alias(&self, name: &str, span: Span) -> Result<AttrVal, ImportError> {
        if let Some(v) = self.cache.borrow().get(name) {
            return Ok(v.clone());
        }
        let toks = self
            .aliases
            .get(name)
            .ok_or_else(|| ImportError::UnsupportedType {
                message: format!("`#{name}` is not defined"),
                span,
            })?;
        let mut c = Cursor::new(toks, span);
        let v = attr_val(&mut c)?;
        self.cache.borrow_mut().insert(name.to_string(), v.clone());
        Ok(v)
    }

    /// Decode a layout attribute (following aliases).
    pub fn layout(&self, v: &AttrVal, span: Span) -> Result<Layout, ImportError> {
        self.layout_depth(v, span, 0)
    }

    fn layout_depth(&self, v: &AttrVal, span: Span, depth: usize) -> Result<Layout, ImportError> {
        if depth > 32 {
            return Err(ImportError::UnsupportedType {
                message: "layout aliases nest too deeply".into(),
                span,
            });
        }
        let bad = |what: &str| ImportError::UnsupportedType {
            message: format!("malformed layout attribute: {what}"),
            span,
        };
        let ints = |d: &AttrVal, k: &str| d.get(k).and_then(|x| x.ints()).ok_or_else(|| bad(k));
        let int = |d: &AttrVal, k: &str| d.get(k).and_then(|x| x.as_int()).ok_or_else(|| bad(k));
        match v {
            AttrVal::Alias(name) if name.contains('.') => Ok(Layout::Other(name.clone())),
            AttrVal::Alias(name) => {
                let inner = self.alias(name, span)?;
                self.layout_depth(&inner, span, depth + 1)
            }
            AttrVal::Dialect(name, d) => match name.as_str() {
                "ttg.blocked" => Ok(Layout::Blocked {
                    spt: ints(d, "sizePerThread")?,
                    tpw: ints(d, "threadsPerWarp")?,
                    wpc: ints(d, "warpsPerCTA")?,
                    order: ints(d, "order")?,
                }),
                "ttg.slice" => {
                    let parent = d.get("parent").ok_or_else(|| bad("parent"))?;
                    Ok(Layout::Slice {
                        dim: int(d, "dim")?,
                        parent: Box::new(self.layout_depth(parent, span, depth + 1)?),
                    })
                }
                "ttg.linear" => {
                    let bases = |k: &str| -> Result<Vec<Vec<i64>>, ImportError> {
                        match d.get(k) {
                            Some(AttrVal::List(l)) => {
                                l.iter().map(|b| b.ints().ok_or_else(|| bad(k))).collect()
                            }
                            _ => Err(bad(k)),
                        }
                    };
                    Ok(Layout::Linear {
                        register: bases("register")?,
                        lane: bases("lane")?,
                        warp: bases("warp")?,
                    })
                }
                "ttg.nvidia_mma" => Ok(Layout::NvidiaMma {
                    major: int(d, "versionMajor")?,
                    warps: ints(d, "warpsPerCTA")?,
                    instr: ints(d, "instrShape")?,
                }),
                "ttg.nvmma_shared" => Ok(Layout::NvmmaShared {
                    swizzle: int(d, "swizzlingByteWidth")?,
                    transposed: d.get("transposed").and_then(|x| x.as_bool()).unwrap_or(false),
                    fp4_padded: d.get("fp4Padded").and_then(|x| x.as_bool()).unwrap_or(false),
                }),
                "ttg.swizzled_shared" => Ok(Layout::SwizzledShared {
                    vec: int(d, "vec")?,
                    per_phase: int(d, "perPhase")?,
                    max_phase: int(d, "maxPhase")?,
                    order: ints(d, "order")?,
                }),
                "ttg.shared_linear" => match d.get("offset") {
                    Some(AttrVal::List(l)) => Ok(Layout::SharedLinear {
                        offset: l
                            .iter()
                            .map(|b| b.ints().ok_or_else(|| bad("offset")))
                            .collect::<Result<_, _>>()?,
                    }),
                    _ => Err(bad("offset")),
                },
                "ttng.tensor_memory_encoding" => Ok(Layout::TmemEncoding {
                    block_m: int(d, "blockM")?,
                    block_n: int(d, "blockN")?,
                    col_stride: d.get("colStride").and_then(|x| x.as_int()).unwrap_or(1),
                }),
                "ttng.tensor_memory_scales_encoding" => Ok(Layout::TmemScales),
                other => Ok(Layout::Other(other.to_string())),
            },
            other => Err(ImportError::UnsupportedType {
                message: format!("expected a layout attribute, found {other:?}"),
                span,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lexer::lex;

    fn ty(s: &str) -> Type {
        let t = lex(s, 0).unwrap();
        let n = t.len() - 1;
        parse_type(&mut Cursor::new(&t[..n], Span::DUMMY)).unwrap()
    }

    #[test]
    fn types() {
        assert_eq!(ty("i32"), Type::Scalar(Elem::I32));
        assert_eq!(ty("!tt.ptr<bf16>"), Type::Ptr(Box::new(Type::Scalar(Elem::BF16))));
        match ty("tensor<128x!tt.ptr<i32>, #blocked1>") {
            Type::Tensor { shape, elem, enc } => {
                assert_eq!(shape, vec![128]);
                assert!(matches!(*elem, Type::Ptr(_)));
                assert_eq!(enc, Some(AttrVal::Alias("blocked1".into())));
            }
            t => panic!("{t:?}"),
        }
        match ty("!ttg.memdesc<128x128xf32, #tmem1, #ttng.tensor_memory, mutable, 128x256>") {
            Type::MemDesc {
                shape,
                elem,
                tmem,
                alloc,
                ..
            } => {
                assert_eq!(
                    (shape, elem, tmem, alloc),
                    (vec![128, 128], Elem::F32, true, Some(vec![128, 256]))
                );
            }
            t => panic!("{t:?}"),
        }
        for (text, want) in [
            ("!ttg.memdesc<128x64xf16, #shared, #smem, mutable>", None),
            ("!ttg.memdesc<2x64xf16, #shared, #smem>", None),
            (
                "!ttg.memdesc<32xf32, #shared1, #smem, mutable, 64>",
                Some(vec![64]),
            ),
            (
                "!ttg.memdesc<16x128xf16, #shared2, #smem, mutable, 64x128>",
                Some(vec![64, 128]),
            ),
        ] {
            match ty(text) {
                Type::MemDesc { alloc, tmem, .. } => assert_eq!((alloc, tmem), (want, false), "{text}"),
                t => panic!("{t:?}"),
            }
        }
        match ty("!tt.tensordesc<tensor<1x128xbf16, #shared>>") {
            Type::TensorDesc { block, elem, .. } => assert_eq!((block, elem), (vec![1, 128], Elem::BF16)),
            t => panic!("{t:?}"),
        }
    }

    #[test]
    fn layouts() {
        let src = "#ttg.slice<{dim = 0, parent = #blocked}>";
        let mut aliases = HashMap::new();
        let b = lex(
            "#ttg.blocked<{sizePerThread = [1, 4], threadsPerWarp = [32, 1], warpsPerCTA = [1, 4], order = [1, 0]}>",
            0,
        )
        .unwrap();
        aliases.insert("blocked".to_string(), b[..b.len() - 1].to_vec());
        let attrs = Attrs::new(&aliases);
        let t = lex(src, 0).unwrap();
        let v = attr_val(&mut Cursor::new(&t[..t.len() - 1], Span::DUMMY)).unwrap();
        let l = attrs.layout(&v, Span::DUMMY).unwrap();
        assert_eq!(
            l,
            Layout::Slice {
                dim: 0,
                parent: Box::new(Layout::Blocked {
                    spt: vec![1, 4],
                    tpw: vec![32, 1],
                    wpc: vec![1, 4],
                    order: vec![1, 0]
                })
            }
        );
        let t = lex(
            "#ttng.tensor_memory_encoding<blockM = 128, blockN = 256, colStride = 1>",
            0,
        )
        .unwrap();
        let v = attr_val(&mut Cursor::new(&t[..t.len() - 1], Span::DUMMY)).unwrap();
        assert_eq!(
            attrs.layout(&v, Span::DUMMY).unwrap(),
            Layout::TmemEncoding {
                block_m: 128,
                block_n: 256,
                col_stride: 1
            }
        );
    }
}
