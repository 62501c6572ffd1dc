"""Interval arithmetic in midpoint–radius form: every float64 rounding of the forward pass bounded.

An interval is a pair ``(mid, rad)`` of arrays of one shape: the real value lies in ``[mid - rad, mid + rad]``.
``mid`` is always what :mod:`handwired.engine.forward` computes, bit for bit (each function here calls the float
function for it); ``rad`` bounds how far the value of the same formula in exact real arithmetic can be from it.
The real formula is GPT-2's with the file's float64 numbers as exact constants: the weights, LayerNorm's eps
(the float64 nearest 1e-5), and GELU's 0.044715 and √(2/π) taken as real numbers.

Attention is bounded per query and head, not per score (:func:`attention_radius`): from the size of the query
and the largest key and value it sees (and their radii), with no array the size of the scores.

How each rounding is bounded (u = 2^-53, round to nearest):

* one addition, subtraction, multiplication, division or square root is within u·|result| of the exact
  operation on its float operands, plus 2^-1075 when a product or quotient underflows;
* a sum or dot product of n terms, in any order (numpy's pairwise sums, BLAS), is within γ_n·Σ|terms|,
  γ_n = n·u / (1 - n·u);
* numpy's exp is trusted within ``EXP_ULPS`` units in the last place (a test checks it against 50-digit
  arithmetic on this platform);
* radii are computed in float from non-negative terms only and then enlarged by :func:`up` (or by factors made
  larger beforehand), which covers the roundings of computing them; every underflow is covered by an absolute
  ``TINY`` = 2^-1000;
* an overflow or a NaN bounds nothing: where one enters a radius it is infinite, and where float64 turns one back
  into a finite number (LayerNorm's x / √inf, once a centred square overflows) the result's radius is made
  infinite (:func:`unbounded_where`); a logit with an infinite or NaN radius is never proved;
* round to nearest is checked, not assumed: the thread computing each logit's radius checks that it rounds to
  nearest (:func:`nearest`), and stops the check with an error where it does not.
"""

import math

import numpy as np

from handwired.engine import forward
from handwired.engine.forward import LN_EPS
from handwired.errors import HandwiredError

U = 2.0**-53  # the unit roundoff of float64
TINY = 2.0**-1000  # above every underflow loss a bound here can meet (each at most 2^-1075, times few terms)
EXP_ULPS = 4  # numpy's exp is trusted within this many ulps (tested against mpmath)
EXP_HIGH = 1 + 16 * U  # above exp's own error (2·EXP_ULPS·u relative) and the product's rounding
GELU_SLOPE = 1.13  # sup |gelu'| over the real line is 1.12899… (at x ≈ 1.6), inf is -0.12899…
GELU_ROUNDING = 30  # forward.gelu(x) is within 30·u·|x| of the real gelu(x) (see gelu_bounds)
SOFTMAX_LIMIT = 16  # a score's error beyond this: attention is not bounded (see attention_radius)
SCORE_REACH = 700  # a key this far below the largest score: float64's exp of it is normal, a key further weighs little
FAR = 2.0**-950  # above 4·2^-962, what a key beyond the reach can weigh (times n_keys), and its effect on the others
NORM_FLOOR = 2.0**-500  # above √m·2^-537, what underflowing squares can hide from a norm of m entries


_ONE, _QUARTER_ULP, _THREE_QUARTERS_ULP, _NEXT = 1.0, 2.0**-54, 3 * 2.0**-54, 1 + 2.0**-52  # read at run time


def nearest() -> bool:
    """Whether this thread's float arithmetic rounds to nearest, as every bound here assumes. A quarter of an ulp
    added to ±1 rounds back to ±1 only to nearest or towards zero, and three quarters rounds away only to nearest or
    away from zero: the four together leave round-to-nearest alone. Python's floats and numpy's loops use the same
    control register (on x86-64, MXCSR), which a C extension could have changed."""
    return (_ONE + _QUARTER_ULP == _ONE and -_ONE - _QUARTER_ULP == -_ONE
            and _ONE + _THREE_QUARTERS_ULP == _NEXT and -_ONE - _THREE_QUARTERS_ULP == -_NEXT)


