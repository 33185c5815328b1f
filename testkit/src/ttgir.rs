//! TTGIR cases: a `.ttgir` text with an optional launch sidecar, how one travels as bytes, and
//! the MLIR-aware mutations that make them from the seed corpus of every Triton release.
//!
//! The mutations know the shape of MLIR as Triton prints it, one operation per line:
//! - operations (lines) deleted, duplicated, swapped, or spliced in from a seed of another
//!   release (a 3.6 line in a 3.9 file mixes their forms);
//! - tokens deleted, duplicated, swapped; MLIR fragments inserted (punctuation, operation names
//!   and forms from the version table, attributes, unclosed `tensor<`, deep nesting);
//! - integers perturbed (off by one, doubled, halved, signs, `i32`/`i64` boundaries) and shape
//!   dimensions likewise (`128x64xf16` → `128x65xf16`, `0x64xf16`, a dimension more or less);
//! - SSA values renamed with MLIR's `suffix-id` characters (`$._-`, digits only), at every use
//!   or at one;
//! - the `// triton-version:` line dropped, or set to a supported or an unsupported release;
//! - `!tt.tensordesc<tensor<...>>` (Triton 3.6-3.7) and `!tt.tensordesc<...>` (3.8 on) swapped;
//! - truncation, raw bytes that are not UTF-8, NUL;
//! - the launch sidecar dropped or mutated as `.tile` text ([`crate::mutate`]).
//!
//! Every choice is drawn from an [`arbitrary::Unstructured`], so the same bytes give the same
//! case.

use crate::corpus::TtgirSeed;
use crate::mutate;
use arbitrary::Unstructured;

/// A TTGIR case: the `.ttgir` bytes, and the launch sidecar's when it has one. Either may not
/// be UTF-8.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TtgirCase {
    pub ttgir: Vec<u8>,
    pub launch: Option<Vec<u8>>,
}

/// The line that separates the TTGIR from the launch sidecar in a case's bytes.
pub const LAUNCH_MARKER: &[u8] = b"\n// ---- bwsim-fuzz: launch sidecar ----\n";

impl TtgirCase {
    /// A case from UTF-8 texts.
    pub fn new(ttgir: &str, launch: Option<&str>) -> TtgirCase {
        TtgirCase {
            ttgir: ttgir.as_bytes().to_vec(),
            launch: launch.map(|l| l.as_bytes().to_vec()),
        }
    }

    /// The case as one byte string: the TTGIR, then (with a sidecar) [`LAUNCH_MARKER`] and the
    /// sidecar. [`TtgirCase::from_bytes`] reads it back.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = self.ttgir.clone();
        if let Some(l) = &self.launch {
            out.extend_from_slice(LAUNCH_MARKER);
            out.extend_from_slice(l);
        }
        out
    }

    /// Split bytes at the first [`LAUNCH_MARKER`]: the TTGIR before it, the sidecar after it
    /// (none without a marker). Any bytes are a case.
    pub fn from_bytes(bytes: &[u8]) -> TtgirCase {
        match bytes
            .windows(LAUNCH_MARKER.len())
            .position(|w| w == LAUNCH_MARKER)
        {
            Some(i) => TtgirCase {
                ttgir: bytes[..i].to_vec(),
                launch: Some(bytes[i + LAUNCH_MARKER.len()..].to_vec()),
            },
            None => TtgirCase {
                ttgir: bytes.to_vec(),
                launch: None,
            },
        }
    }

    /// Both parts' lengths together.
    pub fn len(&self) -> usize {
        self.ttgir.len() + self.launch.as_ref().map_or(0, Vec::len)
    }

    /// Whether both parts are empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A case drawn from `u`: a seed of `seeds` (any release) with up to `max_muts` TTGIR
/// mutations, its sidecar kept, dropped or mutated. With no seeds, the TTGIR is empty text
/// mutated.
pub fn case(u: &mut Unstructured, seeds: &[TtgirSeed], max_muts: usize) -> TtgirCase {
    let i = u.choose_index(seeds.len().max(1)).unwrap_or(0);
    case_from(u, seeds, i, max_muts)
}

