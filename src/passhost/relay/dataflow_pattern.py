"""A pattern language over graph expressions, as TVM's ``relay.dataflow_pattern``.

Patterns are small trees built with :func:`wildcard`, :func:`is_op`, :func:`is_constant`,
:func:`is_var`, :func:`is_tuple` and :func:`is_tuple_get_item`, refined with
``.has_attr``/``.has_dtype``/``.has_shape``, combined with ``|`` and ``.optional``::

    conv = is_op("nn.conv2d")(wildcard(), is_constant())
    pattern = is_op("nn.bias_add")(conv, is_constant()).optional(lambda x: is_op("nn.relu")(x))
    pattern.match(expr)             # -> bool
    match_bindings(pattern, expr)   # -> {pattern node: matched expression} or None

A pattern node used twice must match the same expression both times (``x = wildcard();
is_op("add")(x, x)`` matches ``add(a, a)`` only). Matching recurses over the pattern, which is
small; the graph is explored only as deep as the pattern reaches.

Named pattern tables (lists of ``(name, pattern[, check])`` entries, which target kinds name
for MergeComposite) are registered with the plugin host, as every named extension is
(``passhost_register_pattern_tables``), and read with :func:`get_pattern_table`; the
built-in table ``example`` (conv2d + bias_add [+ relu], dense + add) serves the
documentation and experiments.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from attrs import field, frozen

from passhost.errors import OptionError
from passhost.ir.expr import BaseExpr
from passhost.ir.node import FrozenDict, frozen_dict
from passhost.ir.types import TensorType, check_dtype
from passhost.plugins.manager import get_host
from passhost.relay.expr import Call, Constant, Function, Tuple, TupleGetItem, Var
from passhost.relay.op.registry import Op, get_op

__all__ = [
    "AltPattern", "AttrPattern", "CallPattern", "ConstantPattern", "DataTypePattern",
    "OperatorPattern", "Pattern", "PatternEntry", "ShapePattern", "TupleGetItemPattern",
    "TuplePattern", "VarPattern", "WildcardPattern", "get_pattern_table", "is_constant",
    "is_op", "is_tuple", "is_tuple_get_item", "is_var", "match_bindings",
    "node_key", "normalize_pattern_table", "example_pattern_table", "wildcard",
]

RootKeys = frozenset | None
"""Keys of the expressions a pattern can match at its root (None: any expression)."""


class Pattern:
    """Base class of patterns: build with the module's functions, then match expressions."""

    __slots__ = ()

    def __call__(self, *args: Pattern) -> CallPattern:
        """A call pattern whose callee matches this pattern and whose arguments match
        ``args``, in order."""
        for i, arg in enumerate(args):
            if not isinstance(arg, Pattern):
                raise TypeError(f"argument {i} of a call pattern must be a Pattern, "
                                f"found {type(arg).__name__} {arg!r}")
        return CallPattern(self, args)

    def __or__(self, other: Pattern) -> AltPattern:
        """A pattern matching this pattern, or else ``other``."""
        if not isinstance(other, Pattern):
            return NotImplemented
        return AltPattern(self, other)

    def optional(self, option: Callable[[Pattern], Pattern]) -> AltPattern:
        """Match ``option(self)`` (tried first) or ``self`` alone: ``p.optional(lambda x:
        is_op("nn.relu")(x))`` matches ``relu(p)`` or ``p``."""
        return AltPattern(option(self), self)

    def has_attr(self, attrs: Mapping[str, Any]) -> AttrPattern:
        """Also require these attribute values (operator attributes of a call, or the
        attributes of a function)."""
        return AttrPattern(self, attrs)

    def has_dtype(self, dtype: str) -> DataTypePattern:
        """Also require a tensor of this dtype."""
        return DataTypePattern(self, dtype)

    def has_shape(self, shape: Iterable[int]) -> ShapePattern:
        """Also require a tensor of this shape."""
        return ShapePattern(self, shape)

    def match(self, expr: BaseExpr) -> bool:
        """True when ``expr`` matches this pattern."""
        return match_bindings(self, expr) is not None

    def __repr__(self) -> str:
        return self.describe()

    def describe(self) -> str:
        """The pattern as the Python expression that builds it."""
        raise NotImplementedError

    def root_keys(self) -> RootKeys:
        """The keys (see :func:`node_key`) of expressions this pattern can match, or None
        when it may match any expression."""
        return None

    def callee_keys(self) -> RootKeys:
        """Used as the callee of a call pattern: the names of the operators whose calls it
        can match, or None when it may match other callees too."""
        return None

    def _match(self, matcher: _Matcher, expr: BaseExpr) -> bool:
        raise NotImplementedError


