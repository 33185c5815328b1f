//! From tokens to a [`Module`]: the header directives, module-level variables, and each
//! `.entry` with its parameters, register and shared-memory declarations, labels and
//! instructions (guard, opcode, dotted modifiers, operands), every instruction carrying its PTX
//! line and the `.loc` source position in force where it stands. Nothing here knows what an
//! instruction means; `program` resolves them.

use crate::Error;
use bwsim_isa::inline_ptx::lex::{comma_list, lex, Dialect, Literal, SyntaxError, Tok, Tokens};
use bwsim_isa::span::Span;
use std::collections::{BTreeMap, HashMap};

/// A state space of a variable or a memory instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Space {
    Global,
    Shared,
    Param,
    Local,
    Const,
}

/// A `.loc FILE LINE COL` position (with the position it was inlined at, if the `.loc` says).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Loc {
    pub file: u32,
    pub line: u32,
    pub col: u32,
    pub inlined_at: Option<(u32, u32, u32)>,
}

/// A variable: a module-level `.global`/`.shared`, or one declared in a kernel's body.
#[derive(Clone, Debug, PartialEq)]
pub struct Var {
    pub name: String,
    pub space: Space,
    pub align: u32,
    /// Bytes of one element (`.b8`: 1, `.b32`: 4, ...).
    pub elem_bytes: u32,
    /// Elements; `None` for an unsized `.extern` array (the launch's dynamic shared memory).
    pub count: Option<u64>,
    /// An initializer's elements (integers, each `elem_bytes` wide).
    pub init: Vec<u64>,
    pub span: Span,
}

impl Var {
    pub fn bytes(&self) -> u64 {
        self.count.unwrap_or(0) * self.elem_bytes as u64
    }
}

/// A kernel parameter: `.param .u64 NAME`, `.param .align 64 .b8 NAME[128]` (a tensor map).
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub name: String,
    /// The type word (`u64`, `b8`, ...).
    pub ty: String,
    pub bytes: u32,
    pub align: u32,
    /// Byte offset in the parameter space.
    pub offset: u32,
    pub span: Span,
}

/// A register declared by `.reg`.
#[derive(Clone, Debug, PartialEq)]
pub struct Reg {
    pub name: String,
    /// Width in bits (1: a predicate).
    pub bits: u32,
}

/// An operand as written.
#[derive(Clone, Debug, PartialEq)]
pub enum Operand {
    /// A declared register (index into [`Kernel::regs`]).
    Reg(u16),
    /// `!%p`.
    NotReg(u16),
    /// `%tid.x` and the like: the register's name and its component (`x`, `y`, `z`, or none).
    Special(String, Option<char>),
    /// An integer immediate (two's complement bits).
    Int(u64),
    F32(u32),
    F64(u64),
    /// A name that is not a register: a label, a parameter, a variable.
    Sym(String),
    /// `_`: a sink.
    Sink,
    /// `{a, b, ...}`.
    Vec(Vec<Operand>),
    /// `[base+offset]`.
    Addr(Addr),
    /// `p|q`.
    Pair(u16, Option<u16>),
    /// `_|q`: a sink for the first destination, a register for the second (`elect.sync _|%p`).
    SinkPair(u16),
    /// `[tensor map, {coordinates}]` (`cp.async.bulk.tensor`).
    Tensor(Addr, Vec<Operand>),
}

impl From<Literal> for Operand {
    fn from(l: Literal) -> Operand {
        match l {
            Literal::Int(v) => Operand::Int(v),
            Literal::F32(b) => Operand::F32(b),
            Literal::F64(b) => Operand::F64(b),
        }
    }
}

/// An address operand `[base + offset]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Addr {
    pub base: Option<AddrBase>,
    pub offset: i64,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AddrBase {
    Reg(u16),
    Sym(String),
}

/// One instruction as written.
#[derive(Clone, Debug, PartialEq)]
pub struct Instr {
    /// `@%p` (false) or `@!%p` (true).
    pub guard: Option<(u16, bool)>,
    pub opcode: String,
    pub mods: Vec<String>,
    pub operands: Vec<Operand>,
    /// From the opcode to the `;`.
    pub span: Span,
    /// The guard included.
    pub full_span: Span,
    /// 1-based line of the PTX file.
    pub ptx_line: u32,
    pub loc: Option<Loc>,
}

