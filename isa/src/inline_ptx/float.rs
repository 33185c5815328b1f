//! Exact floating-point arithmetic on bit patterns: the formats inline PTX computes in (f16,
//! bf16, f32, f64, the fp8 formats e4m3 and e5m2, and fp4's e2m1 as a source), every operation computed exactly on
//! integers and rounded once in one of PTX's four rounding modes (`.rn`, `.rz`, `.rm`, `.rp`),
//! with subnormals, overflow and signed zeros as IEEE 754 defines them.
//!
//! A finite value is an [`Exact`]: sign, an integer significand and a power-of-two exponent,
//! plus a sticky flag that says the true value lies strictly above the significand (by less
//! than one unit of its last bit). Sums, products and fused multiply-adds are exact in 128
//! bits (inputs have at most 53 significant bits, so a product has at most 106); quotients and
//! square roots keep at least 70 bits and the sticky flag, which is all a correct rounding
//! needs. The PTX-level rules (NaN results, `.ftz`, `.sat`, min/max) live in `exec`; this
//! module knows formats and rounding only.

/// A floating-point format: storage bits, explicit significand bits, exponent bits, and
/// whether the all-ones exponent encodes infinities and NaNs (IEEE) or, as in e4m3, only the
/// all-ones pattern is NaN and there is no infinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Fmt {
    pub bits: u32,
    pub man: u32,
    pub exp: u32,
    pub ieee: bool,
    /// No encoding is NaN or infinite (e2m1: the all-ones exponent holds finite values).
    pub finite: bool,
}

pub const F16: Fmt = Fmt::ieee(5, 10);
pub const BF16: Fmt = Fmt::ieee(8, 7);
pub const F32: Fmt = Fmt::ieee(8, 23);
pub const F64: Fmt = Fmt::ieee(11, 52);
/// OCP e4m3 ("fn"): no infinity, NaN is S.1111.111, largest finite 448.
pub const E4M3: Fmt = Fmt {
    ieee: false,
    ..Fmt::ieee(4, 3)
};
pub const E5M2: Fmt = Fmt::ieee(5, 2);
/// OCP e2m1 (fp4): no NaN or infinity, largest finite 6 (S.11.1).
pub const E2M1: Fmt = Fmt {
    ieee: false,
    finite: true,
    ..Fmt::ieee(2, 1)
};

impl Fmt {
    /// The IEEE-style format of a sign bit, `exp` exponent bits and `man` mantissa bits.
    pub const fn ieee(exp: u32, man: u32) -> Fmt {
        Fmt {
            bits: 1 + exp + man,
            man,
            exp,
            ieee: true,
            finite: false,
        }
    }
    pub fn bias(self) -> i32 {
        (1 << (self.exp - 1)) - 1
    }
    /// Exponent of the smallest normal number.
    pub fn emin(self) -> i32 {
        1 - self.bias()
    }
    /// Exponent of the largest finite number.
    pub fn emax(self) -> i32 {
        let top = (1 << self.exp) - 1;
        (if self.ieee { top - 1 } else { top }) - self.bias()
    }
    /// Largest significand field at `emax` (all ones, but for e4m3 where that is NaN).
    fn max_field(self) -> u64 {
        let all = (1u64 << self.man) - 1;
        if self.ieee || self.finite {
            all
        } else {
            all - 1
        }
    }
    pub fn sign_bit(self) -> u64 {
        1u64 << (self.bits - 1)
    }
    pub fn mask(self) -> u64 {
        if self.bits == 64 {
            u64::MAX
        } else {
            (1u64 << self.bits) - 1
        }
    }
    /// The NaN PTX instructions produce: every bit but the sign set (f32 `0x7fffffff`).
    pub fn canonical_nan(self) -> u64 {
        self.mask() >> 1
    }
    pub fn inf(self, neg: bool) -> u64 {
        let e = ((1u64 << self.exp) - 1) << self.man;
        if neg {
            e | self.sign_bit()
        } else {
            e
        }
    }
    /// The largest finite value with the given sign.
    pub fn max_finite(self, neg: bool) -> u64 {
        let e = (self.emax() + self.bias()) as u64;
        let b = e << self.man | self.max_field();
        if neg {
            b | self.sign_bit()
        } else {
            b
        }
    }
    pub fn zero(self, neg: bool) -> u64 {
        if neg {
            self.sign_bit()
        } else {
            0
        }
    }
    pub fn is_nan(self, b: u64) -> bool {
        matches!(decode(self, b), Val::Nan)
    }
    /// Whether `b` is a nonzero subnormal.
    pub fn is_subnormal(self, b: u64) -> bool {
        let e = (b >> self.man) & ((1 << self.exp) - 1);
        e == 0 && b & ((1 << self.man) - 1) != 0
    }
    /// `b` with subnormals replaced by a zero of the same sign (`.ftz`).
    pub fn flush(self, b: u64) -> u64 {
        if self.is_subnormal(b) {
            b & self.sign_bit()
        } else {
            b
        }
    }
}

