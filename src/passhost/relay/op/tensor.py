"""Elementwise and broadcasting tensor operators (math, comparisons, selection, casts).

Semantics follow TVM's Relay operators of the same names. Notes on the reference kernels:

* ``divide`` is true division for floats; for integers it truncates toward zero (as C and
  TVM's integer division do), and an integer division by zero gives 0.
* ``power`` on integers: a negative exponent gives the truncated value of the real power
  (0 unless the base is 1 or -1; 0 for a zero base); overflow wraps around.
* ``erf`` is computed in float64 (a power series below 2, a continued fraction for erfc above)
  and cast back; its relative error is about 1e-15 before the cast.
* ``cast`` converts as NumPy's ``astype``: floats to integers truncate toward zero, integers
  wrap around; NaN, infinities and out-of-range floats give unspecified integers.
* Floating-point exceptions (log of a negative number, division by zero, ...) give NaN or
  infinities silently, as IEEE 754 arithmetic does.
* bfloat16 (and float16) unary math and ``matmul`` compute in float32 and round the result
  once, as ONNX's reference does.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from passhost import te
from passhost.errors import AttrError
from passhost.ir.attrs import Attrs, attrs_class, dtype_field, float_field
from passhost.ir.types import (
    ANY_FLOAT_DTYPES,
    BFLOAT16_DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    TensorType,
    Type,
    is_float_dtype,
)
from passhost.relay.op.accumulate import acc_float, matmul_in_dtype
from passhost.relay.op.common import broadcast_rel, broadcast_shape, compare_rel
from passhost.relay.op.elemwise_te import (
    binary_compute,
    float_const,
    is_signed,
    np_maximum,
    np_minimum,
    safe_divisor,
    unary_compute,
)
from passhost.relay.op.registry import ArgTypes, Op, OpPattern, TypeRelation, define_op
from passhost.tir import numpy_math
from passhost.tir.expr import Max, Min, PrimExpr

__all__ = [
    "add", "subtract", "multiply", "divide", "power", "maximum", "minimum",
    "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "sqrt", "rsqrt", "exp", "erf", "negative", "sigmoid", "tanh", "abs", "log",
    "clip", "cast", "where", "matmul",
]

NUMERIC_DTYPES = FLOAT_DTYPES + INT_DTYPES
#: The dtypes of the elementwise arithmetic: the numeric ones and bfloat16.
ARITHMETIC_DTYPES = NUMERIC_DTYPES + BFLOAT16_DTYPES


# -- binary broadcasting operators --------------------------------------------------------------
def _add(_attrs: object, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.add(a, b, dtype=a.dtype))


def add_expr(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    """The element of ``add``: ``a + b`` (for bools, ``a or b``, as NumPy adds them)."""
    return a | b if a.dtype == "bool" else a + b


add = define_op(
    "add", inputs=("lhs", "rhs"), type_rel=broadcast_rel, compute=_add,
    pattern=OpPattern.BROADCAST, description="Elementwise sum, NumPy broadcasting.",
    te_compute=binary_compute(add_expr, "add"))


def arithmetic_broadcast_rel(args: ArgTypes, attrs_value: object) -> Type:
    """Two tensors of one dtype among :data:`ARITHMETIC_DTYPES`, broadcast together."""
    args.tensor(0, dtypes=ARITHMETIC_DTYPES)
    args.tensor(1, dtypes=ARITHMETIC_DTYPES)
    return broadcast_rel(args, attrs_value)


def _subtract(_attrs: object, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.subtract(a, b, dtype=a.dtype))


def _multiply(_attrs: object, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.multiply(a, b, dtype=a.dtype))


def _divide(_attrs: object, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        if is_float_dtype(a.dtype.name):
            return np.asarray(np.true_divide(a, b, dtype=a.dtype))
        q = np.floor_divide(a, b)
        if a.dtype.kind == "i":
            # Floor division rounds down; truncation rounds toward zero, one more when the
            # division is inexact and the operands have opposite signs (NumPy's quotient by
            # zero is already 0).
            inexact = (np.multiply(q, b, dtype=a.dtype) != a) & (b != 0)
            q = q + (inexact & ((a < 0) != (b < 0))).astype(q.dtype)
        return np.asarray(q, dtype=a.dtype)


def _power(_attrs: object, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        if is_float_dtype(a.dtype.name):
            return np.asarray(np.power(a, b, dtype=a.dtype))
        out = np.power(a, np.maximum(b, 0).astype(b.dtype), dtype=a.dtype)
        if a.dtype.kind == "i":
            negative = b < 0
            one = np.ones((), a.dtype)
            odd = (b % 2) != 0
            neg_one_pow = np.where(odd, -one, one)
            small = np.where(a == 1, one, np.where(a == -1, neg_one_pow, np.zeros((), a.dtype)))
            out = np.where(negative, small, out)
        return np.asarray(out, dtype=a.dtype)


def _multiply_te(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    return a & b if a.dtype == "bool" else a * b


def _divide_te(a: PrimExpr, b: PrimExpr) -> PrimExpr:
    if is_float_dtype(a.dtype):
        return a / b
    quotient = a / safe_divisor(b)
    if is_signed(a.dtype):
        quotient = te.if_then_else(b.equal(-1), 0 - a, quotient)
    return te.if_then_else(b.equal(0), 0, quotient)


def _maximum(_attrs: object, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.maximum(a, b, dtype=a.dtype))


def _minimum(_attrs: object, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return np.asarray(np.minimum(a, b, dtype=a.dtype))


subtract = define_op(
    "subtract", inputs=("lhs", "rhs"), type_rel=arithmetic_broadcast_rel, compute=_subtract,
    pattern=OpPattern.BROADCAST, description="Elementwise difference, NumPy broadcasting.",
    te_compute=binary_compute(lambda a, b: a - b, "subtract"))
multiply = define_op(
    "multiply", inputs=("lhs", "rhs"), type_rel=broadcast_rel, compute=_multiply,
    pattern=OpPattern.BROADCAST, description="Elementwise product, NumPy broadcasting.",
    te_compute=binary_compute(_multiply_te, "multiply"))
divide = define_op(
    "divide", inputs=("lhs", "rhs"), type_rel=arithmetic_broadcast_rel, compute=_divide,
    pattern=OpPattern.BROADCAST,
    description="Elementwise quotient: true division for floats, truncating toward zero "
                "for integers (C semantics; division by zero gives 0).",
    te_compute=binary_compute(_divide_te, "divide"))
# Integer powers (wrapping repeated products) have no TE compute: they use the kernel.
power = define_op(
    "power", inputs=("lhs", "rhs"), type_rel=arithmetic_broadcast_rel, compute=_power,
    pattern=OpPattern.BROADCAST, description="Elementwise lhs ** rhs, NumPy broadcasting.",
    te_compute=binary_compute(te.pow, "power", ANY_FLOAT_DTYPES))
maximum = define_op(
    "maximum", inputs=("lhs", "rhs"), type_rel=broadcast_rel, compute=_maximum,
    pattern=OpPattern.BROADCAST, description="Elementwise maximum (NaN propagates).",
    te_compute=binary_compute(np_maximum, "maximum"))
minimum = define_op(
    "minimum", inputs=("lhs", "rhs"), type_rel=broadcast_rel, compute=_minimum,
    pattern=OpPattern.BROADCAST, description="Elementwise minimum (NaN propagates).",
    te_compute=binary_compute(np_minimum, "minimum"))


# -- comparisons --------------------------------------------------------------------------------
def _compare_op(name: str, ufunc: np.ufunc, text: str,
                te_fn: Callable[[PrimExpr, PrimExpr], PrimExpr]) -> Op:
    def compute(_attrs: object, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.asarray(ufunc(a, b), dtype=bool)

    return define_op(name, inputs=("lhs", "rhs"), type_rel=compare_rel, compute=compute,
                     pattern=OpPattern.BROADCAST,
                     description=f"Elementwise lhs {text} rhs as bool, NumPy broadcasting.",
                     te_compute=binary_compute(te_fn, name))


def _ordered(x: PrimExpr) -> PrimExpr:
    """``x`` as a dtype TIR orders (bools as 0 and 1)."""
    return te.cast(x, "uint8") if x.dtype == "bool" else x


equal = _compare_op("equal", np.equal, "==", lambda a, b: a.equal(b))
not_equal = _compare_op("not_equal", np.not_equal, "!=", lambda a, b: a.not_equal(b))
less = _compare_op("less", np.less, "<", lambda a, b: _ordered(a) < _ordered(b))
less_equal = _compare_op("less_equal", np.less_equal, "<=",
                         lambda a, b: _ordered(a) <= _ordered(b))
greater = _compare_op("greater", np.greater, ">", lambda a, b: _ordered(a) > _ordered(b))
greater_equal = _compare_op("greater_equal", np.greater_equal, ">=",
                            lambda a, b: _ordered(a) >= _ordered(b))


# -- unary elementwise operators ----------------------------------------------------------------
def float_rel(args: ArgTypes, _attrs: object) -> Type:
    """One floating-point tensor (bfloat16 included); the result has its type."""
    return args.tensor(0, dtypes=ANY_FLOAT_DTYPES)


def numeric_rel(args: ArgTypes, _attrs: object) -> Type:
    """One numeric (not bool) tensor, bfloat16 included; the result has its type."""
    return args.tensor(0, dtypes=ARITHMETIC_DTYPES)


def unary_op(name: str, kernel: Callable[[np.ndarray], np.ndarray], type_rel: TypeRelation,
             description: str, te_fn: Callable[[PrimExpr], PrimExpr] | None = None) -> Op:
    """Declare elementwise operator ``name`` whose kernel maps an array to one of its dtype
    (floating-point exceptions silenced; float16 and bfloat16 are computed in float32 and
    rounded once). ``te_fn``, when given, is the same map of one element (a float32
    expression for float16 and bfloat16 elements, which the TE compute widens and rounds)."""
    def compute(_attrs: object, x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            return np.asarray(kernel(x.astype(acc_float(x.dtype), copy=False))).astype(x.dtype)

    te_compute = None if te_fn is None else unary_compute(te_fn, name)
    return define_op(name, inputs=("data",), type_rel=type_rel, compute=compute,
                     pattern=OpPattern.ELEMWISE, description=description,
                     te_compute=te_compute)


def _negative_te(x: PrimExpr) -> PrimExpr:
    # Floats: a multiplication by -1 negates zeros too (0 - 0.0 would give 0.0, not -0.0).
    return x * -1 if is_float_dtype(x.dtype) else 0 - x


def _abs_te(x: PrimExpr) -> PrimExpr:
    if is_float_dtype(x.dtype):
        return te.fabs(x)
    return te.if_then_else(x < 0, 0 - x, x) if is_signed(x.dtype) else x


sqrt = unary_op("sqrt", np.sqrt, float_rel, "Elementwise square root.", te.sqrt)
rsqrt = unary_op("rsqrt", numpy_math.rsqrt, float_rel, "Elementwise 1 / sqrt(x).",
                 lambda x: 1 / te.sqrt(x))
exp = unary_op("exp", np.exp, float_rel, "Elementwise e ** x.", te.exp)
erf = unary_op("erf", numpy_math.erf_float64, float_rel, "Elementwise Gauss error function.",
               te.erf)
negative = unary_op("negative", np.negative, numeric_rel,
                    "Elementwise -x (integers wrap around).", _negative_te)
sigmoid = unary_op("sigmoid", numpy_math.sigmoid, float_rel, "Elementwise 1 / (1 + exp(-x)).",
                   te.sigmoid)
tanh = unary_op("tanh", np.tanh, float_rel, "Elementwise hyperbolic tangent.", te.tanh)
abs = unary_op("abs", np.abs, numeric_rel,
               "Elementwise absolute value (the most negative integer stays itself).",
               _abs_te)
log = unary_op("log", np.log, float_rel, "Elementwise natural logarithm.", te.log)


# -- clip ---------------------------------------------------------------------------------------
@attrs_class
class ClipAttrs(Attrs):
    """Attributes of ``clip``: the closed interval [a_min, a_max]."""

    a_min: float = float_field()
    a_max: float = float_field()

    def __attrs_post_init__(self) -> None:
        if not self.a_min <= self.a_max:
            raise AttrError(f"attribute 'a_max': expected a number >= a_min = {self.a_min}, "
                            f"found {self.a_max!r}")


def _int_bounds(attrs_value: ClipAttrs, dtype: np.dtype) -> tuple[int, int]:
    """The integers within [a_min, a_max], limited to ``dtype``'s range."""
    lo, hi = attrs_value.a_min, attrs_value.a_max
    info = np.iinfo(dtype)
    ilo = int(info.min) if math.isinf(lo) else max(math.ceil(lo), int(info.min))
    ihi = int(info.max) if math.isinf(hi) else min(math.floor(hi), int(info.max))
    return min(ilo, int(info.max)), max(ihi, int(info.min))


