//! `tt.call`: calls of the module's other functions (Gluon's `@gluon.jit(noinline=True)`
//! helpers, printed as `tt.func private`), imported by inlining the callee's body at the call.
//!
//! MLIR functions are isolated from above, so the callee's body reads only its parameters and
//! its own values: the body is imported in a scope of its own where each parameter is bound
//! to the caller's operand, and the call's results are bound to the values its `tt.return`
//! names. bwsim's names are unique in the whole kernel, so two calls of one helper give two
//! copies with their own names; the callee's operations keep their own source locations (the
//! helper's Python lines). Gluon passes only scalars (numbers, pointers) to `noinline`
//! helpers; a recursive call is refused.

use super::*;

/// The symbol a `tt.func` defines (`@name`, without the `@`).
pub(super) fn func_symbol(f: &Op) -> Option<String> {
    f.toks.iter().find_map(|t| match &t.tok {
        Tok::Symbol(s) => Some(s.clone()),
        _ => None,
    })
}

/// The SSA names of a `tt.func`'s parameters, in order.
fn func_params(f: &Op) -> Vec<String> {
    let Some(start) = f.toks.iter().position(|t| matches!(t.tok, Tok::Symbol(_))) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let mut depth = 0i64;
    // A parameter's name opens the parameter list or follows one of its top-level commas.
    let mut expect_name = false;
    for t in &f.toks[start + 1..] {
        match &t.tok {
            Tok::Punct("(") | Tok::Punct("[") | Tok::Punct("{") | Tok::Punct("<") => {
                depth += 1;
                if depth == 1 {
                    expect_name = true;
                    continue;
                }
            }
            Tok::Punct(")") | Tok::Punct("]") | Tok::Punct("}") | Tok::Punct(">") => {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            Tok::Punct(",") if depth == 1 => {
                expect_name = true;
                continue;
            }
            Tok::Value(v) if depth == 1 && expect_name => out.push(v.clone()),
            _ => {}
        }
        expect_name = false;
    }
    out
}

impl<'m> Cx<'m> {
    /// `%r... = tt.call @f(%a, ...) : (...) -> (...)`: the body of `f` imported here, its
    /// parameters bound to the operands and the results to what it returns.
    pub(super) fn call_op(&mut self, op: &Op, _span: Span) -> R<()> {
        let Some(sym) = func_symbol(op) else {
            return Err(self.misuse(op, "names no function"));
        };
        let Some(f) = self.funcs.get(&sym).copied() else {
            return Err(self.unsupported(
                op,
                &format!("a call of `@{sym}`, which the module does not define"),
            ));
        };
        if self.inlining.contains(&sym) {
            return Err(self.unsupported(op, &format!("a recursive call of `@{sym}`")));
        }
        let params = func_params(f);
        let args = self.operands(op)?;
        if args.len() != params.len() {
            return Err(self.misuse(
                op,
                format!(
                    "passes {} operands to `@{sym}`, which takes {}",
                    args.len(),
                    params.len()
                ),
            ));
        }
        let mut bound = Vec::with_capacity(args.len());
        for (n, s) in &args {
            bound.push(self.get(n, *s)?);
        }
        let Some(body) = f.regions.first() else {
            return Err(self.unsupported(op, &format!("a call of `@{sym}`, a declaration without a body")));
        };
        self.inlining.push(sym);
        self.scopes.push(HashMap::new());
        for (p, v) in params.iter().zip(bound) {
            self.bind(p, v);
        }
        let mut returned = Vec::new();
        let mut result = Ok(());
        for inner in &body.ops {
            if inner.name == "tt.return" {
                match self.operands(inner) {
                    Ok(vals) => {
                        for (n, s) in vals {
                            match self.get(&n, s) {
                                Ok(v) => returned.push(v),
                                Err(e) => result = Err(e),
                            }
                        }
                    }
                    Err(e) => result = Err(e),
                }
                break;
            }
            self.op_or_report(inner);
        }
        self.scopes.pop();
        self.inlining.pop();
        result?;
        if returned.len() != op.results.len() {
            return Err(self.misuse(
                op,
                format!(
                    "has {} results; the callee returns {}",
                    op.results.len(),
                    returned.len()
                ),
            ));
        }
        for (r, v) in op.results.clone().iter().zip(returned) {
            self.bind(r, v);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_func(text: &str) -> Op {
        let toks = crate::lexer::lex(text, 0).expect("lexes");
        let m = crate::syntax::parse(toks).expect("parses");
        let module = m.ops.iter().find(|o| o.name == "module").expect("module");
        module.regions[0]
            .ops
            .iter()
            .find(|o| o.name == "tt.func")
            .expect("func")
            .clone()
    }

    #[test]
    fn parameters_and_symbol_of_a_private_function() {
        let f = first_func(
            "module {\n  tt.func private @k.helper__fp32(%a: f32 {tt.divisibility = 1 : i64} loc(\"a\"(#loc1)), %p: !tt.ptr<f32> loc(\"p\"(#loc1))) -> (f32, f32) attributes {noinline = true} {\n    tt.return %a, %a : f32, f32\n  }\n}\n",
        );
        assert_eq!(func_symbol(&f).as_deref(), Some("k.helper__fp32"));
        assert_eq!(func_params(&f), vec!["a".to_string(), "p".to_string()]);
    }
}