/// A statement of a kernel's body.
#[derive(Clone, Debug, PartialEq)]
pub enum Stmt {
    Label(String, Span),
    Instr(Instr),
}

/// One `.entry`.
#[derive(Clone, Debug, PartialEq)]
pub struct Kernel {
    pub name: String,
    pub span: Span,
    pub params: Vec<Param>,
    pub regs: Vec<Reg>,
    pub reg_index: HashMap<String, u16>,
    /// `.shared` (and other) variables declared in the body.
    pub vars: Vec<Var>,
    pub body: Vec<Stmt>,
    /// `.reqntid`/`.maxntid`, as written.
    pub reqntid: Option<Vec<u32>>,
    pub maxntid: Option<Vec<u32>>,
    /// `.reqnctapercluster`/`.explicitcluster`: a cluster shape, if any.
    pub cluster: Option<Vec<u32>>,
    /// `LABEL: .branchtargets L0, L1, ...;`: the jump tables `brx.idx` names, by label.
    pub branch_targets: HashMap<String, Vec<String>>,
}

/// A parsed PTX file.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Module {
    pub version: Option<(u32, u32)>,
    pub target: Vec<String>,
    pub address_size: Option<u32>,
    /// `.file N "name"`.
    pub files: BTreeMap<u32, String>,
    pub vars: Vec<Var>,
    pub kernels: Vec<Kernel>,
    /// `.func` definitions and declarations, in file order.
    pub funcs: Vec<Func>,
}

/// A `.func`, read as a kernel is (name, parameters, body), with its return parameters
/// (`.func (.param .b32 func_retval0) NAME (...)`); a declaration (`.extern .func
/// __assertfail (...)`) has no body.
#[derive(Clone, Debug, PartialEq)]
pub struct Func {
    pub rets: Vec<Param>,
    pub k: Kernel,
    pub defined: bool,
}

impl Func {
    /// The function's body, if the file defines it.
    pub fn body(&self) -> Option<&Kernel> {
        self.defined.then_some(&self.k)
    }
}

impl Module {
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }
    /// The `.func` named `name` (its definition, if the file has one, else its declaration).
    pub fn func(&self, name: &str) -> Option<&Func> {
        let named = || self.funcs.iter().filter(|f| f.k.name == name);
        named().find(|f| f.defined).or_else(|| named().next())
    }
}

/// The width of a `.reg` type.
fn reg_bits(t: &str) -> Option<u32> {
    Some(match t {
        "pred" => 1,
        "b8" | "u8" | "s8" => 8,
        "b16" | "u16" | "s16" | "f16" | "bf16" => 16,
        "b32" | "u32" | "s32" | "f32" | "f16x2" | "bf16x2" => 32,
        "b64" | "u64" | "s64" | "f64" | "f32x2" => 64,
        "b128" => 128,
        _ => return None,
    })
}

/// Bytes of a scalar type word (`b8` 1, `u64` 8, `f16` 2, ...).
pub fn type_bytes(t: &str) -> Option<u32> {
    match t {
        "pred" => None,
        _ => reg_bits(t).map(|b| b.div_ceil(8)),
    }
}

/// Parses a whole PTX file.
pub fn parse(src: &str) -> Result<Module, Error> {
    let toks = lex(src, Dialect::File)?;
    let mut p = P {
        src,
        t: Tokens::new(toks, src.len()),
        lines: Lines::new(src),
        loc: None,
        asm: (0, false),
        scopes: Vec::new(),
        scope_count: 0,
    };
    p.module()
}

struct P<'s> {
    src: &'s str,
    /// The tokens, and the current one.
    t: Tokens,
    lines: Lines,
    loc: Option<Loc>,
    /// How far the source was scanned for LLVM's inline-assembly markers, and whether that
    /// point is inside a `// begin inline asm` ... `// end inline asm` block.
    asm: (usize, bool),
    /// The nested `{ }` scopes open in a kernel's body (inline-assembly blocks declare their
    /// own registers and labels, which may repeat from block to block).
    scopes: Vec<Scope>,
    scope_count: u32,
}