def _clip(attrs_value: ClipAttrs, x: np.ndarray) -> np.ndarray:
    lo, hi = attrs_value.a_min, attrs_value.a_max
    if is_float_dtype(x.dtype.name):
        with np.errstate(all="ignore"):
            lo_a, hi_a = np.asarray(lo, dtype=x.dtype), np.asarray(hi, dtype=x.dtype)
        acc = acc_float(x.dtype)
        return np.asarray(np.clip(x.astype(acc), lo_a.astype(acc), hi_a.astype(acc))).astype(
            x.dtype)
    ilo, ihi = _int_bounds(attrs_value, x.dtype)
    return np.asarray(np.clip(x, np.asarray(ilo, x.dtype), np.asarray(ihi, x.dtype)),
                      dtype=x.dtype)


def _clip_te(attrs_value: ClipAttrs, inputs: Sequence[te.Tensor],
             out: TensorType) -> te.Tensor:
    (x,) = inputs
    if is_float_dtype(x.dtype):
        lo, hi = float_const(attrs_value.a_min, x.dtype), float_const(attrs_value.a_max, x.dtype)

        def clip_float(v: PrimExpr) -> PrimExpr:
            # NaN fails both comparisons and stays NaN, as in np.clip.
            return te.if_then_else(v < lo, lo, te.if_then_else(v > hi, hi, v))

        return unary_compute(clip_float, "clip")(attrs_value, inputs, out)
    ilo, ihi = _int_bounds(attrs_value, np.dtype(x.dtype))
    return te.elementwise(lambda v: Min(Max(v, ilo), ihi), x, "clip")