/// PTX's rounding modes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rnd {
    /// To nearest, ties to even.
    Rn,
    /// Toward zero.
    Rz,
    /// Toward minus infinity.
    Rm,
    /// Toward plus infinity.
    Rp,
}

/// A finite value: `(-1)^neg * (mant + s) * 2^exp` where `s` is 0 without `sticky` and lies
/// strictly between 0 and 1 with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exact {
    pub neg: bool,
    pub mant: u128,
    pub exp: i32,
    pub sticky: bool,
}

/// The same magnitude with the other sign.
impl Exact {
    pub fn zero(neg: bool) -> Exact {
        Exact {
            neg,
            mant: 0,
            exp: 0,
            sticky: false,
        }
    }
    pub fn is_zero(&self) -> bool {
        self.mant == 0 && !self.sticky
    }
    /// An integer.
    pub fn int(v: i128) -> Exact {
        Exact {
            neg: v < 0,
            mant: v.unsigned_abs(),
            exp: 0,
            sticky: false,
        }
    }
    /// The value negated (`Exact` is a value type, not an operator overload).
    #[allow(clippy::should_implement_trait)]
    pub fn neg(self) -> Exact {
        Exact {
            neg: !self.neg,
            ..self
        }
    }
    /// Shifted so that the leading one is at bit 125 (no bits lost).
    fn normalized(self) -> Exact {
        if self.mant == 0 {
            return self;
        }
        let lz = self.mant.leading_zeros() as i32;
        let sh = lz - 2;
        if sh >= 0 {
            Exact {
                mant: self.mant << sh,
                exp: self.exp - sh,
                ..self
            }
        } else {
            let s = (-sh) as u32;
            let lost = self.mant & ((1u128 << s) - 1);
            Exact {
                mant: self.mant >> s,
                exp: self.exp + s as i32,
                sticky: self.sticky || lost != 0,
                ..self
            }
        }
    }
    /// Compare magnitudes of two exact values without sticky bits.
    fn cmp_mag(&self, o: &Exact) -> std::cmp::Ordering {
        let (a, b) = (self.normalized(), o.normalized());
        match (a.mant == 0, b.mant == 0) {
            (true, true) => std::cmp::Ordering::Equal,
            (true, false) => std::cmp::Ordering::Less,
            (false, true) => std::cmp::Ordering::Greater,
            _ => a.exp.cmp(&b.exp).then(a.mant.cmp(&b.mant)),
        }
    }
}

/// A decoded value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Val {
    Nan,
    Inf(bool),
    Fin(Exact),
}