def checked(rad, mid=None):  # a radius [...] just computed (of ``mid``) -> the same, infinite where the mid is not
    # finite (a sum that overflowed: its radius, from the terms' sizes, bounds nothing), if this thread rounds to
    # nearest; else an error
    if mid is not None and not np.isfinite(mid).all():
        rad = np.where(np.isfinite(mid), rad, np.inf)
    if not nearest():
        raise HandwiredError("the processor is not rounding floats to nearest in this thread (other code in this "
                             "process changed its rounding mode): the certified bounds assume it, so nothing can be "
                             "proved; restore round-to-nearest, or check without the proof")
    return rad


def gamma(n):  # -> a float above γ_n = n·u / (1 - n·u), the relative error of a sum of n terms in any order
    return n * U / (1 - n * U) * (1 + 2.0**-40)


def up(r, n=4):  # [...] -> [...]: above the real value of a non-negative expression that rounded r in n steps
    r *= 1 + gamma(n + 2)  # in place: every caller hands over a new array
    r += TINY
    return r


_GELU_ROUNDED, _GELU_SLOPED = GELU_ROUNDING * U * (1 + gamma(5)), GELU_SLOPE * (1 + gamma(5))  # (gelu_bounds)


def exact(mid):  # [...] -> an interval of zero radius: a float64 the model holds exactly
    return mid, np.zeros_like(mid)


def add(a, b, out=(None, None)):  # intervals [...] + [...] -> [...]: one rounding, within u·|sum|; adding never
    # underflows. ``out``: where the mid and the radius go (a's mid, b's mid: they may; by default new arrays)
    mid = np.add(a[0], b[0], out=out[0])
    rad = np.abs(mid, out=out[1])
    rad *= U
    rad += a[1]
    rad += b[1]
    return mid, up(rad, 3)


def embed(mid):  # [...] the float sum of two exact embeddings -> an interval: that one rounding
    return mid, np.abs(mid) * U


def hull(mid, lo, hi):  # mid, lo ≤ real ≤ hi [...] -> the interval (mid, rad) containing [lo, hi]
    return mid, unbounded_where(~np.isfinite(mid), up(np.maximum(hi - mid, mid - lo), 2))  # NaN or inf: unbounded


def unbounded_where(gave_up, rad):  # bool [...] (broadcast), radius [...] -> the radius, infinite where gave_up and
    # wherever it is NaN: an operation whose float evaluation overflowed or made a NaN bounds nothing (its finite
    # result, such as x / √inf = 0, is no evidence about the real value), so its result is not proved
    return np.where(gave_up | np.isnan(rad), np.inf, rad)


def lower(x, n=1):  # [...] x, rounded in n steps each within u·|x| -> below the real value
    slack = _slack(x, n)
    return np.subtract(x, slack, out=slack) if isinstance(slack, np.ndarray) else x - slack


def upper(x, n=1):  # [...] -> above the real value
    slack = _slack(x, n)
    return np.add(x, slack, out=slack) if isinstance(slack, np.ndarray) else x + slack


def _slack(x, n):  # u·|x|'s n roundings and an underflow's loss, in an array of its own (the bound is made in it)
    slack = np.abs(x) * gamma(n + 2)
    slack += TINY
    return slack