clip = define_op(
    "clip", inputs=("data",), type_rel=numeric_rel, compute=_clip, attrs=ClipAttrs,
    pattern=OpPattern.ELEMWISE,
    description="Limit values to [a_min, a_max] (for integers: to the integers in it).",
    te_compute=_clip_te)


# -- cast ---------------------------------------------------------------------------------------
@attrs_class
class CastAttrs(Attrs):
    """Attributes of ``cast``: the target dtype."""

    dtype: str = dtype_field(allow_empty=False)


def _cast_rel(args: ArgTypes, attrs_value: CastAttrs) -> Type:
    return TensorType(args.tensor(0).shape, attrs_value.dtype)


def _cast(attrs_value: CastAttrs, x: np.ndarray) -> np.ndarray:
    with np.errstate(all="ignore"):
        return x.astype(attrs_value.dtype)


def _cast_te(attrs_value: CastAttrs, inputs: Sequence[te.Tensor],
             _out: TensorType) -> te.Tensor:
    return te.elementwise(lambda v: te.cast(v, attrs_value.dtype), inputs[0], "cast")


cast = define_op(
    "cast", inputs=("data",), type_rel=_cast_rel, compute=_cast, attrs=CastAttrs,
    pattern=OpPattern.ELEMWISE,
    description="Convert to another dtype as NumPy astype (floats to ints truncate toward "
                "zero).",
    te_compute=_cast_te)