impl P<'_> {
    /// Whether byte `at` lies in an inline-assembly block of LLVM's output (between `// begin
    /// inline asm` and `// end inline asm`). LLVM numbers the `.loc` lines it writes inside a
    /// block from the block's own `.loc`, one per line of the assembly string (Triton's
    /// two-line loads name the statement after theirs), so there the position in force at the
    /// block's start stays.
    fn in_inline_asm(&mut self, at: usize) -> bool {
        let (from, mut inside) = self.asm;
        if at > from {
            let text = &self.src[from..at];
            let (b, e) = (text.rfind("// begin inline asm"), text.rfind("// end inline asm"));
            inside = match (b, e) {
                (Some(b), Some(e)) => b > e,
                (Some(_), None) => true,
                (None, Some(_)) => false,
                (None, None) => inside,
            };
            self.asm = (at, inside);
        }
        inside
    }
}

/// One nested scope: its number, the registers it declares (source name to the kernel-wide
/// name it is given) and where its statements start in the body.
struct Scope {
    id: u32,
    regs: HashMap<String, String>,
    start: usize,
    /// Where the variables it declares start in the kernel's `vars`.
    vars: usize,
}

/// Where the lines of a text start, to number the line of a byte offset.
#[derive(Clone, Debug, PartialEq)]
pub struct Lines(Vec<usize>);

impl Lines {
    pub fn new(src: &str) -> Lines {
        let starts = src.bytes().enumerate().filter(|(_, c)| *c == b'\n');
        Lines(std::iter::once(0).chain(starts.map(|(i, _)| i + 1)).collect())
    }
    /// 1-based line of byte offset `at`.
    pub fn of(&self, at: usize) -> u32 {
        self.0.partition_point(|&s| s <= at) as u32
    }
}

impl AsMut<Tokens> for P<'_> {
    fn as_mut(&mut self) -> &mut Tokens {
        &mut self.t
    }
}

impl From<SyntaxError> for Error {
    fn from(e: SyntaxError) -> Error {
        Error::Syntax {
            message: e.with_found("the end of the file"),
            span: e.span,
        }
    }
}