/// [`case`] from seed `i` of `seeds`: the other seeds donate lines.
pub fn case_from(u: &mut Unstructured, seeds: &[TtgirSeed], i: usize, max_muts: usize) -> TtgirCase {
    let seed = seeds.get(i);
    let text = seed.map_or("", |s| s.text.as_str());
    let donor = if seeds.is_empty() {
        ""
    } else {
        let j = u.choose_index(seeds.len()).unwrap_or(0);
        seeds[j].text.as_str()
    };
    let ttgir = mutate_text(u, text, donor, max_muts);
    let launch =
        seed.and_then(|s| s.launch.as_deref())
            .and_then(|l| match u.int_in_range(0u8..=9).unwrap_or(0) {
                0 => None,
                1 | 2 => Some(mutate::mutate(u, l, 2)),
                _ => Some(l.as_bytes().to_vec()),
            });
    TtgirCase { ttgir, launch }
}

/// Releases for the `// triton-version:` line: supported ones as Triton spells them, and ones
/// that are not supported or not release numbers at all.
pub const RELEASES: &[&str] = &[
    "3.6.0",
    "3.7.1",
    "3.7.0",
    "3.8.0",
    "3.9.0",
    "3.9",
    "3.9.0+git1a2b3c4",
    "3.8.0rc1",
    "3.5.0",
    "3.5.1",
    "3.10.0",
    "4.0.0",
    "2.3.1",
    "3",
    "",
    "x.y.z",
    "3.99999999999999999999.0",
    "-3.6",
    "3.6.0 3.9.0",
];

/// MLIR fragments to insert: punctuation, openers without closers, names of what Triton
/// prints (operations, attributes, types), and locations.
pub const INSERTS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "<",
    ">",
    "[",
    "]",
    ",",
    ":",
    "=",
    "->",
    "\n",
    " ",
    "\"",
    "#",
    "%",
    "!",
    "@",
    "^bb0",
    "%0",
    "%undefined",
    "%c-1_i32",
    "%a_desc.shape.0",
    "%acc_state.phase_2",
    "%x$1",
    "#loc",
    "#loc999",
    "loc(",
    "loc(#loc)",
    "loc(unknown)",
    "loc(\"k.py\":2147483647:2147483647)",
    "loc(\"\":0:0)",
    "tensor<",
    "tensor<128x64xf16, #blocked>",
    "tensor<0xi32>",
    "!tt.ptr<f32>",
    "!tt.tensordesc<tensor<32x64xf32, #shared>>",
    "!tt.tensordesc<32x64xf32, #shared>",
    "!ttg.memdesc<128x64xf16, #shared, #smem, mutable>",
    "!ttg.async.token",
    "i128",
    "i1",
    "f8E4M3FN",
    "{async_task_id = array<i32: 0>}",
    "{\"ttng.two-ctas\" = true}",
    "\"ttg.num-ctas\" = 2 : i32",
    "\"ttg.num-warps\" = 0 : i32",
    "ttg.target = \"cuda:120\"",
    "read_only",
    "tt.func public @k() {",
    "tt.return",
    "scf.yield",
    "scf.for",
    "ttg.warp_specialize",
    "ttg.warp_return",
    "ttg.warp_yield",
    "arith.constant",
    "arith.addi",
    "tt.make_range",
    "tt.splat",
    "tt.load",
    "tt.store",
    "ttg.local_alloc",
    "ttng.init_barrier",
    "ttng.wait_barrier",
    "ttng.tc_gen5_mma",
    "ttng.tmem_alloc",
    "ttng.async_tma_copy_global_to_local",
    "dense<0.000000e+00>",
    "0x7FC00000",
    "-9223372036854775808",
    "9223372036854775808",
    "1e309",
    "\u{0}",
    "\u{feff}",
    "é",
];