def node_key(expr: BaseExpr) -> object:
    """The key indexing ``expr`` for :meth:`Pattern.root_keys`: the operator name of an
    operator call, else the node's class."""
    if isinstance(expr, Call) and isinstance(expr.op, Op):
        return expr.op.name
    return type(expr)


# -- leaf patterns ------------------------------------------------------------------------------
@frozen(eq=False, repr=False)
class WildcardPattern(Pattern):
    """Matches any expression."""

    def describe(self) -> str:
        """``wildcard()``."""
        return "wildcard()"

    def _match(self, matcher: _Matcher, expr: BaseExpr) -> bool:
        return True


@frozen(eq=False, repr=False)
class ConstantPattern(Pattern):
    """Matches any constant."""

    def describe(self) -> str:
        """``is_constant()``."""
        return "is_constant()"

    def root_keys(self) -> RootKeys:
        """Constants only."""
        return frozenset((Constant,))

    def _match(self, matcher: _Matcher, expr: BaseExpr) -> bool:
        return isinstance(expr, Constant)


@frozen(eq=False, repr=False)
class VarPattern(Pattern):
    """Matches a variable, named ``name`` if given."""

    name: str | None = None

    def describe(self) -> str:
        """``is_var(...)``."""
        return "is_var()" if self.name is None else f"is_var({self.name!r})"

    def root_keys(self) -> RootKeys:
        """Variables only."""
        return frozenset((Var,))

    def _match(self, matcher: _Matcher, expr: BaseExpr) -> bool:
        return isinstance(expr, Var) and self.name in (None, expr.name_hint)


@frozen(eq=False, repr=False)
class OperatorPattern(Pattern):
    """Matches one operator (the callee of a call); call it to match calls of it."""

    op: Op

    def describe(self) -> str:
        """``is_op(...)``."""
        return f"is_op({self.op.name!r})"

    def root_keys(self) -> RootKeys:
        """The operator itself."""
        return frozenset((Op,))

    def callee_keys(self) -> RootKeys:
        """This operator's name."""
        return frozenset((self.op.name,))

    def _match(self, matcher: _Matcher, expr: BaseExpr) -> bool:
        return expr is self.op


# -- structural patterns ------------------------------------------------------------------------
def _pattern_tuple(values: Iterable[object]) -> tuple[Pattern, ...]:
    out = tuple(values)
    for i, v in enumerate(out):
        if not isinstance(v, Pattern):
            raise TypeError(f"field {i} of a pattern must be a Pattern, found {v!r}")
    return out


def _check_pattern(_inst: object, attribute: Any, value: object) -> None:
    if not isinstance(value, Pattern):
        raise TypeError(f"{attribute.name} must be a Pattern, found {value!r}")