impl P<'_> {
    fn line(&self, at: usize) -> u32 {
        self.lines.of(at)
    }
    fn err(&self, span: Span, m: impl Into<String>) -> Error {
        Error::Syntax {
            message: m.into(),
            span,
        }
    }
    /// The error `m` about the current token, saying what it is.
    fn err_here(&self, m: impl Into<String>) -> Error {
        self.t.unexpected(m).into()
    }
    fn int(&mut self, what: &str) -> Result<u64, Error> {
        match self.t.peek() {
            Some(Tok::Int(v)) => {
                let v = *v;
                self.t.i += 1;
                Ok(v)
            }
            _ => Err(self.err_here(format!("expected {what}"))),
        }
    }
    fn int32(&mut self, what: &str) -> Result<u32, Error> {
        let at = self.t.span();
        let v = self.int(what)?;
        u32::try_from(v).map_err(|_| self.err(at, format!("{what} {v} is too large")))
    }
    fn ident(&mut self, what: &str) -> Result<(String, Span), Error> {
        match self.t.peek() {
            Some(Tok::Ident(n)) => {
                let n = n.clone();
                let s = self.t.span();
                self.t.i += 1;
                Ok((n, s))
            }
            _ => Err(self.err_here(format!("expected {what}"))),
        }
    }
    /// Skips the rest of the current line (tokens that start on it).
    fn skip_line(&mut self, line: u32) {
        while self.t.i < self.t.toks.len() && self.line(self.t.toks[self.t.i].span.start as usize) == line {
            self.t.i += 1;
        }
    }
    /// Skips a balanced `{ ... }` group starting at the current `{`.
    fn skip_braces(&mut self) -> Result<(), Error> {
        let open = self.t.span();
        self.t.expect('{', "opening a block")?;
        let mut depth = 1;
        while depth > 0 {
            match self.t.peek() {
                Some(Tok::Punct('{')) => depth += 1,
                Some(Tok::Punct('}')) => depth -= 1,
                None => return Err(self.err(open, "this `{` is never closed")),
                _ => {}
            }
            self.t.i += 1;
        }
        Ok(())
    }

    fn module(&mut self) -> Result<Module, Error> {
        let mut m = Module::default();
        while let Some(t) = self.t.peek().cloned() {
            let at = self.t.span();
            match t {
                Tok::Dot(d) => match d.as_str() {
                    "version" => {
                        self.t.i += 1;
                        match self.t.peek() {
                            Some(Tok::F64Bits(b)) => {
                                let text = &self.src[self.t.span().range()];
                                let (a, b2) = text.split_once('.').unwrap_or((text, "0"));
                                let _ = b;
                                m.version = Some((
                                    a.parse()
                                        .map_err(|_| self.err(self.t.span(), "malformed `.version`"))?,
                                    b2.parse()
                                        .map_err(|_| self.err(self.t.span(), "malformed `.version`"))?,
                                ));
                                self.t.i += 1;
                            }
                            _ => return Err(self.err_here("expected a version such as `8.7`")),
                        }
                    }
                    "target" => {
                        self.t.i += 1;
                        loop {
                            let (t, _) = self.ident("a target such as `sm_100a`")?;
                            m.target.push(t);
                            if !self.t.eat(',') {
                                break;
                            }
                        }
                    }
                    "address_size" => {
                        self.t.i += 1;
                        m.address_size = Some(self.int32("the address size")?);
                    }
                    "file" => {
                        self.t.i += 1;
                        let n = self.int32("a file number")?;
                        match self.t.peek() {
                            Some(Tok::Str(s)) => {
                                m.files.insert(n, s.clone());
                                self.t.i += 1;
                            }
                            _ => return Err(self.err_here("expected the file's name")),
                        }
                        while self.t.eat(',') {
                            self.int("a timestamp or size")?;
                        }
                    }
                    "section" => {
                        self.t.i += 1;
                        self.ident("a section name").or_else(|_| match self.t.peek() {
                            Some(Tok::Dot(s)) => {
                                let s = s.clone();
                                self.t.i += 1;
                                Ok((s, at))
                            }
                            _ => Err(self.err_here("expected a section name")),
                        })?;
                        self.skip_braces()?;
                    }
                    "visible" | "weak" | "extern" => {
                        self.t.i += 1;
                    }
                    "entry" => {
                        self.t.i += 1;
                        let k = self.entry(at)?;
                        m.kernels.push(k);
                    }
                    "func" => {
                        self.t.i += 1;
                        let f = self.func(at)?;
                        m.funcs.push(f);
                    }
                    "global" | "shared" | "const" => {
                        let v = self.var_decl()?;
                        m.vars.push(v);
                    }
                    _ => return Err(self.err(at, format!("the module-level directive `.{d}` is not read"))),
                },
                _ => return Err(self.err_here("expected a directive (`.version`, `.entry`, ...)")),
            }
        }
        Ok(m)
    }

    /// `.global|.shared|.const [.align N] .TYPE NAME[N]? [= {..} | = V];` (the space word is
    /// the current token).
    fn var_decl(&mut self) -> Result<Var, Error> {
        let start = self.t.span();
        let space = match self.t.peek() {
            Some(Tok::Dot(d)) => match d.split("::").next().unwrap_or("") {
                "global" => Space::Global,
                "shared" => Space::Shared,
                "const" => Space::Const,
                "local" => Space::Local,
                "param" => Space::Param,
                _ => return Err(self.err_here("expected a state space")),
            },
            _ => return Err(self.err_here("expected a state space")),
        };
        self.t.i += 1;
        let mut align = 0;
        let mut elem_bytes = None;
        while let Some(Tok::Dot(d)) = self.t.peek().cloned() {
            self.t.i += 1;
            if d == "align" {
                align = self.int32("an alignment")?;
            } else if let Some(b) = type_bytes(&d) {
                elem_bytes = Some(b);
            } else if d == "v2" || d == "v4" {
                return Err(self.err(start, "vector variables are not read yet"));
            }
        }
        let elem_bytes = elem_bytes.ok_or_else(|| self.err(start, "the variable has no type"))?;
        let (name, _) = self.ident("the variable's name")?;
        let mut count = Some(1);
        if self.t.eat('[') {
            if self.t.eat(']') {
                count = None;
            } else {
                count = Some(self.int("the array's length")?);
                self.t.expect(']', "closing the array's length")?;
            }
        }
        let mut init = Vec::new();
        if self.t.eat('=') {
            if self.t.eat('{') {
                loop {
                    init.push(self.int("an initializer element")?);
                    if !self.t.eat(',') {
                        break;
                    }
                }
                self.t.expect('}', "closing the initializer")?;
            } else {
                init.push(self.int("an initializer")?);
            }
        }
        self.t.expect(';', "after a variable declaration")?;
        Ok(Var {
            name,
            space,
            align: align.max(elem_bytes),
            elem_bytes,
            count,
            init,
            span: start.to(Span::new(self.t.prev_end(), self.t.prev_end())),
        })
    }

    /// `( .param ... NAME[, ...] )`, or nothing: a parameter list, its offsets laid out from 0.
    fn param_list(&mut self) -> Result<Vec<Param>, Error> {
        let mut params = Vec::new();
        let mut offset = 0u32;
        if self.t.eat('(') && !self.t.eat(')') {
            loop {
                let pstart = self.t.span();
                if !self.t.eat_dot("param") {
                    return Err(self.err_here("expected `.param`"));
                }
                let mut align = 0;
                let mut ty = None;
                while let Some(Tok::Dot(d)) = self.t.peek().cloned() {
                    self.t.i += 1;
                    match d.as_str() {
                        "align" => align = self.int32("an alignment")?,
                        "ptr" | "global" | "shared" | "const" | "local" => {}
                        t if type_bytes(t).is_some() => ty = Some(t.to_string()),
                        _ => return Err(self.err(pstart, format!("`.{d}` in a parameter is not read"))),
                    }
                }
                let ty = ty.ok_or_else(|| self.err(pstart, "the parameter has no type"))?;
                let (pname, _) = self.ident("the parameter's name")?;
                let eb = type_bytes(&ty).unwrap_or(1);
                let mut bytes = eb;
                if self.t.eat('[') {
                    let at = self.t.span();
                    let n = self.int32("the array's length")?;
                    bytes = n
                        .checked_mul(eb)
                        .ok_or_else(|| self.err(at, "the parameter is too large"))?;
                    self.t.expect(']', "closing the array's length")?;
                }
                let align = align.max(eb);
                offset = offset.div_ceil(align) * align;
                params.push(Param {
                    name: pname,
                    ty,
                    bytes,
                    align,
                    offset,
                    span: pstart.to(Span::new(self.t.prev_end(), self.t.prev_end())),
                });
                offset += bytes;
                if self.t.eat(',') {
                    continue;
                }
                self.t.expect(')', "closing the parameter list")?;
                break;
            }
        }
        Ok(params)
    }

    /// `.func [(RETURN PARAMS)] NAME [(PARAMS)] [directives] { BODY }`, or its declaration
    /// ending in `;` (the `.func` word is behind).
    fn func(&mut self, start: Span) -> Result<Func, Error> {
        let rets = if self.t.peek() == Some(&Tok::Punct('(')) {
            self.param_list()?
        } else {
            Vec::new()
        };
        let (k, defined) = self.signature_and_body(start, true)?;
        Ok(Func { rets, k, defined })
    }

    fn entry(&mut self, start: Span) -> Result<Kernel, Error> {
        Ok(self.signature_and_body(start, false)?.0)
    }

    /// `NAME [(PARAMS)] [directives]`, then the body, or (`decl`: for a `.func`) a `;`
    /// ending a declaration: the kernel, and whether it had a body.
    fn signature_and_body(&mut self, start: Span, decl: bool) -> Result<(Kernel, bool), Error> {
        let (name, _) = self.ident("the kernel's name")?;
        let params = self.param_list()?;
        let mut k = Kernel {
            name,
            span: start,
            params,
            regs: Vec::new(),
            reg_index: HashMap::new(),
            vars: Vec::new(),
            body: Vec::new(),
            reqntid: None,
            maxntid: None,
            cluster: None,
            branch_targets: HashMap::new(),
        };
        // Performance directives before the body.
        while let Some(Tok::Dot(d)) = self.t.peek().cloned() {
            self.t.i += 1;
            let mut dims = Vec::new();
            if d != "explicitcluster" && d != "noreturn" {
                loop {
                    dims.push(self.int32("a number")?);
                    if !self.t.eat(',') {
                        break;
                    }
                }
            }
            match d.as_str() {
                "reqntid" => k.reqntid = Some(dims),
                "maxntid" => k.maxntid = Some(dims),
                "reqnctapercluster" => k.cluster = Some(dims),
                _ => {}
            }
        }
        let has_body = !(decl && self.t.eat(';'));
        if has_body {
            self.body(&mut k)?;
        }
        k.span = start.to(Span::new(self.t.prev_end(), self.t.prev_end()));
        Ok((k, has_body))
    }

    fn body(&mut self, k: &mut Kernel) -> Result<(), Error> {
        let open = self.t.span();
        self.t.expect('{', "opening the kernel's body")?;
        loop {
            let at = self.t.span();
            match self.t.peek().cloned() {
                None => return Err(self.err(open, "the kernel's body is never closed")),
                Some(Tok::Punct('}')) => {
                    self.t.i += 1;
                    match self.scopes.pop() {
                        Some(sc) => close_scope(k, &sc),
                        None => return Ok(()),
                    }
                }
                Some(Tok::Punct('{')) => {
                    // A nested scope (an inline-assembly block): its registers and labels are
                    // renamed apart from the kernel's (`close_scope`).
                    self.t.i += 1;
                    self.scope_count += 1;
                    self.scopes.push(Scope {
                        id: self.scope_count,
                        regs: HashMap::new(),
                        start: k.body.len(),
                        vars: k.vars.len(),
                    });
                }
                Some(Tok::Punct(';')) => {
                    self.t.i += 1;
                }
                Some(Tok::Dot(d)) => match d.as_str() {
                    "reg" => {
                        self.t.i += 1;
                        self.reg_decl(k, at)?;
                    }
                    "loc" => {
                        self.t.i += 1;
                        let line = self.line(at.start as usize);
                        let file = self.int32("a file number")?;
                        let l = self.int32("a line")?;
                        let col = self.int32("a column")?;
                        let mut loc = Loc {
                            file,
                            line: l,
                            col,
                            inlined_at: None,
                        };
                        while self.t.eat(',') {
                            match self.t.peek() {
                                Some(Tok::Ident(w)) if w == "inlined_at" => {
                                    self.t.i += 1;
                                    let f = self.int32("a file number")?;
                                    let l = self.int32("a line")?;
                                    let c = self.int32("a column")?;
                                    loc.inlined_at = Some((f, l, c));
                                }
                                _ => {
                                    // `function_name $L__info_string0` and the like.
                                    self.t.i += 1;
                                    if matches!(self.t.peek(), Some(Tok::Ident(_))) {
                                        self.t.i += 1;
                                    }
                                }
                            }
                        }
                        self.skip_line(line);
                        if !self.in_inline_asm(at.start as usize) {
                            self.loc = Some(loc);
                        }
                    }
                    "branchtargets" => {
                        self.t.i += 1;
                        let Some(Stmt::Label(table, _)) = k.body.last() else {
                            return Err(self.err(at, "`.branchtargets` needs a label before it"));
                        };
                        let table = table.clone();
                        let mut targets = Vec::new();
                        loop {
                            targets.push(self.ident("a label")?.0);
                            if !self.t.eat(',') {
                                break;
                            }
                        }
                        self.t.expect(';', "after `.branchtargets`")?;
                        k.branch_targets.insert(table, targets);
                    }
                    "pragma" => {
                        self.t.i += 1;
                        while !matches!(self.t.peek(), Some(Tok::Punct(';')) | None) {
                            self.t.i += 1;
                        }
                        self.t.expect(';', "after `.pragma`")?;
                    }
                    "shared" | "local" | "global" | "const" | "param" => {
                        let v = self.var_decl()?;
                        k.vars.push(v);
                    }
                    _ => {
                        return Err(
                            self.err(at, format!("the directive `.{d}` in a kernel's body is not read"))
                        )
                    }
                },
                Some(Tok::Ident(n))
                    if self.t.toks.get(self.t.i + 1).map(|t| &t.tok) == Some(&Tok::Punct(':')) =>
                {
                    self.t.i += 2;
                    k.body.push(Stmt::Label(n, at));
                }
                Some(_) => {
                    let ins = self.instruction(k)?;
                    k.body.push(Stmt::Instr(ins));
                }
            }
        }
    }

    fn reg_decl(&mut self, k: &mut Kernel, start: Span) -> Result<(), Error> {
        let (ty, bits) = match self.t.peek().cloned() {
            Some(Tok::Dot(t)) => {
                self.t.i += 1;
                let b = reg_bits(&t)
                    .ok_or_else(|| self.err(start, format!("registers of type `.{t}` are not read")))?;
                (t, b)
            }
            _ => return Err(self.err_here("`.reg` needs a type (`.reg .b32 %r<4>;`)")),
        };
        let _ = ty;
        for (n, nspan) in self.t.declared_names(60_000)? {
            let n = match self.scopes.last_mut() {
                Some(sc) => {
                    let inner = format!("{n}$s{}", sc.id);
                    sc.regs.insert(n, inner.clone());
                    inner
                }
                None => n,
            };
            if k.regs.len() >= u16::MAX as usize {
                return Err(self.err(nspan, "too many registers"));
            }
            if k.reg_index.contains_key(&n) {
                return Err(self.err(nspan, format!("the register `{n}` is declared twice")));
            }
            k.reg_index.insert(n.clone(), k.regs.len() as u16);
            k.regs.push(Reg { name: n, bits });
        }
        Ok(())
    }

    fn reg_ref(&mut self, k: &Kernel) -> Result<u16, Error> {
        let (n, s) = self.ident("a register")?;
        self.lookup(k, &n)
            .ok_or_else(|| self.err(s, format!("`{n}` is not a declared register")))
    }

    /// The register `n` names here: the innermost scope's own first, then the kernel's.
    fn lookup(&self, k: &Kernel, n: &str) -> Option<u16> {
        self.scopes
            .iter()
            .rev()
            .find_map(|sc| sc.regs.get(n))
            .and_then(|inner| k.reg_index.get(inner))
            .or_else(|| k.reg_index.get(n))
            .copied()
    }

    fn instruction(&mut self, k: &Kernel) -> Result<Instr, Error> {
        let full_start = self.t.span();
        let mut guard = None;
        if self.t.eat('@') {
            let neg = self.t.eat('!');
            let r = self.reg_ref(k)?;
            if k.regs[r as usize].bits != 1 {
                return Err(self.err(
                    full_start,
                    format!("the guard `{}` is not a predicate", k.regs[r as usize].name),
                ));
            }
            guard = Some((r, neg));
        }
        let op_span = self.t.span();
        let (opcode, _) = self.ident("an instruction")?;
        let mods = self.t.modifiers();
        let operands = if opcode == "call" {
            self.call_operands(k)?
        } else if self.t.peek() == Some(&Tok::Punct(';')) {
            Vec::new()
        } else {
            comma_list(self, |p| p.operand(k))?
        };
        if !self.t.eat(';') {
            return Err(self.err_here(format!("expected `;` after `{opcode}`'s operands")));
        }
        let end = self.t.prev_end();
        Ok(Instr {
            guard,
            opcode,
            mods,
            operands,
            span: Span::new(op_span.start as usize, end),
            full_span: Span::new(full_start.start as usize, end),
            ptx_line: self.line(op_span.start as usize),
            loc: self.loc,
        })
    }

    /// `call`'s operands, `[(RETS),] NAME[, (ARGS)]`, as `[Vec(RETS), Sym(NAME), Vec(ARGS)]`.
    fn call_operands(&mut self, k: &Kernel) -> Result<Vec<Operand>, Error> {
        let list = |p: &mut Self| -> Result<Vec<Operand>, Error> {
            p.t.expect('(', "opening a call's parameter list")?;
            if p.t.eat(')') {
                return Ok(Vec::new());
            }
            let v = comma_list(p, |p| p.operand(k))?;
            p.t.expect(')', "closing a call's parameter list")?;
            Ok(v)
        };
        let rets = if self.t.peek() == Some(&Tok::Punct('(')) {
            let r = list(self)?;
            self.t.expect(',', "after a call's return parameters")?;
            r
        } else {
            Vec::new()
        };
        let (name, _) = self.ident("the called function")?;
        let args = if self.t.eat(',') { list(self)? } else { Vec::new() };
        Ok(vec![Operand::Vec(rets), Operand::Sym(name), Operand::Vec(args)])
    }

    fn operand(&mut self, k: &Kernel) -> Result<Operand, Error> {
        if self.t.eat('-') {
            return self
                .t
                .literal()
                .map(|l| Operand::from(l.negated()))
                .ok_or_else(|| self.err_here("expected a number after `-`"));
        }
        if let Some(l) = self.t.literal() {
            return Ok(Operand::from(l));
        }
        match self.t.peek().cloned() {
            Some(Tok::Punct('{')) => {
                self.t.i += 1;
                let v = comma_list(self, |p| p.operand(k))?;
                self.t.expect('}', "closing the vector operand")?;
                Ok(Operand::Vec(v))
            }
            Some(Tok::Punct('[')) => {
                self.t.i += 1;
                let mut base = None;
                let mut offset: i64 = 0;
                match self.t.peek().cloned() {
                    Some(Tok::Ident(n)) => {
                        self.t.i += 1;
                        base = Some(match self.lookup(k, &n) {
                            Some(r) => AddrBase::Reg(r),
                            None => AddrBase::Sym(n),
                        });
                        if self.t.eat('+') {
                            let neg = self.t.eat('-');
                            let v = self.int("an offset")? as i64;
                            offset = if neg { v.wrapping_neg() } else { v };
                        } else if self.t.eat('-') {
                            offset = (self.int("an offset")? as i64).wrapping_neg();
                        }
                    }
                    Some(Tok::Int(v)) => {
                        self.t.i += 1;
                        offset = v as i64;
                    }
                    _ => return Err(self.err_here("expected an address")),
                }
                if self.t.peek() == Some(&Tok::Punct(','))
                    && self.t.toks.get(self.t.i + 1).map(|t| &t.tok) == Some(&Tok::Punct('{'))
                {
                    // `[tmap, {c0, c1}]`: a tensor map and the box's coordinates.
                    self.t.i += 1;
                    let Operand::Vec(coords) = self.operand(k)? else {
                        return Err(self.err_here("expected the box's coordinates"));
                    };
                    self.t.expect(']', "closing the tensor operand")?;
                    return Ok(Operand::Tensor(Addr { base, offset }, coords));
                }
                self.t.expect(']', "closing the address")?;
                Ok(Operand::Addr(Addr { base, offset }))
            }
            Some(Tok::Punct('!')) => {
                self.t.i += 1;
                Ok(Operand::NotReg(self.reg_ref(k)?))
            }
            Some(Tok::Ident(n)) => {
                let span = self.t.span();
                self.t.i += 1;
                if n == "_" {
                    if self.t.eat('|') {
                        return Ok(Operand::SinkPair(self.reg_ref(k)?));
                    }
                    return Ok(Operand::Sink);
                }
                if let Some(r) = self.lookup(k, &n) {
                    if self.t.eat('|') {
                        let q = if self.t.eat_sink() {
                            None
                        } else {
                            Some(self.reg_ref(k)?)
                        };
                        return Ok(Operand::Pair(r, q));
                    }
                    return Ok(Operand::Reg(r));
                }
                if n.starts_with('%') {
                    // A special register, with its component written right after it.
                    let mut comp = None;
                    if let Some(t) = self.t.toks.get(self.t.i) {
                        if let Tok::Dot(c) = &t.tok {
                            if t.span.start == span.end && c.len() == 1 {
                                comp = c.chars().next();
                                self.t.i += 1;
                            }
                        }
                    }
                    return Ok(Operand::Special(n, comp));
                }
                Ok(Operand::Sym(n))
            }
            _ => Err(self.err_here("expected an operand")),
        }
    }
}