# -- where --------------------------------------------------------------------------------------
def _where_rel(args: ArgTypes, _attrs: object) -> Type:
    args.tensor(0, dtypes=("bool",))
    dtype = args.same_dtype(1, 2)
    xy = broadcast_shape(args, 1, 2)
    cond = args.tensor(0).shape
    out = []
    for k in range(1, max(len(cond), len(xy)) + 1):
        dc = cond[-k] if k <= len(cond) else 1
        dx = xy[-k] if k <= len(xy) else 1
        if dc != dx and 1 not in (dc, dx):
            args.fail(0, f"a shape broadcastable with {TensorType(xy, dtype)} (x and y "
                         f"broadcast together)", args.tensor(0))
        out.append(dc if dx == 1 else dx)
    return TensorType(tuple(reversed(out)), dtype)


def _where(_attrs: object, cond: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    return np.asarray(np.where(cond, x, y), dtype=x.dtype)


def _where_te(_attrs: object, inputs: Sequence[te.Tensor], out: TensorType) -> te.Tensor:
    return te.broadcast(te.if_then_else, *inputs, shape=out.shape, name="where")


where = define_op(
    "where", inputs=("condition", "x", "y"), type_rel=_where_rel, compute=_where,
    pattern=OpPattern.BROADCAST,
    description="x where condition holds, else y; all three broadcast together.",
    te_compute=_where_te)


# -- matmul -------------------------------------------------------------------------------------
@attrs_class
class MatmulAttrs(Attrs):
    """Attributes of ``matmul``: the output dtype ("" = the input dtype)."""

    out_dtype: str = dtype_field("")


def _matmul_rel(args: ArgTypes, attrs_value: MatmulAttrs) -> Type:
    a = args.tensor(0, dtypes=ARITHMETIC_DTYPES)
    b = args.tensor(1, dtypes=ARITHMETIC_DTYPES)
    if a.ndim < 2:
        args.fail(0, "a tensor of rank >= 2", a)
    if b.ndim < 2:
        args.fail(1, "a tensor of rank >= 2", b)
    dtype = args.same_dtype(0, 1)
    m, k = a.shape[-2:]
    k2, n = b.shape[-2:]
    if k != k2:
        args.fail(1, f"a tensor with {k} rows (the columns of argument 'a', {a})", b)
    ba, bb = a.shape[:-2], b.shape[:-2]
    batch = []
    for i in range(1, max(len(ba), len(bb)) + 1):
        da = ba[-i] if i <= len(ba) else 1
        db = bb[-i] if i <= len(bb) else 1
        if da != db and 1 not in (da, db):
            args.fail(1, f"batch dimensions broadcastable with those of argument 'a', {a}", b)
        batch.append(db if da == 1 else da)
    out_dtype = attrs_value.out_dtype or dtype
    if out_dtype == "bool":
        args.fail_attr("out_dtype", "a numeric dtype", out_dtype)
    return TensorType((*reversed(batch), m, n), out_dtype)


def _matmul(attrs_value: MatmulAttrs, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    out_dtype = attrs_value.out_dtype or a.dtype.name
    with np.errstate(all="ignore"):
        return matmul_in_dtype(out_dtype, a, b, a.shape[-1], np.matmul)


matmul = define_op(
    "matmul", inputs=("a", "b"), type_rel=_matmul_rel, compute=_matmul, attrs=MatmulAttrs,
    pattern=OpPattern.OUT_ELEMWISE_FUSABLE,
    description="Matrix product of the last two axes with broadcast batch axes (NumPy and "
                "ONNX MatMul, rank >= 2), summed exactly (integers, wrapping to out_dtype) or "
                "in float32 at least.")