/// The value of bits `b` (low `fmt.bits` bits) in `fmt`.
pub fn decode(fmt: Fmt, b: u64) -> Val {
    let b = b & fmt.mask();
    let neg = b & fmt.sign_bit() != 0;
    let e = ((b >> fmt.man) & ((1 << fmt.exp) - 1)) as i32;
    let f = b & ((1u64 << fmt.man) - 1);
    let top = (1 << fmt.exp) - 1;
    if e == top && !fmt.finite {
        if fmt.ieee {
            return if f == 0 { Val::Inf(neg) } else { Val::Nan };
        }
        if f == (1u64 << fmt.man) - 1 {
            return Val::Nan;
        }
    }
    let (mant, exp) = if e == 0 {
        (f as u128, fmt.emin() - fmt.man as i32)
    } else {
        ((f | 1u64 << fmt.man) as u128, e - fmt.bias() - fmt.man as i32)
    };
    Val::Fin(Exact {
        neg,
        mant,
        exp,
        sticky: false,
    })
}

/// `x` rounded to a multiple of `2^q` in mode `r`: the multiple (as a count of `2^q`) and
/// whether the rounding was inexact.
pub fn round_at(x: Exact, q: i32, r: Rnd) -> (u128, bool) {
    let x = if x.sticky { x.normalized() } else { x };
    let shift = q as i64 - x.exp as i64;
    let (kept, cmp_half, inexact) = if shift <= 0 {
        let s = (-shift) as u32;
        let kept = if s >= 128 || (x.mant != 0 && x.mant.leading_zeros() < s) {
            u128::MAX // out of range: callers bound the exponent first
        } else {
            x.mant << s
        };
        // Only a sticky tail is dropped, and it lies below 2^exp <= 2^q... which cannot
        // happen: a sticky value is normalized to 126 bits, far more than any quantum keeps.
        (kept, std::cmp::Ordering::Less, x.sticky)
    } else if shift >= 128 {
        let nz = x.mant != 0 || x.sticky;
        // The whole value is below half a quantum unless shift == 128 and bit 127 is set,
        // impossible after normalization (bit 125 at most).
        (0, std::cmp::Ordering::Less, nz)
    } else {
        let s = shift as u32;
        let kept = x.mant >> s;
        let rem = x.mant & ((1u128 << s) - 1);
        let half = 1u128 << (s - 1);
        let c = rem.cmp(&half).then(if x.sticky {
            std::cmp::Ordering::Greater
        } else {
            std::cmp::Ordering::Equal
        });
        (kept, c, rem != 0 || x.sticky)
    };
    let up = match r {
        Rnd::Rn => match cmp_half {
            std::cmp::Ordering::Greater => true,
            std::cmp::Ordering::Equal => inexact && kept & 1 == 1,
            std::cmp::Ordering::Less => false,
        },
        Rnd::Rz => false,
        Rnd::Rm => x.neg && inexact,
        Rnd::Rp => !x.neg && inexact,
    };
    (kept.saturating_add(up as u128), inexact)
}

/// What rounding did: the bits, and whether the result is inexact or overflowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rounded {
    pub bits: u64,
    pub inexact: bool,
    pub overflow: bool,
}

