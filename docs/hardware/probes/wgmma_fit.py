#!/usr/bin/env python3
"""Fit and check tensor-core arithmetic models against the files of wgmma_numerics.cu.

    wgmma_fit.py fit DTYPE FILE        # rank candidate models on 1,500 sampled dot products
    wgmma_fit.py check DTYPE FILE      # the chosen model against every dot product in FILE

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

K = {'f16': 16, 'bf16': 16, 'e4m3': 32, 'e5m2': 32, 'tf32': 8}
# exponent bits, mantissa bits, bias
FMT = {'f16': (5, 10, 15), 'bf16': (8, 7, 127), 'e4m3': (4, 3, 7), 'e5m2': (5, 2, 15),
       'tf32': (8, 23, 127)}


def decode(dt, bits):
    """Element bits -> (signed integer significand, exponent of its last bit); 0 -> (0, 0)."""
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


def load(dt, path):
    k = K[dt]
    data = open(path, 'rb').read()
    w = struct.unpack('<%dI' % (len(data) // 4), data)
    per = 1 + 64 * k + 8 * k + 512 + 512
    out = []
    for o in range(0, len(w) - per + 1, per):
        u = w[o]
        A = [decode(dt, x) for x in w[o + 1:o + 1 + 64 * k]]
        B = [decode(dt, x) for x in w[o + 1 + 64 * k:o + 1 + 72 * k]]
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
                c = _f32(C[i * 8 + j]) if u else (0, 0)
                out.append((prods, c, D[i * 8 + j]))
    return out


def model(prods, c, G, F, ref, cut, final, P=24):
    cm, ce = c
    bits = 0
    for g in range(0, len(prods), G):
        grp = [p for p in prods[g:g + G] if p is not None]
        terms = [(m, e) for (m, e, _) in grp]
        exps = [nom if ref == 'nom' else lead(m, e) for (m, e, nom) in grp]
        if cm:
            terms.append((cm, ce))
            exps.append(lead(cm, ce))
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
        bits = to_f32(S, unit, final, P)
        cm, ce = _f32(bits)
    return bits


CHOSEN = {'f16': (25, 24), 'bf16': (25, 24), 'tf32': (25, 24), 'e4m3': (13, 14),
          'e5m2': (13, 14)}

if __name__ == '__main__':
    cmd, dt, path = sys.argv[1:4]
    samples = load(dt, path)
    if cmd == 'fit':
        random.seed(1)
        sub = random.sample(samples, 1500)
        res = []
        for G in [g for g in (8, 16, 32) if g <= K[dt]]:
            for F in range(11, 29):
                for ref in ('nom', 'act'):
                    for cut in ('rz', 'floor'):
                        for final, P in (('rz', 24), ('rne', 24), ('rz', 14)):
                            bad = sum(model(p, c, G, F, ref, cut, final, P) != d
                                      for (p, c, d) in sub)
                            res.append((bad, 'G=%d F=%d ref=%s cut=%s round=%s P=%d'
                                        % (G, F, ref, cut, final, P)))
        res.sort()
        for bad, desc in res[:6]:
            print('%4d of 1500 wrong: %s' % (bad, desc))
    else:
        F, P = CHOSEN[dt]
        bad = sum(model(p, c, K[dt], F, 'nom', 'rz', 'rz', P) != d for (p, c, d) in samples)
        print('%s: G=%d F=%d P=%d: %d of %d dot products differ from the GPU'
              % (dt, K[dt], F, P, bad, len(samples)))
