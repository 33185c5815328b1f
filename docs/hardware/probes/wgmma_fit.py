#!/usr/bin/env python3
"""Fit and check tensor-core arithmetic models against the files of wgmma_numerics.cu.

    wgmma_fit.py fit DTYPE FILE        # rank candidate models on 1,500 sampled dot products
    wgmma_fit.py check DTYPE FILE      # the chosen model against every dot product in FILE
    wgmma_fit.py fit16 DTYPE FILE      # the same for an f16 accumulator (the probe's `ext` set)
    wgmma_fit.py check16 DTYPE FILE    # the chosen f16-accumulator model against every one
    wgmma_fit.py checkmix FILE         # e4m3 x e5m2 into f32 against the fp8 model
    wgmma_fit.py checkint A B FILE     # s8/u8 into s32: exact sums, wrapped modulo 2^32

DTYPE: f16, bf16, e4m3, e5m2, tf32. Exact integer arithmetic throughout (no floats).
A candidate model adds one instruction's products (in groups of G) and the accumulator c:
reference exponent E = max over the non-zero terms ('nom': a product counts the sum of its
operands' exponents; 'act': its true leading bit), every term cut to a multiple of
2^(E - F) ('rz': toward zero, 'floor': two's complement), the exact sum rounded to P
significant bits ('rz' or 'rne'), P = 24 (an f32) unless given.
"""
import random
import struct
import sys

K = {'f16': 16, 'bf16': 16, 'e4m3': 32, 'e5m2': 32, 'tf32': 8, 's8': 32, 'u8': 32}
# exponent bits, mantissa bits, bias
FMT = {'f16': (5, 10, 15), 'bf16': (8, 7, 127), 'e4m3': (4, 3, 7), 'e5m2': (5, 2, 15),
       'tf32': (8, 23, 127)}


def decode(dt, bits):
    """Element bits -> (signed integer significand, exponent of its last bit); 0 -> (0, 0)."""
    if dt == 's8':
        return (bits & 0xff) - (256 if bits & 0x80 else 0), 0
    if dt == 'u8':
        return bits & 0xff, 0
    eb, mb, bias = FMT[dt]
    if dt == 'tf32':
        bits &= ~0x1fff  # the tensor core ignores the low 13 bits
    s = (bits >> (eb + mb)) & 1
    e = (bits >> mb) & ((1 << eb) - 1)
    m = bits & ((1 << mb) - 1)
    if e == 0:
        mant, ex = m, 1 - bias - mb
    else:
        mant, ex = m | (1 << mb), e - bias - mb
    return (-mant if s else mant), ex


def _f32(bits):
    s, e, m = bits >> 31, (bits >> 23) & 0xff, bits & 0x7fffff
    mant, ex = (m, -149) if e == 0 else (m | 0x800000, e - 150)
    return (-mant if s else mant), ex


def lead(m, e):
    return e + abs(m).bit_length() - 1


def to_f32(S, unit, mode, P):
    """S * 2^unit rounded to P significant bits within the f32 range -> f32 bits."""
    if S == 0:
        return 0
    sign, a = (1, -S) if S < 0 else (0, S)
    q = max(unit + a.bit_length() - P, -149)  # exponent of the last kept bit
    sh = q - unit
    if sh > 0:
        m, rem, half = a >> sh, a & ((1 << sh) - 1), 1 << (sh - 1)
        if mode == 'rne' and (rem > half or (rem == half and m & 1)):
            m += 1
    else:
        m = a << -sh
    L = m.bit_length()
    top = q + L - 1
    if top > 127:
        return sign << 31 | 0x7f800000
    if top < -126:
        return sign << 31 | m << (q + 149)
    return sign << 31 | (top + 127) << 23 | ((m << (24 - L)) & 0x7fffff)


