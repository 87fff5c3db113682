"""Einsum equations decomposed into graph operators: diagonals (reshape + strided slice),
sums, transposes, reshapes, broadcast multiplies and matrix products.

Operands are combined left to right; at each step the letters the two share and nothing
later needs are contracted with one (batched) ``matmul``, the letters both keep become batch
axes, and a pair that shares nothing to contract is multiplied with broadcasting.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from attrs import define

from passhost import relay
from passhost.relay.expr import Expr

__all__ = ["EinsumError", "einsum"]

#: Stand-in letters for the axes an ellipsis covers (counted from the right, so operands
#: with ellipses of different ranks line up as in NumPy broadcasting).
_ELLIPSIS_BASE = 0x100


class EinsumError(ValueError):
    """An einsum equation is malformed or does not fit its operands (the converter turns it
    into an import error naming the node)."""


@define
class _Term:
    """An operand while it is being reduced: its expression, axis letters and shape."""

    expr: Expr
    letters: str
    shape: tuple[int, ...]

    def size(self, letter: str) -> int:
        return self.shape[self.letters.index(letter)]


def _parse_term(term: str, ndim: int, ellipsis_rank: int) -> str:
    """``term`` with its ellipsis replaced by stand-in letters (checked against ``ndim``)."""
    if term.count("...") > 1 or not re.fullmatch(r"[A-Za-z]*(\.\.\.)?[A-Za-z]*", term):
        raise EinsumError(f"term {term!r}: expected letters and at most one '...'")
    if "..." not in term:
        if len(term) != ndim:
            raise EinsumError(f"term {term!r} names {len(term)} axes, but its operand has "
                              f"rank {ndim}")
        return term
    covered = ndim - (len(term) - 3)
    if covered < 0:
        raise EinsumError(f"term {term!r} names {len(term) - 3} axes, but its operand has "
                          f"rank {ndim}")
    stand_in = "".join(chr(_ELLIPSIS_BASE + p) for p in range(ellipsis_rank - covered,
                                                               ellipsis_rank))
    return term.replace("...", stand_in)


def _parse(equation: str, shapes: Sequence[tuple[int, ...]]) -> tuple[list[str], str]:
    """The letters of every operand and of the output."""
    eq = equation.replace(" ", "")
    lhs, arrow, rhs = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(shapes):
        raise EinsumError(f"{len(terms)} input terms for {len(shapes)} operands")
    ranks = [len(s) - (len(t) - 3) for t, s in zip(terms, shapes) if "..." in t]
    ellipsis_rank = max(ranks, default=0)
    inputs = [_parse_term(t, len(s), ellipsis_rank) for t, s in zip(terms, shapes)]
    stand_ins = "".join(chr(_ELLIPSIS_BASE + p) for p in range(ellipsis_rank))
    if arrow:
        if not re.fullmatch(r"[A-Za-z]*(\.\.\.)?[A-Za-z]*", rhs):
            raise EinsumError(f"output term {rhs!r}: expected letters and at most one '...'")
        if ellipsis_rank and "..." not in rhs:
            raise EinsumError(f"output term {rhs!r} has no '...' for the {ellipsis_rank} "
                              f"axes the inputs' ellipses cover")
        output = rhs.replace("...", stand_ins)
    else:
        counts = {c: "".join(inputs).count(c) for c in "".join(inputs)}
        output = stand_ins + "".join(sorted(c for c, n in counts.items()
                                            if n == 1 and c not in stand_ins))
    if len(set(output)) != len(output):
        raise EinsumError(f"output term {rhs!r} repeats a letter")
    missing = set(output) - set("".join(inputs))
    if missing:
        raise EinsumError(f"output letters {sorted(missing)} appear in no input term")
    return inputs, output


def _transpose(term: _Term, letters: str) -> _Term:
    if letters == term.letters:
        return term
    perm = tuple(term.letters.index(c) for c in letters)
    return _Term(relay.transpose(term.expr, axes=perm), letters,
                 tuple(term.shape[p] for p in perm))


def _reshape(expr: Expr, old: tuple[int, ...], new: tuple[int, ...]) -> Expr:
    return expr if tuple(old) == tuple(new) else relay.reshape(expr, newshape=new)


def _sum(term: _Term, letters: set[str], keepdims: bool = False) -> _Term:
    """Sum ``term`` over the axes named by ``letters``."""
    axes = tuple(i for i, c in enumerate(term.letters) if c in letters)
    if not axes:
        return term
    expr = relay.sum(term.expr, axis=axes, keepdims=keepdims)
    if keepdims:
        shape = tuple(1 if i in axes else d for i, d in enumerate(term.shape))
        return _Term(expr, term.letters, shape)
    kept = [i for i in range(len(term.letters)) if i not in axes]
    return _Term(expr, "".join(term.letters[i] for i in kept),
                 tuple(term.shape[i] for i in kept))


def _diagonals(term: _Term) -> _Term:
    """Take the diagonal over every letter the term repeats (``ii`` -> ``i``)."""
    for c in dict.fromkeys(term.letters):
        k = term.letters.count(c)
        if k == 1:
            continue
        sizes = {term.shape[i] for i, x in enumerate(term.letters) if x == c}
        if len(sizes) != 1:
            raise EinsumError(f"letter {c!r} repeats over axes of different lengths "
                              f"{sorted(sizes)}")
        n = sizes.pop()
        kept = [i for i, x in enumerate(term.letters) if x != c]
        perm = (*kept, *(i for i, x in enumerate(term.letters) if x == c))
        rest = "".join(term.letters[i] for i in kept)
        lead = tuple(term.shape[i] for i in kept)
        moved = relay.transpose(term.expr, axes=perm) if perm != tuple(range(len(perm))) \
            else term.expr
        flat = relay.reshape(moved, newshape=(*lead, n ** k))
        stride = sum(n ** j for j in range(k))
        diag = relay.strided_slice(flat, begin=(0,), end=(n ** k,), strides=(stride,),
                                   axes=(len(rest),))
        term = _Term(diag, rest + c, (*lead, n))
    return term


def _sizes_agree(a: _Term, b: _Term, letter: str) -> None:
    sa, sb = a.size(letter), b.size(letter)
    if sa != sb and 1 not in (sa, sb):
        raise EinsumError(f"letter {letter!r} has lengths {sa} and {sb}")


def _contract(a: _Term, b: _Term, keep: set[str]) -> _Term:
    """Combine two reduced terms; letters outside ``keep`` that both share are summed."""
    shared = [c for c in a.letters if c in b.letters]
    for c in shared:
        _sizes_agree(a, b, c)
    batch = "".join(c for c in shared if c in keep)
    inner = "".join(c for c in shared if c not in keep)
    # A contracted letter of length 1 on one side only: sum the other side first.
    a = _sum(a, {c for c in inner if a.size(c) != b.size(c) and b.size(c) == 1}, True)
    b = _sum(b, {c for c in inner if a.size(c) != b.size(c) and a.size(c) == 1}, True)
    left = "".join(c for c in a.letters if c not in b.letters)
    right = "".join(c for c in b.letters if c not in a.letters)
    a = _transpose(a, batch + left + inner)
    b = _transpose(b, batch + inner + right)
    nb = len(batch)
    out_batch = tuple(max(a.shape[i], b.shape[i]) for i in range(nb))
    left_shape = a.shape[nb:nb + len(left)]
    right_shape = b.shape[nb + len(inner):]
    if not inner:
        ea = _reshape(a.expr, a.shape, (*a.shape, *(1,) * len(right)))
        eb = _reshape(b.expr, b.shape, (*b.shape[:nb], *(1,) * len(left), *right_shape))
        return _Term(relay.multiply(ea, eb), batch + left + right,
                     (*out_batch, *left_shape, *right_shape))
    k = math.prod(a.shape[nb + len(left):])
    ea = _reshape(a.expr, a.shape, (*a.shape[:nb], math.prod(left_shape), k))
    eb = _reshape(b.expr, b.shape, (*b.shape[:nb], k, math.prod(right_shape)))
    product = relay.matmul(ea, eb)
    shape = (*out_batch, *left_shape, *right_shape)
    flat = (*out_batch, math.prod(left_shape), math.prod(right_shape))
    return _Term(_reshape(product, flat, shape), batch + left + right, shape)


def einsum(equation: str, operands: Sequence[Expr],
           shapes: Sequence[tuple[int, ...]]) -> Expr:
    """The graph computing ``numpy.einsum(equation, *operands)`` for operands of the given
    static shapes; raises :class:`EinsumError` for a malformed equation."""
    if not operands:
        raise EinsumError("expected at least one operand")
    inputs, output = _parse(equation, shapes)
    terms = [_diagonals(_Term(e, t, tuple(s))) for e, t, s in zip(operands, inputs, shapes)]
    current = terms[0]
    for j in range(1, len(terms)):
        later = set(output).union(*(t.letters for t in terms[j + 1:]))
        current = _sum(current, set(current.letters) - later - set(terms[j].letters))
        other = _sum(terms[j], set(terms[j].letters) - later - set(current.letters))
        current = _contract(current, other, later)
    current = _sum(current, set(current.letters) - set(output))
    return _transpose(current, output).expr
