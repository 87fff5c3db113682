"""Kernels that run native code (:mod:`.native`): float32 convolution (NCHW and NHWC),
depthwise convolution, max pooling, dense layers and matrix products, parallel over
``num-threads`` threads.

They follow the NumPy kernels' convention (outputs, inputs, then extras) and most apply an
epilogue while they write the output: ``out = act(clamp(acc + bias + residual, lo, hi))``,
with ``bias`` (one value per output channel) and ``residual`` (shaped like ``out``) None
when absent, and ``bounds`` = ``[lo, hi, code]`` (float32), ``code`` the activation's
:data:`ACTIVATION_CODES` entry. ``geometry`` is the int64 array of static sizes the
C function reads (see ``native/kernels/``); planners build it once per call site.

Each kernel is a :class:`NativeKernel`: its ``arguments`` give the C function's arguments
(arrays, None for NULL) for the kernel's own arguments, so that a step calling it can also
be bound once into a native run (:mod:`.native.steps`) instead of being called from Python
every time.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from passhost.runtime import aligned_full
from passhost_cpu_target.conv import weights_in_layout
from passhost_cpu_target.native import library
from passhost_cpu_target.native.library import NativeLibrary, address

__all__ = ["ACTIVATION_CODES", "CONV2D_WEIGHT_LAYOUTS", "MATMUL_PACKED", "NativeKernel",
           "bound_arguments", "conv2d_nchw", "conv2d_nchw_scaled", "conv2d_nchwc",
           "conv2d_nhwc", "dense", "depthwise_conv2d_nchw", "depthwise_conv2d_nhwc",
           "kernel_failure", "matmul", "max_pool2d_nchw", "max_pool2d_nhwc",
           "pointwise_depthwise", "prepared_conv2d_weights"]

#: The index of the "b is packed" flag in a matmul geometry (see ``ph_matmul``).
MATMUL_PACKED = 10
#: The third value of a kernel's ``bounds`` for each activation applied after the clamp
#: (None: no activation); ``activate()`` in ``native/kernels/common.c`` reads it.
ACTIVATION_CODES: dict[str | None, float] = {None: 0.0, "sigmoid": 1.0, "nn.silu": 2.0}

#: (id of a read-only weight array, geometry bytes) -> a weak reference to the array (whose
#: death removes the entry) and the array's prepared form.
_prepared: dict[tuple[int, bytes], tuple[weakref.ref, Any]] = {}

#: C arguments: arrays, and None for NULL.
Arguments = list[np.ndarray | None]


def _loaded() -> NativeLibrary:
    """The kernel library (native kernels are only planned when it loaded)."""
    lib = library()
    if lib is None:
        raise RuntimeError("the native kernel library is not available")
    return lib


def kernel_failure(kernel: str, status: int) -> MemoryError:
    """The error of a native kernel that returned ``status`` (its work buffers could not be
    allocated)."""
    return MemoryError(f"native kernel {kernel}: out of memory for its work buffers "
                       f"(status {status})")


class NativeKernel:
    """A kernel of the library: its Python ``name``, its C ``symbol`` (without ``ph_``),
    and ``arguments(*args, bindable=False, **options)`` giving its C arguments for the
    kernel's arguments. With ``bindable=True`` it returns None when the arguments would
    change from call to call (a writeable weight that must be prepared again), so the call
    cannot be bound once."""

    def __init__(self, name: str, symbol: str,
                 arguments: Callable[..., Arguments | None]) -> None:
        self.symbol = symbol
        self.arguments = arguments
        self.__name__ = self.__qualname__ = name
        self.__module__ = __name__

    def __call__(self, *args: Any, **options: Any) -> None:
        """Run the kernel."""
        values = self.arguments(*args, **options)
        assert values is not None  # only bindable=True may give None
        status = getattr(_loaded(), self.symbol)(*[None if v is None else address(v)
                                                    for v in values])
        if status:
            raise kernel_failure(self.symbol, status)

    def __repr__(self) -> str:
        return f"<native kernel {self.__name__} (ph_{self.symbol})>"


def _prepared_once(weight: np.ndarray, geometry: np.ndarray,
                   prepare: Callable[[], Any]) -> Any:
    """``prepare()``, computed once per read-only ``weight`` (an executor's parameters
    are) and geometry and kept while the array lives; recomputed on every call for a
    writeable array, which may change between calls."""
    key = (id(weight), geometry.tobytes())
    entry = _prepared.get(key)
    if entry is not None and entry[0]() is weight:
        return entry[1]
    prepared = prepare()
    if not weight.flags.writeable:
        _prepared[key] = (weakref.ref(weight, lambda _, key=key: _prepared.pop(key, None)),
                          prepared)
    return prepared


#: The weight layout each convolution kernel prepares its weights from, by data layout
#: (``NCHWc``: the kernel of channel-blocked data, ``NCHW{k}c``).
CONV2D_WEIGHT_LAYOUTS = {"NCHW": "OIHW", "NHWC": "OHWI", "NCHWc": "OIHW"}


def prepared_conv2d_weights(weight: np.ndarray, wbuf: np.ndarray | None,
                            geometry: np.ndarray, kernel_layout: str,
                            data_layout: str = "NCHW") -> np.ndarray:
    """``weight`` in the ``data_layout`` convolution kernel's own form (packed panels, or
    transformed for Winograd), prepared once per read-only array (see
    :func:`_prepared_once`)."""
    symbol = f"conv2d_{data_layout.lower()}"

    def prepare() -> np.ndarray:
        lib = _loaded()
        size = getattr(lib, f"{symbol}_prepared")(address(geometry))
        prepared = aligned_full(size, None, "float32")
        w = weights_in_layout(weight, wbuf, kernel_layout, CONV2D_WEIGHT_LAYOUTS[data_layout])
        status = getattr(lib, f"{symbol}_prepare")(address(w), address(prepared),
                                                    address(geometry))
        if status:
            raise kernel_failure(f"{symbol}_prepare", status)
        return prepared

    key = np.concatenate([geometry, np.frombuffer(data_layout.encode(), np.uint8)])
    return _prepared_once(weight, key, prepare)


def _conv2d(data_layout: str) -> Callable[..., Arguments | None]:
    """The arguments of a convolution of ``data_layout`` data with prepared weights."""

    def arguments(out: np.ndarray, data: np.ndarray, weight: np.ndarray,
                  bias: np.ndarray | None, residual: np.ndarray | None,
                  cols: np.ndarray | None, wbuf: np.ndarray | None, geometry: np.ndarray,
                  bounds: np.ndarray, *, kernel_layout: str,
                  bindable: bool = False) -> Arguments | None:
        if bindable and weight.flags.writeable:
            return None
        prepared = prepared_conv2d_weights(weight, wbuf, geometry, kernel_layout, data_layout)
        return [data, prepared, out, bias, residual, cols, geometry, bounds]

    return arguments


#: Grouped NCHW convolution with an epilogue. ``cols`` is None or the packed-column scratch
#: the library asks for; ``wbuf`` is None or a scratch for OIHW weights. The weights are
#: used as :func:`prepared_conv2d_weights` gives them.
conv2d_nchw = NativeKernel("conv2d_nchw", "conv2d_nchw", _conv2d("NCHW"))
#: Ungrouped NHWC convolution with an epilogue. ``cols`` is None or the scratch for an
#: image's zero-padded copy the library asks for; ``wbuf`` is None or a scratch for OHWI
#: weights.
conv2d_nhwc = NativeKernel("conv2d_nhwc", "conv2d_nhwc", _conv2d("NHWC"))
#: Ungrouped convolution of channel-blocked data (``NCHW{k}c``, or NCHW) into
#: channel-blocked output, with an epilogue; ``cols`` is None (the kernel needs no scratch),
#: ``wbuf`` None or a scratch for OIHW weights.
conv2d_nchwc = NativeKernel("conv2d_nchwc", "conv2d_nchwc", _conv2d("NCHWc"))


def _scaled_conv2d_arguments(
        scaled: np.ndarray, a: np.ndarray, b: np.ndarray, weight: np.ndarray,
        bias: np.ndarray | None, residual: np.ndarray | None, out: np.ndarray,
        cols: np.ndarray | None, wbuf: np.ndarray | None, geometry: np.ndarray,
        bounds: np.ndarray, *, kernel_layout: str, bindable: bool = False) -> Arguments | None:
    """The arguments of ``ph_conv2d_nchw_scaled``: the data and the scale (the product's
    operands ``a`` and ``b``, in either order: the data is shaped like the product), the
    weights prepared as for :data:`conv2d_nchw`."""
    if bindable and weight.flags.writeable:
        return None
    data, scale = (a, b) if a.shape == scaled.shape else (b, a)
    prepared = prepared_conv2d_weights(weight, wbuf, geometry, kernel_layout)
    return [data, scale, prepared, out, bias, residual, cols, geometry, bounds]


#: A 1x1 NCHW convolution of its data scaled per channel (FuseOps groups the product with
#: it): ``scaled`` is the product's result, which the kernel leaves alone, ``a`` and ``b``
#: its operands (the data, and one value per image and channel), then the convolution's
#: weights, epilogue and output, as for :data:`conv2d_nchw`.
conv2d_nchw_scaled = NativeKernel("conv2d_nchw_scaled", "conv2d_nchw_scaled",
                                  _scaled_conv2d_arguments)


def _pointwise_depthwise_arguments(
        mid: np.ndarray, data: np.ndarray, weight: np.ndarray, bias: np.ndarray | None,
        dweight: np.ndarray, dbias: np.ndarray | None, residual: np.ndarray | None,
        out: np.ndarray, geometry: np.ndarray, bounds: np.ndarray, dbounds: np.ndarray, *,
        bindable: bool = False) -> Arguments | None:
    """The arguments of ``ph_pointwise_depthwise``: the pointwise weights (OIHW, 1x1)
    prepared once per read-only array, the depthwise ones as they are ([C][1][KH][KW])."""
    if bindable and weight.flags.writeable:
        return None

    def prepare() -> np.ndarray:
        lib = _loaded()
        prepared = aligned_full(lib.pointwise_depthwise_prepared(address(geometry)), None,
                                "float32")
        status = lib.pointwise_depthwise_prepare(address(np.ascontiguousarray(weight)),
                                                 address(prepared), address(geometry))
        if status:
            raise kernel_failure("pointwise_depthwise_prepare", status)
        return prepared

    key = np.concatenate([geometry, np.frombuffer(b"pointwise_depthwise", np.uint8)])
    prepared = _prepared_once(weight, key, prepare)
    return [data, prepared, bias, dweight, dbias, residual, out, geometry, bounds, dbounds]


#: A pointwise (1x1) convolution and the depthwise one of its result, NCHW, in one kernel
#: (FuseOps chains them): ``mid`` is the pointwise output, which the kernel leaves alone
#: (the middle tensor stays in its own buffers), ``bias`` and ``bounds`` the pointwise
#: epilogue, ``dbias``, ``residual`` and ``dbounds`` the depthwise one's, ``out`` the
#: depthwise output.
pointwise_depthwise = NativeKernel("pointwise_depthwise", "pointwise_depthwise",
                                   _pointwise_depthwise_arguments)


def _depthwise_weights(weight: np.ndarray, wbuf: np.ndarray | None, kernel_layout: str,
                       wanted: str, bindable: bool) -> np.ndarray | None:
    """The weights in the ``wanted`` layout: ``weight`` itself when it already is (no
    ``wbuf``), a copy made once for a read-only weight when bound, else ``wbuf``."""
    if wbuf is None:
        return weight
    if not bindable:
        return weights_in_layout(weight, wbuf, kernel_layout, wanted)
    if weight.flags.writeable:
        return None
    key = np.frombuffer(f"{kernel_layout}>{wanted}".encode(), np.uint8)
    return _prepared_once(weight, key, lambda: weights_in_layout(
        weight, np.empty_like(wbuf), kernel_layout, wanted))


def _depthwise(wanted: str) -> Callable[..., Arguments | None]:
    """The arguments of depthwise convolution with weights wanted in layout ``wanted``."""

    def arguments(out: np.ndarray, data: np.ndarray, weight: np.ndarray,
                  bias: np.ndarray | None, residual: np.ndarray | None,
                  wbuf: np.ndarray | None, geometry: np.ndarray, bounds: np.ndarray, *,
                  kernel_layout: str, bindable: bool = False) -> Arguments | None:
        w = _depthwise_weights(weight, wbuf, kernel_layout, wanted, bindable)
        return None if w is None else [data, w, out, bias, residual, geometry, bounds]

    return arguments


#: Depthwise convolution, NCHW, with an epilogue; ``wbuf`` is None or a scratch for the
#: weights as [C][KH][KW].
depthwise_conv2d_nchw = NativeKernel("depthwise_conv2d_nchw", "depthwise_nchw",
                                     _depthwise("OIHW"))
#: Depthwise convolution, NHWC, with an epilogue; ``wbuf`` is None or a scratch for the
#: weights as [KH][KW][C].
depthwise_conv2d_nhwc = NativeKernel("depthwise_conv2d_nhwc", "depthwise_nhwc",
                                     _depthwise("HWOI"))


def _max_pool2d(out: np.ndarray, data: np.ndarray, geometry: np.ndarray, *,
                bindable: bool = False) -> Arguments:
    return [data, out, geometry]


#: NCHW max pooling (padding never wins; NaN propagates).
max_pool2d_nchw = NativeKernel("max_pool2d_nchw", "max_pool_nchw", _max_pool2d)
#: NHWC max pooling, vectors along the channels (padding never wins; NaN propagates).
max_pool2d_nhwc = NativeKernel("max_pool2d_nhwc", "max_pool_nhwc", _max_pool2d)


def _packed_dense_weight(weight: np.ndarray, geometry: np.ndarray) -> np.ndarray:
    """``weight`` in the dense kernel's panels (see ``ph_dense_pack``)."""
    lib = _loaded()
    packed = aligned_full(lib.dense_packed(address(geometry)), None, "float32")
    lib.dense_pack(address(weight), address(packed), address(geometry))
    packed.flags.writeable = False
    return packed