/// Numbers at and beyond the boundaries the importer meets beyond
/// [`mutate::BOUNDARY_NUMBERS`] (those of the front end and the simulator): bit widths,
/// `i32`, `i64`.
const WIDE_NUMBERS: &[&str] = &[
    "31",
    "32",
    "33",
    "63",
    "64",
    "65",
    "127",
    "128",
    "129",
    "2147483647",
    "-2147483648",
    "2147483648",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "18446744073709551616",
];

/// Split TTGIR into rough tokens: a word with its sigil (`%acc_state.phase_2`, `#loc12`,
/// `!tt.ptr`, `@kernel`, `^bb0`, `128x64xf16`, `arith.addi`), a string with its quotes, `->`,
/// and single other characters. Concatenating the tokens gives the text back.
pub fn tokens(s: &str) -> Vec<String> {
    let word = |c: char| c.is_alphanumeric() || matches!(c, '_' | '.' | '$');
    let b: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let start = i;
        let c = b[i];
        if c == '"' {
            i += 1;
            while i < b.len() && b[i] != '"' && b[i] != '\n' {
                i += if b[i] == '\\' { 2 } else { 1 };
            }
            i = (i + 1).min(b.len());
        } else if matches!(c, '%' | '#' | '!' | '@' | '^') || word(c) {
            i += 1;
            // Value and block names are MLIR suffix-ids: `-` belongs to them.
            let suffix = matches!(c, '%' | '^' | '@');
            while i < b.len() && (word(b[i]) || (suffix && b[i] == '-')) {
                i += 1;
            }
        } else if c == '-' && b.get(i + 1) == Some(&'>') {
            i += 2;
        } else {
            i += 1;
        }
        out.push(b[start..i].iter().collect());
    }
    out
}

/// Mutate TTGIR `text` with up to `max_muts` mutations drawn from `u`; `donor` (another seed,
/// maybe of another release) lends lines. The result may not be UTF-8.
pub fn mutate_text(u: &mut Unstructured, text: &str, donor: &str, max_muts: usize) -> Vec<u8> {
    let mut text = text.to_string();
    let mut raw: Vec<(usize, Vec<u8>)> = Vec::new();
    let mut truncate_at: Option<usize> = None;
    let n_muts = u.int_in_range(1..=max_muts.max(1)).unwrap_or(1);
    for _ in 0..n_muts {
        match u.int_in_range(0u8..=39).unwrap_or(0) {
            0..=2 => lines_op(u, &mut text, Edit::Delete),
            3 | 4 => lines_op(u, &mut text, Edit::Duplicate),
            5 | 6 => lines_op(u, &mut text, Edit::Swap),
            7 | 8 => splice_line(u, &mut text, donor),
            9..=11 => tokens_op(u, &mut text, TokenOp::Edit(Edit::Delete)),
            12 => tokens_op(u, &mut text, TokenOp::Edit(Edit::Duplicate)),
            13 => tokens_op(u, &mut text, TokenOp::Edit(Edit::Swap)),
            14..=16 => tokens_op(u, &mut text, TokenOp::Insert),
            17..=20 => perturb_number(u, &mut text),
            21..=23 => perturb_shape(u, &mut text),
            24..=27 => rename_value(u, &mut text),
            28..=30 => version_line(u, &mut text),
            31..=33 => swap_tensordesc(u, &mut text),
            34 => tokens_op(u, &mut text, TokenOp::Nest),
            35 | 36 => {
                let at = u.choose_index(text.len() + 1).unwrap_or(0);
                let bytes = match u.arbitrary::<bool>() {
                    Ok(true) => u
                        .choose(crate::mutate::RAW_BYTES)
                        .copied()
                        .unwrap_or(b"\xff")
                        .to_vec(),
                    _ => {
                        let n = u.int_in_range(1usize..=8).unwrap_or(1);
                        u.bytes(n).map(<[u8]>::to_vec).unwrap_or_default()
                    }
                };
                raw.push((at, bytes));
            }
            _ => truncate_at = Some(u.choose_index(text.len() + 1).unwrap_or(0)),
        }
    }
    let mut out = text.into_bytes();
    // Raw bytes go in last, from the end so earlier offsets stay valid; they may split a
    // character.
    raw.sort_by_key(|r| std::cmp::Reverse(r.0));
    for (at, bytes) in raw {
        let at = at.min(out.len());
        out.splice(at..at, bytes);
    }
    if let Some(t) = truncate_at {
        out.truncate(t);
    }
    out
}