/// `x` rounded to `fmt` in mode `r`, with gradual underflow; an overflow gives what IEEE 754
/// gives (infinity or the largest finite number, by mode), or the largest finite number of
/// the sign with `satfinite` (and for e4m3, which has no infinity, NaN without it).
pub fn round(x: Exact, fmt: Fmt, r: Rnd, satfinite: bool) -> Rounded {
    let sign = if x.neg { fmt.sign_bit() } else { 0 };
    if x.is_zero() {
        return Rounded {
            bits: sign,
            inexact: false,
            overflow: false,
        };
    }
    let n = x.normalized();
    let lead = n.exp + (127 - n.mant.leading_zeros() as i32);
    let emin_q = fmt.emin() - fmt.man as i32;
    let q = (lead - fmt.man as i32).max(emin_q);
    let (mut kept, inexact) = round_at(x, q, r);
    let mut q = q;
    if kept >> (fmt.man + 1) != 0 {
        kept >>= 1;
        q += 1;
    }
    let overflow_bits = |inexact| {
        let to_inf = match r {
            Rnd::Rn => true,
            Rnd::Rz => false,
            Rnd::Rm => x.neg,
            Rnd::Rp => !x.neg,
        };
        let bits = if satfinite || !to_inf {
            fmt.max_finite(x.neg)
        } else if fmt.ieee {
            fmt.inf(x.neg)
        } else {
            fmt.canonical_nan() | sign
        };
        Rounded {
            bits,
            inexact,
            overflow: true,
        }
    };
    if kept == 0 {
        return Rounded {
            bits: sign,
            inexact,
            overflow: false,
        };
    }
    if kept < 1u128 << fmt.man {
        return Rounded {
            bits: sign | kept as u64,
            inexact,
            overflow: false,
        };
    }
    let e = q + fmt.man as i32;
    let field = kept as u64 & ((1u64 << fmt.man) - 1);
    if e > fmt.emax() || (e == fmt.emax() && field > fmt.max_field()) {
        return overflow_bits(true);
    }
    Rounded {
        bits: sign | ((e + fmt.bias()) as u64) << fmt.man | field,
        inexact,
        overflow: false,
    }
}

/// `a + b`, exact (inputs without sticky bits). An exact zero sum is `+0` (the caller
/// applies IEEE's sign rule for zeros, which depends on the rounding mode).
pub fn add(a: Exact, b: Exact) -> Exact {
    debug_assert!(!a.sticky && !b.sticky);
    if a.mant == 0 {
        return b;
    }
    if b.mant == 0 {
        return a;
    }
    let (big, small) = if a.cmp_mag(&b) == std::cmp::Ordering::Less {
        (b, a)
    } else {
        (a, b)
    };
    // The larger magnitude with its leading one at bit 124; the smaller aligned to it, its
    // bits below the window jammed into bit 0 (the window keeps more than 120 bits above it,
    // so the jammed bit decides nothing but the sticky side of a rounding).
    let lz = big.mant.leading_zeros() as i32;
    debug_assert!(lz >= 3, "add takes significands of at most 125 bits");
    let sh = (lz - 3).max(0);
    let bm = big.mant << sh;
    let e = big.exp - sh;
    let d = small.exp as i64 - e as i64;
    let sm = if d >= 0 {
        small.mant << d
    } else if -d >= 128 {
        1
    } else {
        let s = (-d) as u32;
        let lost = small.mant & ((1u128 << s) - 1);
        (small.mant >> s) | (lost != 0) as u128
    };
    let mant = if big.neg == small.neg { bm + sm } else { bm - sm };
    Exact {
        neg: big.neg,
        mant,
        exp: e,
        sticky: false,
    }
}

/// `a * b`, exact (significands of at most 64 bits each).
pub fn mul(a: Exact, b: Exact) -> Exact {
    Exact {
        neg: a.neg != b.neg,
        mant: a.mant * b.mant,
        exp: a.exp + b.exp,
        sticky: false,
    }
}

/// `a / b` for a nonzero `b`, with at least 70 correct bits and a sticky remainder.
pub fn div(a: Exact, b: Exact) -> Exact {
    let neg = a.neg != b.neg;
    if a.mant == 0 {
        return Exact::zero(neg);
    }
    let an = a.normalized();
    let bm = b.mant;
    // a's leading one at bit 125, b below 2^55: the quotient has at least 70 bits.
    let q = an.mant / bm;
    let rem = an.mant % bm;
    Exact {
        neg,
        mant: q,
        exp: an.exp - b.exp,
        sticky: rem != 0,
    }
}