def _dense(out: np.ndarray, data: np.ndarray, weight: np.ndarray, bias: np.ndarray | None,
           geometry: np.ndarray, bounds: np.ndarray, *, bindable: bool = False) -> Arguments:
    packed = None if weight.flags.writeable else _prepared_once(
        weight, geometry, lambda: _packed_dense_weight(weight, geometry))
    return [data, weight, packed, out, bias, geometry, bounds]


#: ``out = act(clamp(data @ weight.T + bias, lo, hi))`` (weight of shape (units, in)), a
#: matrix-vector product per row; a read-only ``weight`` (a parameter) is packed once into
#: panels read as one stream each.
dense = NativeKernel("dense", "dense", _dense)


def _packed_matmul_b(b: np.ndarray, geometry: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``b`` in the matmul kernel's panels, and the geometry saying it is packed."""
    lib = _loaded()
    packed = aligned_full(lib.matmul_packed(address(geometry)), None, "float32")
    lib.matmul_pack_b(address(b), address(packed), address(geometry))
    used = geometry.copy()
    used[MATMUL_PACKED] = 1
    used.flags.writeable = False
    return packed, used


def _matmul(out: np.ndarray, a: np.ndarray, b: np.ndarray, bias: np.ndarray | None,
            scale: np.ndarray | None, residual: np.ndarray | None, gate: np.ndarray | None,
            geometry: np.ndarray, bounds: np.ndarray, *, bindable: bool = False) -> Arguments:
    if b.flags.writeable:
        packed, used = None, geometry
    else:
        packed, used = _prepared_once(b, geometry, lambda: _packed_matmul_b(b, geometry))
    return [a, b, packed, out, bias, scale, residual, gate, used, bounds]


#: Batched ``out = act(clamp((a @ b + bias) * scale + residual, lo, hi)) * gate`` with the
#: operands' layouts (transposes, broadcast batches) in ``geometry``; a read-only ``b`` (a
#: weight) is packed once, any other by the kernel on every call.
matmul = NativeKernel("matmul", "matmul", _matmul)


def bound_arguments(kernel: NativeKernel, *args: Any, **options: Any) -> Arguments | None:
    """The C arguments of one call of ``kernel``, fixed from now on; None when the call
    cannot be bound once (see :class:`NativeKernel`)."""
    return kernel.arguments(*args, bindable=True, **options)