/// An edit of one element of a list (of lines or of tokens).
#[derive(Clone, Copy)]
enum Edit {
    Delete,
    Duplicate,
    /// Swap with another element drawn from `u`.
    Swap,
}

/// Apply `op` to element `i` of `v`.
fn edit_at<T: Clone>(u: &mut Unstructured, v: &mut Vec<T>, i: usize, op: Edit) {
    match op {
        Edit::Delete => {
            v.remove(i);
        }
        Edit::Duplicate => {
            let x = v[i].clone();
            v.insert(i, x);
        }
        Edit::Swap => {
            let j = u.choose_index(v.len()).unwrap_or(0);
            v.swap(i, j);
        }
    }
}

/// The text split into lines, each with its `\n`.
fn lines(text: &str) -> Vec<String> {
    text.split_inclusive('\n').map(str::to_string).collect()
}

fn lines_op(u: &mut Unstructured, text: &mut String, op: Edit) {
    let mut l = lines(text);
    if l.is_empty() {
        return;
    }
    let i = u.choose_index(l.len()).unwrap_or(0);
    edit_at(u, &mut l, i, op);
    *text = l.concat();
}

/// Insert a line of `donor` (another seed, maybe of another release).
fn splice_line(u: &mut Unstructured, text: &mut String, donor: &str) {
    let d = lines(donor);
    let Ok(line) = u.choose(&d) else { return };
    let line = line.clone();
    let mut l = lines(text);
    let i = u.choose_index(l.len() + 1).unwrap_or(0);
    l.insert(i, line);
    *text = l.concat();
}

#[derive(Clone, Copy)]
enum TokenOp {
    Edit(Edit),
    Insert,
    /// Wrap a token in up to 300 brackets of one kind.
    Nest,
}

fn tokens_op(u: &mut Unstructured, text: &mut String, op: TokenOp) {
    let mut t = tokens(text);
    if t.is_empty() {
        t.push(String::new());
    }
    let i = u.choose_index(t.len()).unwrap_or(0);
    match op {
        TokenOp::Edit(e) => edit_at(u, &mut t, i, e),
        TokenOp::Insert => {
            let s = if u.int_in_range(0u8..=3).unwrap_or(0) == 0 {
                let f = u.choose(bwsim_gluon::version::FEATURES).ok();
                match (f, u.arbitrary::<bool>().unwrap_or(false)) {
                    (Some(f), true) => f.name,
                    (Some(f), false) => f.example,
                    (None, _) => "{",
                }
            } else {
                u.choose(INSERTS).copied().unwrap_or("{")
            };
            t.insert(i, s.to_string());
        }
        TokenOp::Nest => {
            let depth = u.int_in_range(1usize..=300).unwrap_or(1);
            let (o, c) = *u
                .choose(&[("(", ")"), ("<", ">"), ("[", "]"), ("{", "}"), ("tensor<", ">")])
                .unwrap_or(&("(", ")"));
            t[i] = format!("{}{}{}", o.repeat(depth), t[i], c.repeat(depth));
        }
    }
    *text = t.concat();
}

/// The `k`-th token (counting from `from`, wrapping) that satisfies `p`.
fn find_token(t: &[String], from: usize, p: impl Fn(&str) -> bool) -> Option<usize> {
    let n = t.len();
    (from..n).chain(0..from.min(n)).find(|&k| p(&t[k]))
}