@frozen(eq=False, repr=False)
class CallPattern(Pattern):
    """Matches a call whose callee and arguments match, position by position."""

    op: Pattern = field(validator=_check_pattern)
    args: tuple[Pattern, ...] = field(converter=_pattern_tuple)

    def describe(self) -> str:
        """``callee(arg, ...)``."""
        return f"{self.op.describe()}({', '.join(a.describe() for a in self.args)})"

    def root_keys(self) -> RootKeys:
        """The names of the operators the callee pattern can match, else None."""
        return self.op.callee_keys()

    def _match(self, matcher: _Matcher, expr: BaseExpr) -> bool:
        if not isinstance(expr, Call) or len(expr.args) != len(self.args):
            return False
        if not matcher.match(self.op, expr.op):
            return False
        return all(matcher.match(p, a) for p, a in zip(self.args, expr.args))


@frozen(eq=False, repr=False)
class TuplePattern(Pattern):
    """Matches a tuple of as many fields, each matching."""

    fields: tuple[Pattern, ...] = field(converter=_pattern_tuple)

    def describe(self) -> str:
        """``is_tuple([...])``."""
        return f"is_tuple([{', '.join(f.describe() for f in self.fields)}])"

    def root_keys(self) -> RootKeys:
        """Tuples only."""
        return frozenset((Tuple,))

    def _match(self, matcher: _Matcher, expr: BaseExpr) -> bool:
        if not isinstance(expr, Tuple) or len(expr.fields) != len(self.fields):
            return False
        return all(matcher.match(p, f) for p, f in zip(self.fields, expr.fields))


def _optional_index(value: object) -> int | None:
    if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
        raise TypeError(f"a tuple index must be an int or None, found {value!r}")
    return value  # type: ignore[return-value]


@frozen(eq=False, repr=False)
class TupleGetItemPattern(Pattern):
    """Matches field ``index`` (any field when None) of a tuple-valued expression."""

    tuple_value: Pattern = field(validator=_check_pattern)
    index: int | None = field(default=None, converter=_optional_index)

    def describe(self) -> str:
        """``is_tuple_get_item(...)``."""
        index = "" if self.index is None else f", {self.index}"
        return f"is_tuple_get_item({self.tuple_value.describe()}{index})"

    def root_keys(self) -> RootKeys:
        """Tuple projections only."""
        return frozenset((TupleGetItem,))

    def _match(self, matcher: _Matcher, expr: BaseExpr) -> bool:
        if not isinstance(expr, TupleGetItem) or self.index not in (None, expr.index):
            return False
        return matcher.match(self.tuple_value, expr.tuple_value)


@frozen(eq=False, repr=False)
class AltPattern(Pattern):
    """Matches ``left``, or else ``right``."""

    left: Pattern = field(validator=_check_pattern)
    right: Pattern = field(validator=_check_pattern)

    def describe(self) -> str:
        """``(left | right)``."""
        return f"({self.left.describe()} | {self.right.describe()})"

    def root_keys(self) -> RootKeys:
        """What either side can match."""
        return _union(self.left.root_keys(), self.right.root_keys())

    def callee_keys(self) -> RootKeys:
        """What either side can match as a callee."""
        return _union(self.left.callee_keys(), self.right.callee_keys())

    def _match(self, matcher: _Matcher, expr: BaseExpr) -> bool:
        mark = matcher.mark()
        if matcher.match(self.left, expr):
            return True
        matcher.undo(mark)
        return matcher.match(self.right, expr)


def _union(left: RootKeys, right: RootKeys) -> RootKeys:
    return None if left is None or right is None else left | right


# -- refinements --------------------------------------------------------------------------------
def _normalise(value: Any) -> Any:
    """Lists become tuples (recursively) so attribute values compare as stored."""
    if isinstance(value, (list, tuple)):
        return tuple(_normalise(v) for v in value)
    return value


def _expr_attrs(expr: BaseExpr) -> Mapping[str, Any] | None:
    if isinstance(expr, Call):
        return expr.attrs.fields_dict() if expr.attrs is not None else {}
    if isinstance(expr, Function):
        return expr.attrs
    return None


def _tensor_type(expr: BaseExpr) -> TensorType | None:
    if isinstance(expr, (Op, Function)):
        return None
    ty = expr.checked_type
    return ty if isinstance(ty, TensorType) else None