class Weight:
    """An exact float64 matrix and the bias added after it, with what a product by it needs, made once: |w|, the sums
    of |w| over each of its ``groups`` of rows (c_proj's heads: for a radius constant over a group), both enlarged to
    cover the radius's own roundings, and a floor per column: the bias's rounding and every underflow."""

    def __init__(self, w, b, groups=1):  # [n_in, n_out], [n_out]
        self.w, self.n = w, w.shape[0]
        self.zero = not w.any()  # a silent layer: x·0 is exactly 0
        scale = 1 + gamma(self.n + 12)  # the radius's roundings: the products, the sums, the additions, and more
        size = np.abs(w)  # [n_in, n_out]
        self.abs = size * scale
        sums = size.reshape(groups, -1, w.shape[1]).sum(axis=1)  # [groups, n_out]: within γ_n; a sum never underflows,
        sums *= 1 + gamma(self.n + 2)  # so a silent column's is exactly 0 (no TINY: its product by the heads' radii
        self.grouped = sums * scale  # would be subnormal, a hundred times slower on every walk's step)
        # |mid| ≤ (1 + γ_n)·Σ|x||w| + |b|: the bias's rounding within u·|mid| is covered by ``size``'s u·(1 + γ_n)·|x|
        # and u·|b| here; an underflow in γ·|x| (2^-1075 each) reaches the output times a column's Σ|w|, the
        # product's own n of them
        self.size = gamma(self.n) + U * (1 + gamma(self.n)) if b.any() else gamma(self.n)  # the factor of |x|
        self.floor = up(U * np.abs(b) + (size.sum(axis=0) + self.n) * 2.0**-1070, 2)  # [n_out]


def linear(x, weight, b, grouped=None):  # interval [..., n_in] @ exact [n_in, n_out] + exact [n_out] -> [..., n_out];
    # ``grouped`` [..., groups]: x's radius given per group of rows instead (x[1] is then unread)
    # The radius: Σ_i (c·|x_i| + r_i)·|w_ij| + u·|b_j|, c = γ_n for the product, and u·(1 + γ_n) for the bias
    xm, xr = x
    if weight.zero:  # 0·x + b: exactly b, as forward computes it
        mid = np.broadcast_to(b, (*xm.shape[:-1], b.shape[-1])).copy()
        return mid, np.zeros_like(mid)
    mid = forward.linear(xm, weight.w, b)  # forward's bits
    size = np.abs(xm)  # [..., n_in]
    size *= weight.size
    if grouped is None:
        size += xr
    rad = forward.matmul(size, weight.abs)  # [..., n_out]
    if grouped is not None:  # one group: a product of a column by a row
        rad += grouped * weight.grouped[0] if len(weight.grouped) == 1 else forward.matmul(grouped, weight.grouped)
    rad += weight.floor
    return mid, checked(rad, mid)  # every logit's radius comes from here or columns_radius


def columns_radius(x, weight, size=None, out=None, mid=None):  # interval [n_in, n] on columns -> the radius
    # [n_out, n] of forward's linear on columns (weight.w.T @ x + b,
    # :func:`handwired.engine.arithmetic.floats.linear_columns`):
    # :func:`linear`'s, transposed; ``size`` [n_in, n] and ``out`` [n_out, n]: buffers to work in (by default new
    # arrays); ``mid``: the product's value, when the caller has it (infinite radius where it overflowed)
    xm, xr = x
    if weight.zero:  # 0·x + b: exactly b
        return np.zeros((weight.w.shape[1], xm.shape[1]))
    size = np.abs(xm, out=size)  # [n_in, n]
    size *= weight.size
    size += xr
    rad = np.matmul(weight.abs.T, size, out=out)  # [n_out, n]
    rad += weight.floor[:, None]
    return checked(rad, mid)


def group_norms(x, starts, d, axis=0):  # [..., m, ...] -> [..., groups, ...]: above the Euclidean norm of each
    # group of at most d entries along ``axis``, the groups starting at ``starts``
    squares = np.add.reduceat(x * x, starts, axis=axis)  # within γ_(d+1), in any order
    return up(np.sqrt(squares), d + 3) + NORM_FLOOR


def head_norms(x, d):  # [..., m] -> [..., m / d]: above the Euclidean norm of each run of d entries (a head's)
    runs = x.reshape(*x.shape[:-1], -1, d)
    squares = np.einsum("...d,...d->...", runs, runs)  # within γ_(d+1), in any order
    return up(np.sqrt(squares), d + 3) + NORM_FLOOR


