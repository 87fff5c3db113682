"""Naive reference kernels for the tests: Python loops straight from the definitions,
independent of the NumPy kernels under test."""

from __future__ import annotations

import numpy as np


def pair(p):
    """An int or a pair as a pair."""
    return (p, p) if isinstance(p, int) else tuple(p)


def pad4(p):
    """1, 2 or 4 padding values as (top, left, bottom, right)."""
    if isinstance(p, int):
        return (p, p, p, p)
    if len(p) == 2:
        return (p[0], p[1], p[0], p[1])
    return tuple(p)


def in_layout(x, layout):
    """NCHW ``x`` in ``layout`` by reshape and transpose: NCHW, NHWC, or NCHW{k}c, which is
    (N, C / k, H, W, k) with channel c at [:, c // k, :, :, c % k]."""
    if layout in ("NCHW", "NHWC"):
        return np.ascontiguousarray(x.transpose(0, 2, 3, 1) if layout == "NHWC" else x)
    k = int(layout[4:-1])
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // k, k, h, w).transpose(0, 1, 3, 4, 2))


def naive_conv2d(x, w, strides=(1, 1), padding=0, dilation=(1, 1), groups=1,
                 data_layout="NCHW", kernel_layout="OIHW", in_zp=0, w_zp=0):
    """2-D convolution by Python-number accumulation over in-bounds taps, with optional
    zero points (padding taps contribute nothing); the result is NCHW."""
    dims = dict(zip(data_layout, x.shape))
    kdims = dict(zip(kernel_layout, w.shape))
    n_, h_, w_ = dims["N"], dims["H"], dims["W"]
    o_, i_, kh_, kw_ = kdims["O"], kdims["I"], kdims["H"], kdims["W"]
    pt, pl, pb, pr = pad4(padding)
    sh, sw = pair(strides)
    dh, dw = pair(dilation)
    oh_ = (h_ + pt + pb - dh * (kh_ - 1) - 1) // sh + 1
    ow_ = (w_ + pl + pr - dw * (kw_ - 1) - 1) // sw + 1
    per_group = o_ // groups
    wz = [int(z) for z in np.broadcast_to(w_zp, (o_,))]

    def at(arr, layout, **ix):
        return arr[tuple(ix[d] for d in layout)].item()

    out = [[[[0] * ow_ for _ in range(oh_)] for _ in range(o_)] for _ in range(n_)]
    for n in range(n_):
        for o in range(o_):
            g = o // per_group
            for oy in range(oh_):
                for ox in range(ow_):
                    acc = 0
                    for i in range(i_):
                        c = g * i_ + i
                        for ky in range(kh_):
                            for kx in range(kw_):
                                yy = oy * sh + ky * dh - pt
                                xx = ox * sw + kx * dw - pl
                                if 0 <= yy < h_ and 0 <= xx < w_:
                                    xv = at(x, data_layout, N=n, C=c, H=yy, W=xx) - in_zp
                                    wv = at(w, kernel_layout, O=o, I=i, H=ky, W=kx) - wz[o]
                                    acc += xv * wv
                    out[n][o][oy][ox] = acc
    return np.array(out)


def naive_pool_size(size, k, s, d, lo, hi, ceil_mode):
    """Window starts (in padded coordinates) of a 2-D pool along one axis."""
    ext = d * (k - 1) + 1
    starts = []
    i = 0
    while True:
        start = i * s
        fits = start + ext <= size + lo + hi
        overhang = ceil_mode and start < size + lo and start + ext < size + lo + hi + s
        if not (fits or overhang):
            break
        starts.append(start)
        i += 1
    return len(starts)


def naive_pool2d(x, kind, pool_size, strides=(1, 1), dilation=(1, 1), padding=0,
                 ceil_mode=False, count_include_pad=False):
    """NCHW pooling with python loops; ints round half away from zero."""
    n_, c_, h_, w_ = x.shape
    kh, kw = pool_size
    sh, sw = strides
    dh, dw = dilation
    pt, pl, pb, pr = pad4(padding)
    oh_ = naive_pool_size(h_, kh, sh, dh, pt, pb, ceil_mode)
    ow_ = naive_pool_size(w_, kw, sw, dw, pl, pr, ceil_mode)
    is_int = x.dtype.kind in "iu"
    out = np.zeros((n_, c_, oh_, ow_), dtype=x.dtype if kind == "max" or is_int else
                   np.float64)
    for n in range(n_):
        for c in range(c_):
            for y in range(oh_):
                for z in range(ow_):
                    vals, counted = [], 0
                    for ky in range(kh):
                        for kx in range(kw):
                            yy = y * sh + ky * dh - pt
                            xx = z * sw + kx * dw - pl
                            inside = 0 <= yy < h_ and 0 <= xx < w_
                            in_pad = -pt <= yy < h_ + pb and -pl <= xx < w_ + pr
                            if inside:
                                vals.append(x[n, c, yy, xx].item())
                            if inside or (count_include_pad and in_pad):
                                counted += 1
                    if kind == "max":
                        out[n, c, y, z] = max(vals)
                    elif is_int:
                        s, m = sum(vals), counted
                        out[n, c, y, z] = (s + m // 2) // m if s > 0 else -((-s + m // 2) // m)
                    else:
                        out[n, c, y, z] = sum(vals) / counted
    return out
