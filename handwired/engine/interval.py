"""Interval arithmetic in midpoint–radius form: every float64 rounding of the forward pass bounded.

An interval is a pair ``(mid, rad)`` of arrays of one shape: the real value lies in ``[mid - rad, mid + rad]``.
``mid`` is always what :mod:`handwired.engine.forward` computes, bit for bit (each function here calls the float
function for it); ``rad`` bounds how far the value of the same formula in exact real arithmetic can be from it.
The real formula is GPT-2's with the file's float64 numbers as exact constants: the weights, LayerNorm's eps
(the float64 nearest 1e-5), and GELU's 0.044715 and √(2/π) taken as real numbers.

How each rounding is bounded (u = 2^-53, round to nearest):

* one addition, subtraction, multiplication, division or square root is within u·|result| of the exact
  operation on its float operands, plus 2^-1075 when a product or quotient underflows;
* a sum or dot product of n terms, in any order (numpy's pairwise sums, BLAS), is within γ_n·Σ|terms|,
  γ_n = n·u / (1 - n·u);
* numpy's exp is trusted within ``EXP_ULPS`` units in the last place (a test checks it against 50-digit
  arithmetic on this platform);
* radii are computed in float from non-negative terms only and then enlarged by :func:`up`, which covers
  the roundings of computing them; every underflow is covered by an absolute ``TINY`` = 2^-1000.
"""

import math

import numpy as np

from handwired.engine import forward
from handwired.engine.forward import LN_EPS

U = 2.0**-53  # the unit roundoff of float64
TINY = 2.0**-1000  # above every underflow loss a bound here can meet (each at most 2^-1075, times few terms)
EXP_ULPS = 4  # numpy's exp is trusted within this many ulps (tested against mpmath)
EXP_LOW, EXP_HIGH = 1 - 16 * U, 1 + 16 * U  # exp's own error (2·EXP_ULPS·u relative), the product's rounding
GELU_SLOPE = 1.13  # sup |gelu'| over the real line is 1.12899… (at x ≈ 1.6), inf is -0.12899…
GELU_C1 = 0.07135481627362  # above 2·0.044715·√(2/π): |t| ≤ |x|·(C2 + C1·x²), t = -2·√(2/π)·(x + 0.044715·x³)
GELU_C2 = 1.5957691216058  # above 2·√(2/π)


def gamma(n):  # -> a float above γ_n = n·u / (1 - n·u), the relative error of a sum of n terms in any order
    return n * U / (1 - n * U) * (1 + 2.0**-40)


def up(r, n=4):  # [...] -> [...]: above the real value of a non-negative expression that rounded r in n steps
    r *= 1 + gamma(n + 2)  # in place: every caller hands over a new array
    r += TINY
    return r


def exact(mid):  # [...] -> an interval of zero radius: a float64 the model holds exactly
    return mid, np.zeros_like(mid)


def add(a, b):  # intervals [...] + [...] -> [...]: one rounding, within u·|sum|; adding never underflows
    mid = a[0] + b[0]
    return mid, up(a[1] + b[1] + U * np.abs(mid), 3)


def embed(mid):  # [...] the float sum of two exact embeddings -> an interval: that one rounding
    return mid, np.abs(mid) * U


def hull(mid, lo, hi):  # mid, lo ≤ real ≤ hi [...] -> the interval (mid, rad) containing [lo, hi]
    return mid, up(np.maximum(hi - mid, mid - lo), 2)  # a NaN bound stays NaN: never proved


def lower(x, n=1):  # [...] x, rounded in n steps each within u·|x| -> below the real value
    return x - (np.abs(x) * gamma(n + 2) + TINY)


def upper(x, n=1):  # [...] -> above the real value
    return x + (np.abs(x) * gamma(n + 2) + TINY)


class Weight:
    """An exact float64 matrix, with what every product by it needs: |w| and the underflow floor of its columns."""

    def __init__(self, w):  # [n_in, n_out]
        self.w = w
        self.abs = np.abs(w)  # [n_in, n_out]
        self.n = w.shape[0]
        self.zero = not w.any()  # a silent layer: x·0 is exactly 0
        # an underflow in γ·|x| (2^-1075 each) reaches the output times a column's Σ|w|; the product's own, n of them
        self.floor = (self.abs.sum(axis=0) + self.n) * 2.0**-1070  # [n_out]


def linear(x, weight, b):  # interval [..., n_in] @ exact [n_in, n_out] + exact [n_out] -> [..., n_out]
    xm, xr = x
    if weight.zero:  # 0·x + b: exactly b, as forward computes it
        mid = np.broadcast_to(b, (*xm.shape[:-1], b.shape[-1])).copy()
        return mid, np.zeros_like(mid)
    mid = forward.linear(xm, weight.w, b)  # forward's bits
    size = np.abs(xm)  # [..., n_in]
    size *= gamma(weight.n)
    size += xr
    rad = up((size.reshape(-1, weight.n) @ weight.abs).reshape(mid.shape), weight.n + 3)  # [..., n_out]
    rad += weight.floor
    if b.any():  # the bias was added after the product: one more rounding
        rad = up(rad + U * np.abs(mid), 2)
    return mid, rad