/// A new value for the number `n`: near it, or a boundary.
fn new_number(u: &mut Unstructured, n: &str) -> String {
    let v: i128 = n.parse().unwrap_or(0);
    match u.int_in_range(0u8..=7).unwrap_or(0) {
        0 => (v + 1).to_string(),
        1 => (v - 1).to_string(),
        2 => (v * 2).to_string(),
        3 => (v / 2).to_string(),
        4 => (-v).to_string(),
        5 => u
            .choose(mutate::BOUNDARY_NUMBERS)
            .copied()
            .unwrap_or("0")
            .to_string(),
        _ => u.choose(WIDE_NUMBERS).copied().unwrap_or("0").to_string(),
    }
}

/// Replace an integer token (at or after a random one) with a new value.
fn perturb_number(u: &mut Unstructured, text: &mut String) {
    let mut t = tokens(text);
    let from = u.choose_index(t.len().max(1)).unwrap_or(0);
    let Some(k) = find_token(&t, from, |s| {
        !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit())
    }) else {
        return;
    };
    t[k] = new_number(u, &t[k]);
    *text = t.concat();
}

/// The dimensions of a shape token (`128x64xf16` → `["128", "64"]`, and the element type
/// `f16`), if it is one.
fn shape_dims(tok: &str) -> Option<(Vec<&str>, &str)> {
    let mut dims = Vec::new();
    let mut rest = tok;
    while let Some(x) = rest.find('x') {
        let d = &rest[..x];
        if d.is_empty() || !d.bytes().all(|b| b.is_ascii_digit()) {
            break;
        }
        dims.push(d);
        rest = &rest[x + 1..];
    }
    (!dims.is_empty()).then_some((dims, rest))
}

/// Change one dimension of a shape (`128x64xf16`), or add or drop one.
fn perturb_shape(u: &mut Unstructured, text: &mut String) {
    let mut t = tokens(text);
    let from = u.choose_index(t.len().max(1)).unwrap_or(0);
    let Some(k) = find_token(&t, from, |s| shape_dims(s).is_some()) else {
        return;
    };
    let Some((dims, elem)) = shape_dims(&t[k]) else {
        return;
    };
    let mut dims: Vec<String> = dims.into_iter().map(str::to_string).collect();
    let elem = elem.to_string();
    let d = u.choose_index(dims.len()).unwrap_or(0);
    match u.int_in_range(0u8..=5).unwrap_or(0) {
        0 => {
            let x = dims[d].clone();
            dims.insert(d, x);
        }
        1 if dims.len() > 1 => {
            dims.remove(d);
        }
        _ => dims[d] = new_number(u, &dims[d]).trim_start_matches('-').to_string(),
    }
    t[k] = if elem.is_empty() {
        dims.join("x")
    } else {
        format!("{}x{elem}", dims.join("x"))
    };
    *text = t.concat();
}

/// Characters of MLIR's `suffix-id`, the name after `%`.
const SUFFIX_CHARS: &[u8] = b"abcxyzABZ0129$._-";

/// A new SSA value name: MLIR's `suffix-id` (digits only, or any of letters, digits, `$._-`),
/// or an existing name (a redefinition, or a use of the wrong value).
fn new_name(u: &mut Unstructured, existing: &[String]) -> String {
    match u.int_in_range(0u8..=5).unwrap_or(0) {
        0 => u.int_in_range(0u32..=99999).unwrap_or(0).to_string(),
        1 if !existing.is_empty() => u.choose(existing).map(|s| s[1..].to_string()).unwrap_or_default(),
        _ => {
            let n = u.int_in_range(1usize..=10).unwrap_or(1);
            (0..n)
                .map(|_| *u.choose(SUFFIX_CHARS).unwrap_or(&b'a') as char)
                .collect()
        }
    }
}