def attention_radius(q_size, q_rad, k_big, k_rad, v_big, v_rad, mixed, d, n):
    # Per query and head [..., head], broadcast: q_size and q_rad the Euclidean norms of q and of its radii over the
    # head's d dimensions; k_big, v_big, k_rad and v_rad the largest such norms of k, v and their radii over the keys
    # the query sees; mixed [..., head, 3]: Σ_k p̃_k·|v_k|, Σ_k p̃_k·|r_k| and Σ_k p̃_k·(1 - p̃_k)·|v_k| as forward
    # computes them (p̃ forward's pattern, |v_k| and |r_k| the norms of key k's value and of its radii); n the keys
    # softmax adds (masked ones included) -> a radius of z [..., head], every dimension of forward.attention's
    # output for that query and head.
    # Scores s = q·k/√d: each within R of forward's (Σ_d |q_d·k_d| ≤ |q|·|k|: the product's γ_d·|q||k|, the radii,
    # √d's rounding). Softmax subtracts the largest score M: each a_k = s_k - M within R + u·|ã_k| of forward's
    # ã_k. A key with |ã_k| > 700 weighs below e^{-700 + 2R}·(1 + …) < 2^-962 in real arithmetic (while R ≤
    # SOFTMAX_LIMIT) and below 2^-1009 in float64, and moves the others' weights by as little, relatively: an error
    # the absolute term n·FAR·(|v| + |r| + 1) covers. For the others (forward's exp of them normal) Δ = R + 700·u,
    # and every ratio of two of their exps is within e^{±2Δ'} of forward's, Δ' = Δ + exp's error. A weight is p_j =
    # 1 / (1 + r_j), r_j = Σ_{k≠j} e_k / e_j, so |p_j - p̂_j| ≤ p_j·(1 - p̂_j)·(e^{2Δ'} - 1) ≤ p̂_j·(1 - p̂_j)·
    # (e^{2Δ'} - 1)·e^{2Δ'} around p̂_j, the exact softmax of forward's exps, and forward's p̃_j is within γ_(n+2)·p̃_j
    # of p̂_j (the sum, the division): a weight near 1 barely moves ((e^x - 1)·e^x ≤ x·e^{2x}).
    # Then z = Σ p_k·v_k is within γ_n·Σ p̃_k|v_k| + Σ|p_k - p̃_k|·|v_k| + Σ p_k·|r_k| of forward's.
    # Beyond Δ = SOFTMAX_LIMIT the radius is infinite: not proved. Masked keys weigh exactly 0 either way.
    root = math.sqrt(d) * (1 - 2 * U)  # below √d and fl(√d)
    product = q_size * k_big  # [..., head]: above Σ_d |q_d·k_d|
    radii = k_big + k_rad
    radii *= q_rad
    radii += q_size * k_rad  # [..., head]: what q's and k's radii move q·k by
    # the product's γ_d·|q||k| and √d's rounding (4u·|s|, |s| ≤ (1 + γ_(d+4))·|q||k| / √d), the radii, then s - M's
    # rounding, within u·min(2·max|s|, 800), and exp's
    delta = product * ((gamma(d) + 4 * U * (1 + gamma(d + 4))) / root)
    delta += radii * (1 / root)
    delta *= 1 + gamma(24)
    delta += U * (SCORE_REACH + 2 * EXP_ULPS) * (1 + gamma(24)) + (d + 2) * TINY  # [..., head]: Δ'
    kappa = 2 * gamma(n + 2)
    grow = np.minimum(delta, 2 * SOFTMAX_LIMIT)  # beyond the limit unused: kept finite, nothing overflows
    grow *= 2  # then above (e^{2Δ'} - 1)·e^{2Δ'}·(1 + κ):
    grow *= np.exp(2 * grow)
    grow *= EXP_HIGH * (1 + gamma(6)) * (1 + kappa)
    near = mixed[..., 0] * (gamma(n) + kappa + kappa * grow)  # [..., head]
    near += mixed[..., 2] * grow
    near += mixed[..., 1] * (1 + kappa + grow)
    near *= (1 + 2 * gamma(n)) * (1 + gamma(6))  # the sums' own roundings
    near += (v_big + v_rad + 1) * (n * FAR)
    return np.where(delta <= SOFTMAX_LIMIT, near, np.inf)  # a NaN Δ: infinite too


