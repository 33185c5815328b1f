//! Mutations of `.tile` text near the grammar: deleted, duplicated and swapped tokens, numbers
//! replaced by boundary values (huge, negative, `i32`/`i64` extremes), inserted keywords and
//! punctuation, deep nesting, and raw bytes that are not UTF-8.
//!
//! Every choice is drawn from an [`arbitrary::Unstructured`], so the same bytes give the same
//! mutant: proptest feeds random bytes, libFuzzer feeds coverage-guided ones.

use arbitrary::Unstructured;

/// Split text into rough tokens (words and numbers, single punctuation characters, single
/// whitespace characters). Concatenating the tokens gives the text back.
pub fn tokens(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    for c in s.chars() {
        if c.is_alphanumeric() || c == '_' || c == '.' {
            cur.push(c);
        } else {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
            out.push(c.to_string());
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Numbers at and beyond every boundary the front end and the simulator meet.
pub const BOUNDARY_NUMBERS: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "3",
    "7",
    "8",
    "16",
    "255",
    "256",
    "257",
    "511",
    "512",
    "1023",
    "1024",
    "65535",
    "65536",
    "1048576",
    "2147483647",
    "-2147483648",
    "2147483648",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "-9223372036854775807",
    "(-9223372036854775807 - 1)",
    "9223372036854775808",
    "18446744073709551616",
    "0x7fffffff",
    "0xffffffff",
    "0x7fffffffffffffff",
    "1_000_000_000",
    "1e308",
    "-1e308",
    "1e-320",
    "0.5",
    "(1 << 31)",
    "(1 << 62)",
    "(1 << 63)",
    "(1 << 64)",
    "(0 - 1)",
];

/// Text fragments to insert: punctuation, keywords, operations, openers without closers.
pub const INSERTS: &[&str] = &[
    "{",
    "}",
    "(",
    ")",
    "[",
    "]",
    ",",
    "=",
    "..",
    ":",
    "-",
    "!",
    "let",
    "for",
    "if",
    "else",
    "None",
    "step",
    "static_for i in 0..100000 {",
    "for i in 0..2147483647 {",
    "warp_specialize",
    "default",
    "worker w(warps=1, regs=24) {",
    "tma.load",
    "tma.store",
    "mbar.wait",
    "mbar.arrive",
    "mbar.init",
    "fence.async_shared",
    "tcgen05.mma",
    "tmem.alloc",
    "smem.alloc",
    "bar.sync",
    "launch",
    "tensor",
    "grid = [2147483647, 2147483647, 2147483647]",
    "limit steps = 0",
    "limit memory = 1",
    "limit trace = 0",
    "\"",
    "//",
    "\n",
    "\t",
    "\r",
    "[[[[[[[[",
    "((((((((((((",
    "\u{0}",
    "\u{feff}",
    "\u{1F600}",
    "é",
];

/// Raw bytes to splice in: those not valid UTF-8 on their own, then a NUL (valid UTF-8, but a
/// byte C-string readers stop at).
pub(crate) const RAW_BYTES: &[&[u8]] = &[
    b"\xff",
    b"\xc3",
    b"\xe2\x82",
    b"\xf0\x9f\x98",
    b"\x80",
    b"\xed\xa0\x80",
    b"\x00",
];

/// The [`RAW_BYTES`] that are not valid UTF-8 on their own.
const BAD_BYTES: &[&[u8]] = RAW_BYTES.split_at(RAW_BYTES.len() - 1).0;

/// Mutate `text` with up to `max_muts` mutations drawn from `u`. The result may not be UTF-8.
pub fn mutate(u: &mut Unstructured, text: &str, max_muts: usize) -> Vec<u8> {
    let mut t = tokens(text);
    let n_muts = u.int_in_range(1..=max_muts.max(1)).unwrap_or(1);
    let mut raw: Vec<(usize, &'static [u8])> = Vec::new();
    for _ in 0..n_muts {
        if t.is_empty() {
            t.push(String::new());
        }
        let n = t.len();
        let i = u.choose_index(n).unwrap_or(0);
        match u.int_in_range(0u8..=29).unwrap_or(0) {
            0..=4 => {
                t.remove(i);
            }
            5..=7 => {
                let x = t[i].clone();
                t.insert(i, x);
            }
            8..=10 => {
                let j = u.choose_index(n).unwrap_or(0);
                t.swap(i, j);
            }
            11..=18 => {
                // Replace the next number at or after i with a boundary value.
                let k = (i..n)
                    .chain(0..i)
                    .find(|&k| t[k].starts_with(|c: char| c.is_ascii_digit()))
                    .unwrap_or(i);
                t[k] = u.choose(BOUNDARY_NUMBERS).copied().unwrap_or("0").to_string();
            }
            19..=24 => {
                let s = u.choose(INSERTS).copied().unwrap_or("{");
                t.insert(i, s.to_string());
            }
            25 => {
                // Deep nesting around a token: parentheses or brackets, up to well past the
                // parser's nesting limit.
                let depth = u.int_in_range(1usize..=600).unwrap_or(1);
                let (o, c) = if u.arbitrary::<bool>().unwrap_or(false) {
                    ("(", ")")
                } else {
                    ("[", "]")
                };
                t[i] = format!("{}{}{}", o.repeat(depth), t[i], c.repeat(depth));
            }
            26..=28 => {
                // Duplicate a whole line (statements, launch items, headers).
                let line_start = t[..i].iter().rposition(|x| x == "\n").map_or(0, |p| p + 1);
                let line_end = t[i..].iter().position(|x| x == "\n").map_or(n, |p| i + p + 1);
                let line: Vec<String> = t[line_start..line_end].to_vec();
                for (k, x) in line.into_iter().enumerate() {
                    t.insert(line_end + k, x);
                }
            }
            _ => {
                let b = u.choose(BAD_BYTES).copied().unwrap_or(b"\xff");
                raw.push((i, b));
            }
        }
    }
    // Splice the raw bytes in last, at token boundaries.
    let mut out = Vec::new();
    for (k, tok) in t.iter().enumerate() {
        for (_, b) in raw.iter().filter(|(i, _)| *i == k) {
            out.extend_from_slice(b);
        }
        out.extend_from_slice(tok.as_bytes());
    }
    out
}