/// Rename an SSA value at every use (the program is unchanged), or at one.
fn rename_value(u: &mut Unstructured, text: &mut String) {
    let mut t = tokens(text);
    let mut names: Vec<String> = t
        .iter()
        .filter(|s| s.starts_with('%') && s.len() > 1)
        .cloned()
        .collect();
    names.sort();
    names.dedup();
    let Ok(old) = u.choose(&names).cloned() else {
        return;
    };
    let new = format!("%{}", new_name(u, &names));
    if u.int_in_range(0u8..=3).unwrap_or(0) == 0 {
        let uses: Vec<usize> = (0..t.len()).filter(|&k| t[k] == old).collect();
        if let Ok(&k) = u.choose(&uses) {
            t[k] = new;
        }
    } else {
        for s in t.iter_mut().filter(|s| **s == old) {
            *s = new.clone();
        }
    }
    *text = t.concat();
}

/// Drop the `// triton-version:` line, set its release, add one, or move it below where the
/// importer looks (the first 8 lines).
fn version_line(u: &mut Unstructured, text: &mut String) {
    let mut l = lines(text);
    let at = l
        .iter()
        .position(|x| x.trim_start().starts_with(bwsim_gluon::version::STAMP));
    let release = u.choose(RELEASES).copied().unwrap_or("3.9.0");
    let stamp = format!("{} {release}\n", bwsim_gluon::version::STAMP);
    match (u.int_in_range(0u8..=4).unwrap_or(0), at) {
        (0, Some(i)) => {
            l.remove(i);
        }
        (1, Some(i)) => {
            let x = l.remove(i);
            let to = (i + 9).min(l.len());
            l.insert(to, x);
        }
        (2, _) => {
            let i = u.choose_index(l.len().min(10) + 1).unwrap_or(0);
            l.insert(i, stamp);
        }
        (_, Some(i)) => l[i] = stamp,
        (_, None) => l.insert(0, stamp),
    }
    *text = l.concat();
}

/// Rewrite `!tt.tensordesc<tensor<T>>` as `!tt.tensordesc<T>` or back, at one occurrence or at
/// all of them.
fn swap_tensordesc(u: &mut Unstructured, text: &mut String) {
    const WRAPPED: &str = "!tt.tensordesc<tensor<";
    const BARE: &str = "!tt.tensordesc<";
    let all = u.arbitrary::<bool>().unwrap_or(false);
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text.as_str();
    let mut done = false;
    while let Some(p) = rest.find(BARE) {
        out.push_str(&rest[..p]);
        let after = &rest[p..];
        if done && !all {
            out.push_str(BARE);
            rest = &after[BARE.len()..];
            continue;
        }
        if let Some(inner) = after.strip_prefix(WRAPPED) {
            // Unwrap: drop `tensor<` and the `>` that closes it.
            match matching_close(inner) {
                Some(e) => {
                    out.push_str(BARE);
                    out.push_str(&inner[..e]);
                    rest = &inner[e + 1..];
                }
                None => {
                    out.push_str(WRAPPED);
                    rest = inner;
                }
            }
        } else {
            let inner = &after[BARE.len()..];
            match matching_close(inner) {
                Some(e) => {
                    out.push_str(WRAPPED);
                    out.push_str(&inner[..e]);
                    out.push('>');
                    rest = &inner[e..];
                }
                None => {
                    out.push_str(BARE);
                    rest = inner;
                }
            }
        }
        done = true;
    }
    out.push_str(rest);
    *text = out;
}