/// The square root of a nonnegative `a` with at least 62 correct bits and a sticky remainder.
pub fn sqrt(a: Exact) -> Exact {
    if a.mant == 0 {
        return a;
    }
    let n = a.normalized();
    // An even exponent, the leading one at bit 125 or 126.
    let (m, e) = if n.exp % 2 != 0 {
        (n.mant << 1, n.exp - 1)
    } else {
        (n.mant, n.exp)
    };
    let mut r = ((m as f64).sqrt() as u128).max(1);
    for _ in 0..3 {
        r = (r + m / r) / 2;
    }
    while r * r > m {
        r -= 1;
    }
    while (r + 1) * (r + 1) <= m {
        r += 1;
    }
    Exact {
        neg: false,
        mant: r,
        exp: e / 2,
        sticky: r * r != m || n.sticky,
    }
}

/// A value in double-double (`hi + lo`, `|lo| <= ulp(hi) / 2`).
#[derive(Clone, Copy, Debug)]
struct Dd(f64, f64);

fn two_sum(a: f64, b: f64) -> Dd {
    let s = a + b;
    let bb = s - a;
    Dd(s, (a - (s - bb)) + (b - bb))
}

fn dd_add(x: Dd, y: Dd) -> Dd {
    let s = two_sum(x.0, y.0);
    let t = s.1 + x.1 + y.1;
    two_sum(s.0, t)
}

fn dd_mul(x: Dd, y: Dd) -> Dd {
    let p = x.0 * y.0;
    let e = x.0.mul_add(y.0, -p);
    let t = e + x.0 * y.1 + x.1 * y.0;
    two_sum(p, t)
}

/// `2^f` for `|f| <= 1/2`, in double-double (about 100 correct bits).
fn exp2_frac(f: f64) -> Dd {
    // ln 2 to 106 bits.
    const LN2: Dd = Dd(std::f64::consts::LN_2, 2.319_046_813_846_299_6e-17);
    let t = dd_mul(Dd(f, 0.0), LN2);
    // exp(t) = sum t^k / k!, |t| < 0.35: 30 terms reach far below 2^-106.
    let mut sum = Dd(1.0, 0.0);
    let mut term = Dd(1.0, 0.0);
    for k in 1..30 {
        term = dd_mul(term, t);
        let kf = k as f64;
        // term / k: divide hi and lo, correcting with the residual of hi.
        let q = term.0 / kf;
        let r = (-q).mul_add(kf, term.0);
        term = two_sum(q, (r + term.1) / kf);
        sum = dd_add(sum, term);
    }
    sum
}

/// `2^x` for a finite f32 `x`, correctly rounded to f32 (to nearest even). `x` splits into
/// an integer and a fraction of at most 24 bits; 2^fraction is computed in double-double, far
/// more precisely than any f32 rounding boundary it could approach (2^fraction is irrational
/// for a nonzero fraction, so it never lies on a boundary).
pub fn exp2_f32(x: f32) -> u32 {
    let xf = x as f64;
    if xf >= 128.0 {
        return f32::INFINITY.to_bits();
    }
    if xf < -151.0 {
        return 0;
    }
    let n = xf.round();
    let f = xf - n;
    let v = exp2_frac(f);
    // 2^n * (hi + lo): scale exactly (n in [-151, 128], hi in [0.7, 1.42]; a subnormal f64
    // never occurs).
    let scale = 2f64.powi(n as i32);
    let (hi, lo) = (v.0 * scale, v.1 * scale);
    round_dd_f32(hi, lo)
}

/// `hi + lo` rounded to f32, to nearest even.
fn round_dd_f32(hi: f64, lo: f64) -> u32 {
    let r = hi as f32;
    let rd = r as f64;
    if rd == hi {
        // hi is an f32; lo moves the value by far less than half an f32 ulp.
        return r.to_bits();
    }
    // hi lies strictly between two f32s; r is the nearest, unless hi is exactly their
    // midpoint, where lo decides.
    let other = if hi > rd {
        f32::from_bits(next_toward(r.to_bits(), true))
    } else {
        f32::from_bits(next_toward(r.to_bits(), false))
    };
    let mid = (rd + other as f64) / 2.0;
    if hi == mid && lo != 0.0 {
        let toward_other = (lo > 0.0) == (other as f64 > rd);
        if toward_other {
            return other.to_bits();
        }
    }
    r.to_bits()
}