/// Closes a nested scope: the labels it defines and the variables it declares (a call
/// sequence's `.param param0;`) get its number (`waitLoop$s3`), in their definitions and in the
/// operands of the scope that name them.
fn close_scope(k: &mut Kernel, sc: &Scope) {
    let start = sc.start.min(k.body.len());
    let mut names: Vec<String> = k.body[start..]
        .iter()
        .filter_map(|st| match st {
            Stmt::Label(l, _) if !l.contains("$s") => Some(l.clone()),
            _ => None,
        })
        .collect();
    let rename = |l: &str| format!("{l}$s{}", sc.id);
    for v in k.vars.iter_mut().skip(sc.vars) {
        if !v.name.contains("$s") {
            names.push(v.name.clone());
            v.name = rename(&v.name);
        }
    }
    if names.is_empty() {
        return;
    }
    for st in &mut k.body[start..] {
        match st {
            Stmt::Label(l, _) if names.contains(l) => *l = rename(l),
            Stmt::Instr(i) => rename_syms(&mut i.operands, &|n| {
                names.contains(&n.to_string()).then(|| rename(n))
            }),
            _ => {}
        }
    }
}

/// Renames the symbols (`Sym` operands and address bases, through vectors) that `f` maps.
pub(crate) fn rename_syms(os: &mut [Operand], f: &dyn Fn(&str) -> Option<String>) {
    let addr = |a: &mut Addr| {
        if let Some(AddrBase::Sym(n)) = &mut a.base {
            if let Some(m) = f(n) {
                *n = m;
            }
        }
    };
    for o in os {
        match o {
            Operand::Sym(n) => {
                if let Some(m) = f(n) {
                    *n = m;
                }
            }
            Operand::Addr(a) => addr(a),
            Operand::Tensor(a, cs) => {
                addr(a);
                rename_syms(cs, f);
            }
            Operand::Vec(v) => rename_syms(v, f),
            _ => {}
        }
    }
}
