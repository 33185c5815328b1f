//! Operand helpers: an operation's operand tokens, items, attribute dictionary, signature,
//! typed results and the errors that name the operation.

use super::*;

/// Parsed `: signature` of an operation.
pub(super) struct Sig {
    /// The operand types it prints (before `->`), one CTA's pieces in a cluster kernel.
    pub(super) inputs: Vec<Type>,
    pub(super) outputs: Vec<Type>,
}

/// An operand item: `%v` with the values inside a following `[...]` (coordinates, tokens,
/// predicates).
pub(super) struct Item {
    pub(super) name: String,
    pub(super) span: Span,
    pub(super) bracket: Vec<(String, Span)>,
}

impl<'m> Cx<'m> {
    // ---- operand helpers ----------------------------------------------------------------

    /// The operand tokens: up to the top-level `:` of the signature (or a region).
    pub(super) fn operand_toks<'a>(&self, op: &'a Op) -> &'a [Token] {
        let c = Cursor::new(&op.toks, op.span);
        let colon = c.find_top(":").unwrap_or(op.toks.len());
        let region = op
            .toks
            .iter()
            .position(|t| matches!(t.tok, Tok::Region(_)))
            .unwrap_or(op.toks.len());
        &op.toks[..colon.min(region)]
    }

    /// Operands as items (`%v` with the values of a following `[...]`), stopping at `deps`.
    pub(super) fn operand_items(&self, op: &Op) -> R<Vec<Item>> {
        let toks = self.operand_toks(op);
        let mut c = Cursor::new(toks, op.span);
        let mut v: Vec<Item> = Vec::new();
        while !c.at_end() {
            match c.peek().clone() {
                Tok::Value(n) => {
                    let span = c.span();
                    c.bump();
                    let mut bracket = Vec::new();
                    if matches!(c.peek(), Tok::Punct("[")) {
                        for t in c.group()? {
                            if let Tok::Value(b) = &t.tok {
                                bracket.push((b.clone(), t.span));
                            }
                        }
                    }
                    v.push(Item {
                        name: n,
                        span,
                        bracket,
                    });
                }
                Tok::Ident(w) if w == "deps" => break,
                Tok::Punct("{") => c.skip_item(),
                _ => {
                    c.bump();
                }
            }
        }
        Ok(v)
    }

    /// Plain operand names (bracket contents flattened after their item).
    pub(super) fn operands(&self, op: &Op) -> R<Vec<(String, Span)>> {
        let mut v = Vec::new();
        for it in self.operand_items(op)? {
            v.push((it.name, it.span));
            v.extend(it.bracket);
        }
        Ok(v)
    }

    /// The attribute dictionary `{...}` of an operation (also `<{...}>` properties).
    pub(super) fn attr_dict(&self, op: &Op) -> R<AttrVal> {
        let mut c = Cursor::new(&op.toks, op.span);
        let mut out = Vec::new();
        let mut depth = 0i64;
        while !c.at_end() {
            match c.peek() {
                Tok::Punct("{") if depth == 0 => {
                    if let AttrVal::Dict(d) = attr_val(&mut c)? {
                        out.extend(d);
                    }
                }
                Tok::Punct("<") if matches!(c.peek_at(1), Tok::Punct("{")) => {
                    c.bump();
                    if let AttrVal::Dict(d) = attr_val(&mut c)? {
                        out.extend(d);
                    }
                    c.eat(">");
                }
                Tok::Punct("(") | Tok::Punct("[") => {
                    depth += 1;
                    c.bump();
                }
                Tok::Punct(")") | Tok::Punct("]") => {
                    depth -= 1;
                    c.bump();
                }
                Tok::Punct(":") if depth == 0 => break,
                _ => {
                    c.bump();
                }
            }
        }
        Ok(AttrVal::Dict(out))
    }

    pub(super) fn sig(&self, op: &Op) -> R<Sig> {
        let c0 = Cursor::new(&op.toks, op.span);
        // `: (inputs) -> outputs`, or for `scf.if` with results, `-> (outputs)` before the body.
        let first_region = op.toks.iter().position(|t| matches!(t.tok, Tok::Region(_)));
        let arrow_first = |c: usize| first_region.is_some_and(|r| r < c);
        let colon = match (c0.find_top(":"), c0.find_top("->")) {
            (Some(c), _) if !arrow_first(c) => c,
            (_, Some(a)) if first_region.is_none_or(|r| a < r) => a.saturating_sub(1),
            (Some(c), _) => c,
            _ => {
                return Ok(Sig {
                    inputs: Vec::new(),
                    outputs: Vec::new(),
                })
            }
        };
        let end = op.toks[colon..]
            .iter()
            .position(|t| matches!(t.tok, Tok::Region(_)))
            .map_or(op.toks.len(), |p| colon + p);
        let mut c = Cursor::new(&op.toks[colon + 1..end], op.span);
        let list = |c: &mut Cursor| -> R<Vec<Type>> {
            let mut v = Vec::new();
            if matches!(c.peek(), Tok::Punct("(")) {
                let inner = c.group()?;
                let mut ic = Cursor::new(inner, op.span);
                while !ic.at_end() {
                    v.push(parse_type(&mut ic)?);
                    ic.eat(",");
                }
                return Ok(v);
            }
            loop {
                if c.at_end()
                    || matches!(c.peek(), Tok::Punct("->"))
                    || matches!(c.peek(), Tok::Ident(w) if w == "to")
                {
                    break;
                }
                v.push(parse_type(c)?);
                if !(c.eat(",") || c.eat("*")) {
                    break;
                }
            }
            Ok(v)
        };
        let local =
            |v: Vec<Type>| -> R<Vec<Type>> { v.into_iter().map(|t| self.localize(t, op.span)).collect() };
        let inputs = local(list(&mut c)?)?;
        let mut outputs = if c.eat("->") || c.eat_ident("to") {
            local(list(&mut c)?)?
        } else {
            inputs.clone()
        };
        if let Some(Type::Tensor { shape, enc, .. }) = &self.elementwise {
            for t in &mut outputs {
                if let Type::Scalar(e) = t {
                    *t = Type::Tensor {
                        shape: shape.clone(),
                        elem: Box::new(Type::Scalar(*e)),
                        enc: enc.clone(),
                    };
                }
            }
        }
        Ok(Sig { inputs, outputs })
    }

    /// The type of result `i` (from the signature's outputs, last ones first).
    pub(super) fn result_type(&self, op: &Op, i: usize) -> R<Type> {
        let s = self.sig(op)?;
        let n = op.results.len();
        if s.outputs.len() >= n && n > 0 {
            return Ok(s.outputs[s.outputs.len() - n + i].clone());
        }
        s.outputs.last().cloned().ok_or_else(|| ImportError::Syntax {
            span: op.span,
            message: format!("`{}` has no type signature", op.name),
        })
    }

    pub(super) fn unsupported(&self, op: &Op, detail: &str) -> ImportError {
        ImportError::UnsupportedOp {
            op: op.name.clone(),
            span: self.span_of(op),
            ttgir: op.span,
            detail: if detail.is_empty() {
                None
            } else {
                Some(detail.to_string())
            },
        }
    }

    /// The integer attribute `key` of `op`, which the operation must carry.
    pub(super) fn int_attr(&self, op: &Op, key: &str) -> R<i64> {
        let v = self.attr_dict(op)?.get(key).and_then(|x| x.as_int());
        v.ok_or_else(|| self.misuse(op, format!("needs `{key}`")))
    }

    /// The integer-list attribute `key` of `op`, which the operation must carry.
    pub(super) fn ints_attr(&self, op: &Op, key: &str) -> R<Vec<i64>> {
        let v = self.attr_dict(op)?.get(key).and_then(|x| x.ints());
        v.ok_or_else(|| self.misuse(op, format!("needs `{key}`")))
    }

    pub(super) fn misuse(&self, op: &Op, message: impl Into<String>) -> ImportError {
        ImportError::Unsupported {
            op: op.name.clone(),
            message: message.into(),
            span: self.span_of(op),
            ttgir: op.span,
        }
    }

    pub(super) fn n_operands(&self, op: &Op, n: usize) -> R<Vec<(String, Span)>> {
        let v = self.operands(op)?;
        if v.len() < n {
            return Err(ImportError::Syntax {
                span: op.span,
                message: format!("`{}` expects {n} operands, found {}", op.name, v.len()),
            });
        }
        Ok(v)
    }

    /// An optional predicate operand: None when it is the constant `true`.
    pub(super) fn pred(&mut self, v: Option<&(String, Span)>) -> R<Option<Expr>> {
        match v {
            None => Ok(None),
            Some((n, s)) => {
                let e = self.expr(n, *s)?;
                Ok(if is_true(&e) { None } else { Some(e) })
            }
        }
    }

    pub(super) fn result(&self, op: &Op, i: usize) -> R<String> {
        op.results.get(i).cloned().ok_or_else(|| ImportError::Syntax {
            span: op.span,
            message: format!("`{}` should have a result", op.name),
        })
    }
}