def load(dt, path, cdec=None, bdt=None):
    """The dot products of a probe file: (products, c, D bits) per output. `cdec` decodes the
    accumulator (default f32); `bdt` is B's type when it differs from A's."""
    cdec = cdec or _f32
    bdt = bdt or dt
    k = K[dt]
    data = open(path, 'rb').read()
    w = struct.unpack('<%dI' % (len(data) // 4), data)
    per = 1 + 64 * k + 8 * k + 512 + 512
    out = []
    for o in range(0, len(w) - per + 1, per):
        u = w[o]
        A = [decode(dt, x) for x in w[o + 1:o + 1 + 64 * k]]
        B = [decode(bdt, x) for x in w[o + 1 + 64 * k:o + 1 + 72 * k]]
        C = w[o + 1 + 72 * k:o + 1 + 72 * k + 512]
        D = w[o + 1 + 72 * k + 512:o + per]
        for i in range(64):
            for j in range(8):
                prods = []
                for kk in range(k):
                    (ma, ea), (mb, eb) = A[i * k + kk], B[kk * 8 + j]
                    if ma and mb:
                        prods.append((ma * mb, ea + eb, lead(ma, ea) + lead(mb, eb)))
                    else:
                        prods.append(None)
                c = cdec(C[i * 8 + j]) if u else (0, 0)
                out.append((prods, c, D[i * 8 + j]))
    return out


def _accumulate(prods, c, G, F, ref, cut, c_lead, step):
    """The shared step structure: the products in groups of G with the running accumulator
    (m, e) (its exponent from `c_lead`), each term cut to the group's unit (the largest
    exponent - F) and summed exactly; `step(S, unit)` rounds the sum S * 2^unit: (bits, the
    next accumulator), or (bits, None) to stop there. The last bits."""
    cm, ce = c
    bits = 0
    for g in range(0, len(prods), G):
        grp = [p for p in prods[g:g + G] if p is not None]
        terms = [(m, e) for (m, e, _) in grp]
        exps = [nom if ref == 'nom' else lead(m, e) for (m, e, nom) in grp]
        if cm:
            terms.append((cm, ce))
            exps.append(c_lead(cm, ce))
        if not terms:
            cm, ce, bits = 0, 0, 0
            continue
        unit = max(exps) - F
        S = 0
        for (m, e) in terms:
            sh = unit - e
            if sh <= 0:
                S += m << -sh
            elif cut == 'rz':
                S += (abs(m) >> sh) * (1 if m > 0 else -1)
            else:
                S += m >> sh
        bits, nxt = step(S, unit)
        if nxt is None:
            return bits
        cm, ce = nxt
    return bits


def model(prods, c, G, F, ref, cut, final, P=24):
    def step(S, unit):
        bits = to_f32(S, unit, final, P)
        return bits, _f32(bits)
    return _accumulate(prods, c, G, F, ref, cut, lead, step)


def _f16(bits):
    s, e, m = bits >> 15 & 1, (bits >> 10) & 0x1f, bits & 0x3ff
    mant, ex = (m, -24) if e == 0 else (m | 0x400, e - 25)
    return (-mant if s else mant), ex


def _round(S, unit, P, mode, qmin):
    """S * 2^unit rounded to P significant bits, no quantum below 2^qmin -> (M, q): M * 2^q."""
    if S == 0:
        return 0, 0
    sign, a = (-1, -S) if S < 0 else (1, S)
    q = max(unit + a.bit_length() - P, qmin)
    sh = q - unit
    if sh > 0:
        m, rem, half = a >> sh, a & ((1 << sh) - 1), 1 << (sh - 1)
        if mode == 'rne' and (rem > half or (rem == half and m & 1)):
            m += 1
        return sign * m, q
    return sign * a, unit


F16_MAX = (2047, 5)  # 65504 = 2047 * 2^5


def to_f16(M, q, mode):
    """M * 2^q (already at f16 precision) -> f16 bits; beyond the largest finite value: infinity
    when rounding to nearest, the largest finite value toward zero (IEEE)."""
    if M == 0:
        return 0
    sign, a = (1, -M) if M < 0 else (0, M)
    if a * 2 ** q > 65504 if q >= 0 else a > 65504 * 2 ** -q:
        return sign << 15 | (0x7bff if mode == 'rz' else 0x7c00)
    while a >= 2048:
        a, q = a >> 1, q + 1  # exact: the value has at most 11 significant bits
    while a < 1024 and q > -24:
        a, q = a << 1, q - 1
    if a < 1024:
        return sign << 15 | a  # subnormal (q == -24)
    return sign << 15 | (q + 25) << 10 | (a & 0x3ff)


# Rounding chains of a step's exact sum into an f16 accumulator: (bits, mode) stages, the last
# one f16 (11 bits, quantum down to 2^-24).
CHAINS = {
    'h_rne': [(11, 'rne')],
    'h_rz': [(11, 'rz')],
    's_rz>h_rne': [(24, 'rz'), (11, 'rne')],
    's_rz>h_rz': [(24, 'rz'), (11, 'rz')],
    'p14_rz>h_rne': [(14, 'rz'), (11, 'rne')],
    'p14_rz>h_rz': [(14, 'rz'), (11, 'rz')],
}


def model16(prods, c, G, F, ref, cut, chain):
    """`model` with an f16 accumulator: each group's cut terms summed exactly and rounded
    through `chain` to an f16, the next group's c."""
    def step(S, unit):
        M, q = S, unit
        for (P, mode) in CHAINS[chain]:
            M, q = _round(M, q, P, mode, -149 if P != 11 else -24)
        bits = to_f16(M, q, CHAINS[chain][-1][1])
        return bits, (None if bits & 0x7c00 == 0x7c00 else _f16(bits))

    def c_lead(m, e):
        # A subnormal f16 counts with the exponent its field encodes (-14).
        return max(lead(m, e), -14)
    return _accumulate(prods, c, G, F, ref, cut, c_lead, step)


# What the fit selected (docs/hardware/wgmma-numerics.md): the f32 step's alignment, the exact cut
# sum rounded once to nearest-even f16.
CHOSEN16 = {'f16': (16, 25, 'nom', 'rz', 'h_rne'), 'e4m3': (32, 13, 'nom', 'rz', 'h_rne'),
            'e5m2': (32, 13, 'nom', 'rz', 'h_rne')}


def _grid_search(dt, samples, Fs, tails, run, show):
    """The fit's search on 1500 sampled dot products: every group size G up to K, alignment
    F in `Fs`, exponent reference and cut, and each `tail` (the rounding after the sum);
    `run(prods, c, G, F, ref, cut, tail)` models one. Prints the `show` best (wrong, name)."""
    random.seed(1)
    sub = random.sample(samples, 1500)
    res = []
    for G in [g for g in (8, 16, 32) if g <= K[dt]]:
        for F in Fs:
            for ref in ('nom', 'act'):
                for cut in ('rz', 'floor'):
                    for tail, name in tails:
                        bad = sum(run(p, c, G, F, ref, cut, tail) != d for (p, c, d) in sub)
                        res.append((bad, 'G=%d F=%d ref=%s cut=%s %s' % (G, F, ref, cut, name)))
    res.sort()
    for bad, desc in res[:show]:
        print('%4d of 1500 wrong: %s' % (bad, desc))


def fit16(dt, samples):
    _grid_search(dt, samples, range(9, 29), [(chain, 'chain=%s' % chain) for chain in CHAINS], model16, 8)


def check_int(a, b, path):
    """s8/u8 products into s32: the exact sum modulo 2^32 (no saturation)."""
    samples = load(a, path, cdec=lambda x: (x - (1 << 32) if x & 0x80000000 else x, 0), bdt=b)
    bad = wrapped = 0
    for prods, (cm, _), d in samples:
        s = cm + sum(p[0] for p in prods if p is not None)
        if (s & 0xffffffff) != d:
            bad += 1
        elif not -(1 << 31) <= s < (1 << 31):
            wrapped += 1
    print('%s x %s: %d of %d results differ from the exact sum modulo 2^32 (%d of them wrapped)'
          % (a, b, bad, len(samples), wrapped))


CHOSEN = {'f16': (25, 24), 'bf16': (25, 24), 'tf32': (25, 24), 'e4m3': (13, 14),
          'e5m2': (13, 14)}

if __name__ == '__main__':
    cmd = sys.argv[1]
    if cmd == 'checkint':
        check_int(sys.argv[2], sys.argv[3], sys.argv[4])
        sys.exit(0)
    if cmd == 'checkmix':
        samples = load('e4m3', sys.argv[2], bdt='e5m2')
        F, P = CHOSEN['e4m3']
        bad = sum(model(p, c, 32, F, 'nom', 'rz', 'rz', P) != d for (p, c, d) in samples)
        print('e4m3 x e5m2: G=32 F=%d P=%d: %d of %d dot products differ from the GPU'
              % (F, P, bad, len(samples)))
        sys.exit(0)
    dt, path = sys.argv[2:4]
    if cmd in ('fit16', 'check16'):
        samples = load(dt, path, cdec=_f16)
        if cmd == 'fit16':
            fit16(dt, samples)
        else:
            G, F, ref, cut, chain = CHOSEN16[dt]
            bad = sum(model16(p, c, G, F, ref, cut, chain) != d for (p, c, d) in samples)
            print('%s into f16: G=%d F=%d ref=%s cut=%s chain=%s: %d of %d dot products differ from the GPU'
                  % (dt, G, F, ref, cut, chain, bad, len(samples)))
        sys.exit(0)
    samples = load(dt, path)
    if cmd == 'fit':
        finals = [((final, P), 'round=%s P=%d' % (final, P)) for final, P in (('rz', 24), ('rne', 24), ('rz', 14))]
        _grid_search(dt, samples, range(11, 29), finals,
                     lambda p, c, G, F, ref, cut, fp: model(p, c, G, F, ref, cut, *fp), 6)
    else:
        F, P = CHOSEN[dt]
        bad = sum(model(p, c, K[dt], F, 'nom', 'rz', 'rz', P) != d for (p, c, d) in samples)
        print('%s: G=%d F=%d P=%d: %d of %d dot products differ from the GPU'
              % (dt, K[dt], F, P, bad, len(samples)))