_MISSING = object()


@frozen(eq=False, repr=False)
class _Refinement(Pattern):
    """Base of patterns adding a condition to ``pattern`` (same roots and callees)."""

    pattern: Pattern = field(validator=_check_pattern)

    def root_keys(self) -> RootKeys:
        """Those of the refined pattern."""
        return self.pattern.root_keys()

    def callee_keys(self) -> RootKeys:
        """Those of the refined pattern."""
        return self.pattern.callee_keys()


def _normalised_attrs(value: Mapping[str, Any]) -> FrozenDict:
    return frozen_dict({k: _normalise(v) for k, v in dict(value).items()})


@frozen(eq=False, repr=False)
class AttrPattern(_Refinement):
    """Matches what ``pattern`` matches when it also has these attribute values."""

    attrs: FrozenDict = field(converter=_normalised_attrs)

    def describe(self) -> str:
        """``pattern.has_attr({...})``."""
        return f"{self.pattern.describe()}.has_attr({dict(self.attrs)!r})"

    def _match(self, matcher: _Matcher, expr: BaseExpr) -> bool:
        actual = _expr_attrs(expr)
        if actual is None:
            return False
        for key, want in self.attrs.items():
            if _normalise(actual.get(key, _MISSING)) != want:
                return False
        return matcher.match(self.pattern, expr)


@frozen(eq=False, repr=False)
class DataTypePattern(_Refinement):
    """Matches what ``pattern`` matches when it is a tensor of ``dtype``."""

    dtype: str = field(converter=check_dtype)

    def describe(self) -> str:
        """``pattern.has_dtype(...)``."""
        return f"{self.pattern.describe()}.has_dtype({self.dtype!r})"

    def _match(self, matcher: _Matcher, expr: BaseExpr) -> bool:
        ty = _tensor_type(expr)
        return ty is not None and ty.dtype == self.dtype and matcher.match(self.pattern, expr)


@frozen(eq=False, repr=False)
class ShapePattern(_Refinement):
    """Matches what ``pattern`` matches when it is a tensor of ``shape``."""

    shape: tuple[int, ...] = field(converter=lambda s: tuple(int(d) for d in s))

    def describe(self) -> str:
        """``pattern.has_shape(...)``."""
        return f"{self.pattern.describe()}.has_shape({self.shape!r})"

    def _match(self, matcher: _Matcher, expr: BaseExpr) -> bool:
        ty = _tensor_type(expr)
        return ty is not None and ty.shape == self.shape and matcher.match(self.pattern, expr)


# -- builders -----------------------------------------------------------------------------------
def wildcard() -> WildcardPattern:
    """A pattern matching any expression."""
    return WildcardPattern()


def is_op(name: str) -> OperatorPattern:
    """A pattern matching operator ``name``; call it with argument patterns to match calls.
    An unknown name raises :class:`~passhost.errors.UnknownNameError` with close matches."""
    if not isinstance(name, str):
        raise TypeError(f"is_op takes an operator name, found {type(name).__name__} {name!r}")
    return OperatorPattern(get_op(name))


def is_constant() -> ConstantPattern:
    """A pattern matching any constant."""
    return ConstantPattern()


def is_var(name: str | None = None) -> VarPattern:
    """A pattern matching a variable (named ``name`` if given)."""
    return VarPattern(name)


def is_tuple(fields: Iterable[Pattern]) -> TuplePattern:
    """A pattern matching a tuple whose fields match ``fields``."""
    return TuplePattern(fields)


def is_tuple_get_item(pattern: Pattern, index: int | None = None) -> TupleGetItemPattern:
    """A pattern matching field ``index`` (any field when None) of what ``pattern`` matches."""
    return TupleGetItemPattern(pattern, index)