def layer_norm_bounds(x, g, b, eps=LN_EPS, axis=-1):  # interval [..., n] -> interval [..., n], mid forward.layer_norm's
    # (axis: where n is; g and b broadcast there). The real y = g·c/s + b, c = x - mean(x) and s = √(mean(c²) + eps);
    # forward's ŷ = fl(fl(fl(ĉ·g) / ŝ) + b) from its own ĉ and ŝ. So |y - ŷ| ≤ |g|·(|c - ĉ| / s + |ĉ|·|1/s - 1/ŝ|)
    # plus forward's three roundings, within |ĉ·g|·(3u + 3u² + u³) / ŝ + u·|b| and underflows below 2^-1065
    # (ŝ ≥ √eps > 1/317); and for s anywhere in [s_lo, s_hi], |1/s - 1/ŝ| ≤ max(ŝ - s_lo, s_hi - ŝ) / (s_lo·ŝ).
    xm, xr = x
    n = xm.shape[axis]
    centred, variance = forward.centre(xm, axis)  # [..., n], [..., 1]: forward's ĉ and its variance
    mean_rad = up(np.mean(xr, axis=axis, keepdims=True) + np.mean(np.abs(xm), axis=axis, keepdims=True)
                  * gamma(n + 1), n + 4)  # [..., 1]: the real mean of the real x is within this of forward's
    size = np.abs(centred)  # [..., n]
    centred_rad = up(xr + mean_rad + U * size, 3)  # [..., n]: the real c is within this of ĉ
    low = np.maximum(size - centred_rad, 0)  # [..., n]: |c| from below, within u
    high = size + centred_rad  # [..., n]: |c| from above
    var_lo = np.mean(low * low, axis=axis, keepdims=True) * (1 - 2 * gamma(n + 6)) - TINY  # [..., 1]
    var_hi = np.mean(high * high, axis=axis, keepdims=True) * (1 + 2 * gamma(n + 6)) + TINY  # [..., 1]
    # Past about 1.3e154 a centred square overflows: float64's variance is inf, forward divides by √inf and returns
    # the bias, and var_lo (inf too) is no lower bound of the real variance. Every such row gives up, as does one
    # whose mean or its radius overflowed (var_hi ≥ var_lo, so a non-finite var_lo makes var_hi non-finite too).
    overflowed = ~(np.isfinite(var_hi) & np.isfinite(mean_rad))  # [..., 1]
    s_lo = np.sqrt(np.maximum(var_lo, 0) + eps) * (1 - 4 * U)  # [..., 1] ≤ √(var + eps), and ≥ √eps·(1-4u) > 0
    s_hi = np.sqrt(var_hi + eps) * (1 + 4 * U)  # [..., 1]
    s = np.sqrt(variance + eps)  # [..., 1]: forward's ŝ (NaN where it overflowed: infinite radius below)
    spread = up(np.maximum(np.maximum(s - s_lo, s_hi - s), 0) / (s_lo * s) + 3.001 * U / s, 6)  # [..., 1]
    rad = np.multiply(centred_rad, up(1 / s_lo, 1), out=centred_rad)  # [..., n]: |c - ĉ| / s
    size *= spread
    rad += size
    rad *= np.abs(g)
    rad += up(U * np.abs(b) + (np.abs(g) + 2) * 2.0**-1064, 3)  # the rounding of + b, and every underflow
    rad = up(rad, 4)
    mid = forward.normalise(centred, variance, g, b, eps)  # (in place: ĉ is not read again)
    if not (np.isfinite(mid.sum() + rad.sum()) and not overflowed.any()):  # a sum of finite numbers may overflow
        rad = unbounded_where(overflowed | ~np.isfinite(mid), rad)  # too: then this finds nothing
    return mid, rad