def operand(x, n, n_head):  # interval [..., E] -> packed [..., E + 2·n_head]: mid, then per head the largest
    # γ_n·|mid| + rad and the largest |mid| + rad over its dimensions: what a product over at most n terms with x on
    # its right needs (see the spreads), made once, as a key or value is read by every descendant of its position
    mid, rad = x
    heads = (*mid.shape[:-1], n_head, mid.shape[-1] // n_head)  # [..., head, d_head]
    size = np.abs(mid).reshape(heads).max(axis=-1)  # [..., head]
    spread = rad.reshape(heads).max(axis=-1)  # [..., head]
    return np.concatenate([mid, up(size * gamma(n) + spread, 2), up(size + spread, 1)], axis=-1)


def scores_spread(q, k_scaled, k_whole):
    # q interval [..., n_q, d]; k's bounds [..., n_k] -> radius [..., n_q, n_k] around fl(qm @ kmᵀ):
    # Σ|qm|·(γ_d·|km| + kr) covers the product's rounding and k's radius, Σ qr·(|km| + kr) q's; each bounded by
    # Σ_d |q_d| times k's largest over d
    (qm, qr), d = q, q[0].shape[-1]
    size = np.abs(qm).sum(axis=-1, keepdims=True)  # [..., n_q, 1]
    spread = size * k_scaled[..., None, :] + qr.sum(axis=-1, keepdims=True) * k_whole[..., None, :]  # [..., n_q, n_k]
    return up(spread, 2 * d + 4) + (size + d) * TINY  # underflows in γ·|k| times Σ|q|, and the sum's own


def mix_spread(p, v_scaled, v_whole):
    # p interval [..., n_q, n_k] with entries in [0, 1]; v's bounds [..., n_k] -> radius [..., n_q, 1] around each
    # fl(pm @ vm): Σ_k pm_k·(γ·|vm| + vr) + pr_k·(|vm| + vr), each v bounded by its largest over d
    (pm, pr), n = p, p[0].shape[-1]
    spread = (pm * v_scaled[..., None, :] + pr * v_whole[..., None, :]).sum(axis=-1, keepdims=True)  # [..., n_q, 1]
    return up(spread, 2 * n + 4) + 2 * n * TINY


def scaled_rad(rad, mid, d):  # the radius of x [...] before, fl(x / fl(√d)) [...] after, d whole -> radius after
    root = math.sqrt(d)  # within u·√d of √d, as np.sqrt's
    return up(rad / (root * (1 - 2 * U)) + np.abs(mid) * (4 * U), 3)


def softmax_bounds(s, pattern):  # scores interval [..., n_key] (masked keys -inf), forward's softmax of them
    # -> the pattern as an interval [..., n_key]: p_j = e_j / (e_j + Σ_{k≠j} e_k), e_k = exp(s_k - M), bounded below
    # by e_lo_j / (e_lo_j + Σ_{k≠j} e_hi_k) and above by e_hi_j / (e_hi_j + Σ_{k≠j} e_lo_k) (any shift M cancels)
    sm, sr = s
    n = sm.shape[-1]
    d = np.maximum(sm, -(2.0**1000))  # [..., n_key]: a masked key's exp underflows to 0 either way, without inf - inf
    d -= np.max(sm, axis=-1, keepdims=True)  # ≤ 0, within u·|d|
    err = np.abs(d)
    err += sr
    err *= 8 * U  # covers the roundings of d, of d ± sr and of subtracting or adding err
    err += sr  # [..., n_key]: how far the real s_k - M can be from d, and more
    e_lo, e_hi = np.subtract(d, err), np.add(d, err, out=d)  # [..., n_key] each
    e_lo = np.maximum(np.exp(e_lo, out=e_lo) * EXP_LOW - TINY, 0)  # [..., n_key]
    np.exp(e_hi, out=e_hi)
    e_hi *= EXP_HIGH
    e_hi += TINY  # [..., n_key]: a masked key's is TINY, above its 0
    total_lo = np.sum(e_lo, axis=-1, keepdims=True) * (1 - 2 * gamma(n + 2))  # [..., 1]
    total_hi = up(np.sum(e_hi, axis=-1, keepdims=True), n + 2)  # [..., 1]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        # the others' sums, each the total less its own term: that subtraction is within u·total
        others_hi = up(np.maximum(total_hi - e_hi, 0) + total_hi * (2 * U), 2)  # [..., n_key]
        others_lo = np.maximum(total_lo * (1 - 4 * U) - e_lo, 0)  # [..., n_key]
        others_hi += e_lo
        np.divide(e_lo, others_hi, out=e_lo)
        p_lo = np.fmax(e_lo * (1 - 4 * U), 0, out=e_lo)  # fmax/fmin: 0/0 or inf/inf gives the trivial bound
        others_lo += e_hi
        np.divide(e_hi, others_lo, out=e_hi)
        p_hi = np.fmin(e_hi * (1 + 4 * U), 1, out=e_hi)
    return hull(pattern, p_lo, p_hi)


def attention(q, k, v, mask):
    # q interval [batch, head, n_q, d_head]; k and v operands as (mid [batch, head, n_k, d_head], its two bounds
    # [batch, head, n_k] each), k's made for d_head terms, v's for at least n_k; exact mask [n_q, n_k]
    # -> interval [batch, head, n_q, d_head], its mid forward.attention's bits
    seen = {}
    z = forward.attention(q[0], k[0], v[0], mask, seen.__setitem__)  # [batch, head, n_q, d_head]
    raw = scores_spread(q, k[1], k[2])  # [batch, head, n_q, n_k]
    scores_rad = scaled_rad(raw, seen["scores_before_mask"], q[0].shape[-1])  # [batch, head, n_q, n_k]
    pattern = softmax_bounds((seen["hook_attn_scores"], scores_rad), seen["hook_pattern"])
    return z, np.broadcast_to(mix_spread(pattern, v[1], v[2]), z.shape)


def layer_norm_bounds(x, g, b, eps=LN_EPS):  # interval [..., n] -> interval [..., n], mid forward.layer_norm's
    xm, xr = x
    n = xm.shape[-1]
    mean = np.mean(xm, axis=-1, keepdims=True)  # [..., 1]
    mean_rad = up(np.mean(xr, axis=-1, keepdims=True) + np.mean(np.abs(xm), axis=-1, keepdims=True)
                  * gamma(n + 1), n + 4)  # [..., 1]: the real mean of the real x is within this of `mean`
    centred = xm - mean  # [..., n]
    centred_rad = up(xr + mean_rad + U * np.abs(centred), 3)  # [..., n]
    low = np.maximum(np.abs(centred) - centred_rad, 0)  # [..., n]: |c| from below, within u
    high = np.abs(centred) + centred_rad  # [..., n]: |c| from above
    var_lo = np.mean(low * low, axis=-1, keepdims=True) * (1 - 2 * gamma(n + 6)) - TINY  # [..., 1]
    var_hi = np.mean(high * high, axis=-1, keepdims=True) * (1 + 2 * gamma(n + 6)) + TINY  # [..., 1]
    s_lo = np.sqrt(np.maximum(var_lo, 0) + eps) * (1 - 4 * U)  # [..., 1] ≤ √(var + eps), and ≥ √eps·(1-4u) > 0
    s_hi = np.sqrt(var_hi + eps) * (1 + 4 * U)  # [..., 1]
    c_lo, c_hi = lower(centred - centred_rad), upper(centred + centred_rad)  # [..., n]
    q_lo = lower(np.minimum(c_lo / s_lo, c_lo / s_hi))  # [..., n]: c/s rises with c; at fixed c, s at an end
    q_hi = upper(np.maximum(c_hi / s_lo, c_hi / s_hi))  # [..., n]
    y_lo = lower(np.minimum(g * q_lo, g * q_hi))  # [..., n]
    y_hi = upper(np.maximum(g * q_lo, g * q_hi))  # [..., n]
    if b.any():
        y_lo, y_hi = lower(y_lo + b), upper(y_hi + b)
    return hull(forward.layer_norm(xm, g, b, eps), y_lo, y_hi)


def gelu_bounds(x):  # interval [...] -> interval [...], mid forward.gelu's
    # |gelu(a) - gelu(b)| ≤ GELU_SLOPE·|a - b| on the whole line, so an interval that straddles the minimum
    # (-0.17004… at -0.75246…) is covered too. Forward's float evaluation of gelu(x) = x / (1 + exp(t)) is within
    # (12.2·|t| + 24)·u of it, relatively, where t > 0 (x < 0), and within 24·u where t ≤ 0 (x ≥ 0: exp(t) ≤ 1
    # absorbs t's rounding); once exp(t) overflows, the real |gelu(x)| is below TINY.
    xm, xr = x
    mid = forward.gelu(xm)  # [...]
    a = np.abs(xm)
    t = np.where(xm < 0, a * (GELU_C2 + GELU_C1 * a * a), 0)  # [...] ≥ |t| where it matters
    return mid, up(GELU_SLOPE * xr + (12.2 * U * t + 24 * U) * np.abs(mid), 6) + TINY