/// The offset of the `>` that closes an already opened `<`, in `s`.
fn matching_close(s: &str) -> Option<usize> {
    let mut depth = 0usize;
    for (i, c) in s.char_indices() {
        match c {
            '<' => depth += 1,
            '>' if depth == 0 => return Some(i),
            '>' => depth -= 1,
            '\n' => return None,
            _ => {}
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_concatenate_to_the_text() {
        let s = "%a_desc.shape.0 = arith.constant -1 : i32 loc(\"x.py\":3:4)\n  %c-1_i32 -> !tt.ptr<f16> #loc12 128x64xf16";
        let t = tokens(s);
        assert_eq!(t.concat(), s);
        for w in [
            "%a_desc.shape.0",
            "%c-1_i32",
            "->",
            "!tt.ptr",
            "#loc12",
            "128x64xf16",
            "\"x.py\"",
        ] {
            assert!(t.iter().any(|x| x == w), "{w} in {t:?}");
        }
    }

    #[test]
    fn cases_round_trip_through_bytes() {
        for c in [
            TtgirCase::new("module {}", None),
            TtgirCase::new("module {}", Some("launch {\n}\n")),
            TtgirCase::new("", Some("")),
        ] {
            assert_eq!(TtgirCase::from_bytes(&c.to_bytes()), c);
        }
    }

    #[test]
    fn tensordesc_forms_swap_both_ways() {
        let wrapped = "%d: !tt.tensordesc<tensor<32x64xf32, #shared>>, %e: !tt.tensordesc<tensor<8xf16, #s>>";
        let bare = "%d: !tt.tensordesc<32x64xf32, #shared>, %e: !tt.tensordesc<8xf16, #s>";
        // Whichever one or all the bytes pick, every rewritten descriptor is in the other form.
        let first_only = [
            "%d: !tt.tensordesc<32x64xf32, #shared>, %e: !tt.tensordesc<tensor<8xf16, #s>>",
            "%d: !tt.tensordesc<tensor<32x64xf32, #shared>>, %e: !tt.tensordesc<8xf16, #s>",
        ];
        for data in [[0u8; 8], [1u8; 8], [255u8; 8]] {
            for (from, to, first) in [(wrapped, bare, first_only[0]), (bare, wrapped, first_only[1])] {
                let mut t = from.to_string();
                swap_tensordesc(&mut Unstructured::new(&data), &mut t);
                assert!(t == to || t == first, "{t}");
            }
        }
        let mut all = wrapped.to_string();
        swap_tensordesc(&mut Unstructured::new(&[1]), &mut all);
        assert_eq!(all, bare);
    }

    #[test]
    fn shapes_split_into_dimensions_and_element_type() {
        assert_eq!(shape_dims("128x64xf16"), Some((vec!["128", "64"], "f16")));
        assert_eq!(shape_dims("1024xi32"), Some((vec!["1024"], "i32")));
        assert_eq!(shape_dims("x1"), None);
        assert_eq!(shape_dims("128"), None);
        assert_eq!(shape_dims("f16"), None);
    }

    #[test]
    fn renaming_every_use_keeps_the_names_consistent() {
        let text = "%a = arith.constant 1 : i32\n%b = arith.addi %a, %a : i32\n";
        let mut seen_renamed = false;
        for k in 0..64u8 {
            let data = [3, k, k.wrapping_mul(7), 1, 5, 9, 2, 0];
            let mut t = text.to_string();
            rename_value(&mut Unstructured::new(&data), &mut t);
            seen_renamed |= t != text;
            // Every token is a name of the original or a suffix-id.
            for tok in tokens(&t).iter().filter(|x| x.starts_with('%')) {
                assert!(
                    tok[1..]
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"$._-".contains(&b)),
                    "{tok}"
                );
            }
        }
        assert!(seen_renamed);
    }

    #[test]
    fn version_lines_come_and_go() {
        let text = "// triton-version: 3.9.0\nmodule {\n}\n";
        let mut outcomes = std::collections::BTreeSet::new();
        for k in 0..=255u8 {
            let mut t = text.to_string();
            version_line(&mut Unstructured::new(&[k, k, k]), &mut t);
            let stamps = t.lines().filter(|l| l.starts_with("// triton-version:")).count();
            outcomes.insert((stamps, t.starts_with("// triton-version: 3.9.0\n")));
        }
        // Dropped, kept or replaced, and doubled.
        assert!(outcomes.contains(&(0, false)), "{outcomes:?}");
        assert!(outcomes.contains(&(1, false)), "{outcomes:?}");
        assert!(outcomes.iter().any(|o| o.0 == 2), "{outcomes:?}");
    }
}