def gelu_bounds(x):  # interval [...] -> interval [...], mid forward.gelu's
    # |gelu(a) - gelu(b)| ≤ GELU_SLOPE·|a - b| on the whole line, so an interval that straddles the minimum
    # (-0.17004… at -0.75246…) is covered too. Forward's float evaluation of gelu(x) = x / (1 + exp(t)) is within
    # (12.2·t + 24)·u of it, relatively, where t = -2·√(2/π)·(x + 0.044715·x³) > 0 (x < 0), and within 24·u where
    # x ≥ 0; as |gelu(x)| = |x| / (1 + e^t) and t / (1 + e^t) ≤ 0.2785, that is within (12.2·0.2785 + 24)·u·|x| <
    # GELU_ROUNDING·u·|x|; once exp(t) overflows, the real |gelu(x)| is below TINY. The radius's own three roundings
    # (and its factors') are in its factors, an underflow in the other TINY.
    xm, xr = x
    rad = np.abs(xm)
    rad *= _GELU_ROUNDED
    rad += _GELU_SLOPED * xr
    rad += 2 * TINY
    mid = forward.gelu(xm)
    return mid, _far_below(xm, xr, mid, rad)


def _far_below(xm, xr, mid, rad):  # [...] -> [...]: rad, or where smaller the radius about mid for an interval far
    # below gelu's minimum (:func:`_far`), in place. Only where xm ≤ -1 can it be: on whole arrays where most entries
    # are (a step's shut units), else at those alone.
    with np.errstate(over="ignore", invalid="ignore"):
        near = xm <= -1  # (NaN not)
        count = np.count_nonzero(near)
        if 2 * count > near.size:
            _far(xm + xr, mid, rad)
        elif count:
            near = np.flatnonzero(near)
            some = np.take(rad, near)
            _far(np.take(xm, near) + np.take(xr, near), np.take(mid, near), some)
            np.put(rad, near, some)
    return rad


def _far(h, mid, rad):  # the sums xm + xr (written in), mid and rad [...] -> rad made smaller where it can be, in
    # place. Below the minimum gelu rises to 0 as x falls, so on an interval whose upper end h is at most -1 it lies
    # in [gelu(h), 0]. The radius about mid then covers [-B, 0] (B: :func:`_below_bound`): max(mid + B, -mid), which
    # can be smaller only where -mid < rad. A hand-wired unit shut far below its threshold (a step's GELU) is
    # bounded by its tiny value, not by its input's width.
    t = np.abs(h)
    t *= 2 * U
    h += t  # the float sum rounded up by |h|·u
    h += TINY
    below = h <= -1
    np.add(mid, rad, out=t)
    below &= t > 0  # -mid < rad (a float sum of two floats is 0 only when the real one is), NaN not
    count = np.count_nonzero(below)
    if 4 * count >= below.size:
        _below_bound(h, mid, rad, below)
    elif count:  # few: at those alone
        at = np.flatnonzero(below)
        some = np.take(rad, at)
        _below_bound(np.take(h, at), np.take(mid, at), some, True)
        np.put(rad, at, some)


def _below_bound(h, mid, rad, below):  # h ≤ -1 where ``below`` (written in), mid, rad [...] -> rad, there the
    # smaller of it and max(mid + B, -mid), in place. |gelu(h)| = |h| / (1 + e^t) < B = |h|·e^(-t),
    # t = -2·√(2/π)·(h + 0.044715·h³) > 0: t (a few roundings: taken 1e-12 smaller, relatively) and the product
    # (taken 1e-12 larger) only widen it, as does e^-700 in place of anything smaller (exp's subnormal results, and
    # every product with them, cost float64 many times a normal one)
    t = h * h
    t *= 0.044715
    t += 1
    t *= h
    t *= 2 * math.sqrt(2 / math.pi) * (1 - 1e-12)  # -t
    np.clip(t, -700, 0, out=t)  # (above 0 only where h > -1: not read)
    np.exp(t, out=t)
    np.abs(h, out=h)
    h *= 1 + 1e-12
    t *= h  # B
    t += mid
    np.maximum(t, np.negative(mid, out=h), out=t)
    t *= 1 + 4 * U
    t += TINY
    below &= np.isfinite(t)
    np.copyto(rad, np.minimum(t, rad, out=t), where=below)