/// The f32 after `b` in the direction of `+inf` (`up`) or `-inf`.
fn next_toward(b: u32, up: bool) -> u32 {
    let f = f32::from_bits(b);
    if f == 0.0 {
        return if up { 1 } else { 0x8000_0001 };
    }
    if (f > 0.0) == up {
        b + 1
    } else {
        b - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fin(fmt: Fmt, b: u64) -> Exact {
        match decode(fmt, b) {
            Val::Fin(x) => x,
            v => panic!("{v:?}"),
        }
    }

    #[test]
    fn formats_round_trip_and_extremes() {
        for b in [0u64, 1, 0x3f80_0000, 0x7f7f_ffff, 0x8000_0001, 0x0080_0000] {
            assert_eq!(round(fin(F32, b), F32, Rnd::Rn, false).bits, b);
        }
        assert_eq!(F32.max_finite(false), 0x7f7f_ffff);
        assert_eq!(E4M3.max_finite(false), 0x7e);
        assert_eq!(E5M2.max_finite(false), 0x7b);
        assert_eq!(F16.max_finite(true), 0xfbff);
        assert_eq!(F32.canonical_nan(), 0x7fff_ffff);
        // 448 is e4m3's largest; 464, halfway to 480, rounds to even (448); 470 rounds to
        // 480, which overflows: NaN, or 448 saturated.
        assert_eq!(round(Exact::int(448), E4M3, Rnd::Rn, false).bits, 0x7e);
        assert_eq!(round(Exact::int(464), E4M3, Rnd::Rn, false).bits, 0x7e);
        assert_eq!(round(Exact::int(470), E4M3, Rnd::Rn, false).bits, 0x7f);
        assert_eq!(round(Exact::int(470), E4M3, Rnd::Rn, true).bits, 0x7e);
        assert_eq!(round(Exact::int(-70000), F16, Rnd::Rz, false).bits, 0xfbff);
        assert_eq!(round(Exact::int(-70000), F16, Rnd::Rm, false).bits, 0xfc00);
    }

    #[test]
    fn directed_rounding_of_one_third() {
        let third = div(Exact::int(1), Exact::int(3));
        // 1/3 in f32: 0x3eaaaaab to nearest (and up), 0x3eaaaaaa down and toward zero.
        assert_eq!(round(third, F32, Rnd::Rn, false).bits, 0x3eaa_aaab);
        assert_eq!(round(third, F32, Rnd::Rp, false).bits, 0x3eaa_aaab);
        assert_eq!(round(third, F32, Rnd::Rz, false).bits, 0x3eaa_aaaa);
        assert_eq!(round(third, F32, Rnd::Rm, false).bits, 0x3eaa_aaaa);
        assert_eq!(round(third.neg(), F32, Rnd::Rm, false).bits, 0xbeaa_aaab);
    }

    #[test]
    fn exp2_matches_exact_powers_and_libm() {
        for n in -149..128 {
            assert_eq!(exp2_f32(n as f32), (2f64.powi(n) as f32).to_bits(), "{n}");
        }
        assert_eq!(exp2_f32(0.5), std::f32::consts::SQRT_2.to_bits());
        for i in 0..2000 {
            let x = -20.0 + i as f32 * 0.0173;
            let want = (x as f64).exp2() as f32;
            let got = f32::from_bits(exp2_f32(x));
            // libm's f64 exp2 rounded to f32 agrees except within an f64 ulp of a boundary.
            assert!((got - want).abs() <= f32::EPSILON * want.abs(), "{x}");
        }
    }
}