# -- matching -----------------------------------------------------------------------------------
class _Matcher:
    """One matching attempt: the bindings so far, with an undo trail for alternatives."""

    __slots__ = ("bindings", "trail")

    def __init__(self) -> None:
        self.bindings: dict[int, tuple[Pattern, BaseExpr]] = {}
        self.trail: list[int] = []

    def match(self, pattern: Pattern, expr: BaseExpr) -> bool:
        bound = self.bindings.get(id(pattern))
        if bound is not None:
            return bound[1] is expr
        if not pattern._match(self, expr):
            return False
        self.bindings[id(pattern)] = (pattern, expr)
        self.trail.append(id(pattern))
        return True

    def mark(self) -> int:
        return len(self.trail)

    def undo(self, mark: int) -> None:
        while len(self.trail) > mark:
            del self.bindings[self.trail.pop()]


def match_bindings(pattern: Pattern, expr: BaseExpr) -> dict[Pattern, BaseExpr] | None:
    """What each pattern node matched when ``expr`` matches ``pattern``, else None.

    Only the nodes of the alternatives that matched are bound."""
    matcher = _Matcher()
    if not matcher.match(pattern, expr):
        return None
    return {p: e for p, e in matcher.bindings.values()}


# -- pattern tables -----------------------------------------------------------------------------
Check = Callable[[BaseExpr], Any]
PatternEntry = tuple[str, Pattern, Check | None]
"""A normalised pattern-table entry: composite name, pattern, optional check of the root."""

def normalize_pattern_table(table: Sequence[tuple], where: str = "pattern table",
                            ) -> tuple[PatternEntry, ...]:
    """Check a table of ``(name, pattern)`` or ``(name, pattern, check)`` entries and
    return it with every entry as a triple (check None when absent)."""
    if isinstance(table, (str, bytes)) or not isinstance(table, Iterable):
        raise OptionError(f"{where}: expected a sequence of (name, pattern[, check]) tuples, "
                          f"found {table!r}")
    out = []
    for i, entry in enumerate(table):
        if not isinstance(entry, tuple) or len(entry) not in (2, 3):
            raise OptionError(f"{where}: entry {i} must be (name, pattern) or "
                              f"(name, pattern, check), found {entry!r}")
        name, pattern, check = (*entry, None) if len(entry) == 2 else entry
        if not isinstance(name, str) or not name:
            raise OptionError(f"{where}: entry {i} must start with a composite name, "
                              f"found {name!r}")
        if not isinstance(pattern, Pattern):
            raise OptionError(f"{where}: entry {i} ({name}) holds {pattern!r}, not a Pattern")
        if check is not None and not callable(check):
            raise OptionError(f"{where}: the check of entry {i} ({name}) is not callable: "
                              f"{check!r}")
        out.append((name, pattern, check))
    return tuple(out)


def get_pattern_table(name: str, target: Any = None) -> tuple[PatternEntry, ...]:
    """The normalised entries of the pattern table registered as ``name`` (by a plugin's
    ``passhost_register_pattern_tables``), made for ``target`` (a Target, or None outside
    a build); an unknown name raises :class:`~passhost.errors.UnknownNameError` listing
    close matches."""
    spec = get_host().registries.pattern_tables.get(name)
    return normalize_pattern_table(spec.factory(target), f"pattern table {name!r}")


def example_pattern_table(target: Any = None) -> list[tuple[str, Pattern]]:
    """A small float table for documentation and experiments (``pattern_table=example``):
    conv2d + bias_add [+ relu], dense + add; the same for every target."""
    conv = is_op("nn.conv2d")(wildcard(), is_constant())
    conv_bias = is_op("nn.bias_add")(conv, is_constant())
    dense_add = is_op("add")(is_op("nn.dense")(wildcard(), is_constant()), is_constant())
    return [("example.conv2d_bias_relu", conv_bias.optional(lambda x: is_op("nn.relu")(x))),
            ("example.dense_add", dense_add)]
