"""Helpers of the operator tests: variables, inferred types, evaluation through the
interpreter, and small random inputs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import settings

from passhost import relay
from passhost.errors import IRTypeError

#: Hypothesis settings of the operator properties.
FAST = settings(max_examples=40, deadline=None)


def tvar(name: str, shape: tuple[int, ...], dtype: str = "float32") -> relay.Var:
    """A tensor variable."""
    return relay.var(name, shape=shape, dtype=dtype)


def type_of(builder, *types: tuple[tuple[int, ...], str] | list, **attrs):
    """The inferred type of ``builder`` applied to variables of the given (shape, dtype)s
    (a list of them makes a tuple argument)."""
    args = []
    for i, t in enumerate(types):
        if isinstance(t, list):
            args.append([tvar(f"v{i}_{j}", s, d) for j, (s, d) in enumerate(t)])
        else:
            args.append(tvar(f"v{i}", t[0], t[1]))
    return builder(*args, **attrs).checked_type


def run(builder, *arrays, **attrs):
    """Evaluate ``builder`` on the arrays through the interpreter (which checks the kernel's
    result against the inferred type); a list of arrays is passed as a tuple argument."""
    params, args, values = [], [], []
    for i, a in enumerate(arrays):
        if isinstance(a, list):
            vs = [tvar(f"p{i}_{j}", x.shape, x.dtype.name) for j, x in enumerate(a)]
            params += vs
            values += a
            args.append(vs)
        else:
            v = tvar(f"p{i}", a.shape, a.dtype.name)
            params.append(v)
            values.append(a)
            args.append(v)
    func = relay.Function(params, builder(*args, **attrs))
    return relay.evaluate(func, *values)


def type_error(builder, *types, **attrs) -> IRTypeError:
    """The IRTypeError raised by inferring the type of ``builder`` on the types."""
    with pytest.raises(IRTypeError) as info:
        type_of(builder, *types, **attrs)
    return info.value


RNG = np.random.default_rng(1234)


def floats(shape, lo=-2.0, hi=2.0, dtype="float32") -> np.ndarray:
    """Random floats in [lo, hi)."""
    return RNG.uniform(lo, hi, size=shape).astype(dtype)


def ints(shape, lo=-5, hi=5, dtype="int32") -> np.ndarray:
    """Random ints in [lo, hi]."""
    return RNG.integers(lo, hi + 1, size=shape).astype(dtype)
