"""What registration hooks return: specs of passes, instruments, pipelines, pattern tables
and operators.

A spec is plain data naming a factory; it knows nothing of the IR. The factory is called
only when the named thing is used, with its options checked against the declared types.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from attrs import field, frozen

from passhost.errors import PluginError, UnknownNameError
from passhost.plugins.options import OptionSpec


def lazy_factory(module: str, name: str) -> Callable[..., Any]:
    """A factory calling ``module.name(*args, **options)``, importing the module on first call, so
    that registering it imports nothing. Its ``resolve()`` imports the module and returns
    ``module.name`` (``passhost plugins list --check`` calls it for every such factory); a
    module that does not import, or lacks ``name``, is a :class:`PluginError`."""

    def resolve() -> Any:
        try:
            return getattr(importlib.import_module(module), name)
        except (ImportError, AttributeError) as err:
            raise PluginError(f"{module}.{name} cannot be imported: {type(err).__name__}: "
                              f"{err}") from err

    def create(*args: Any, **options: Any) -> Any:
        return resolve()(*args, **options)

    create.__name__ = create.__qualname__ = name
    create.__doc__ = f"Create {module}.{name}."
    create.resolve = resolve  # type: ignore[attr-defined]
    return create


def lazy_object(module: str, name: str) -> Callable[[], Any]:
    """A function returning ``module.name``, importing the module on first call (a factory
    for specs that name an existing object, such as an operator); like
    :func:`lazy_factory`'s, its ``resolve`` is what ``plugins list --check`` calls."""
    resolve = lazy_factory(module, name).resolve  # type: ignore[attr-defined]
    found: list[Any] = []

    def get() -> Any:
        if not found:
            found.append(resolve())
        return found[0]

    get.__name__ = get.__qualname__ = name
    get.__doc__ = f"{module}.{name}."
    get.resolve = get  # type: ignore[attr-defined]
    return get


def _names(value: Iterable[str] | str) -> tuple[str, ...]:
    return (value,) if isinstance(value, str) else tuple(value)


def _options(value: Iterable[OptionSpec]) -> tuple[OptionSpec, ...]:
    return tuple(value)


def create_with_options(kind: str, name: str, factory: Callable[..., Any],
                        options: tuple[OptionSpec, ...], values: Mapping[str, Any] | None,
                        *, from_text: bool = False) -> Any:
    """Call ``factory`` with ``values`` checked against ``options``.

    ``values`` holds Python values, or text when ``from_text`` (a textual pipeline or the
    command line). Options not given are not passed, so the factory's defaults apply.
    """
    declared = {opt.name: opt for opt in options}
    kwargs = {}
    for key, value in (values or {}).items():
        opt = declared.get(key)
        if opt is None:
            raise UnknownNameError("option", key, declared, where=f" of {kind} {name!r}")
        what = f"option of {kind} {name!r}:"
        kwargs[key] = opt.parse(value, what) if from_text else opt.check(value, what)
    return factory(**kwargs)


@frozen
class PassSpec:
    """A registered pass: ``factory(**options)`` returns a Pass named ``name``."""

    name: str
    factory: Callable[..., Any]
    opt_level: int = 0
    required: tuple[str, ...] = field(default=(), converter=_names)
    summary: str = ""
    options: tuple[OptionSpec, ...] = field(default=(), converter=_options)

    def create(self, values: Mapping[str, Any] | None = None, *, from_text: bool = False) -> Any:
        """A new pass built with the given options."""
        return create_with_options("pass", self.name, self.factory, self.options, values,
                                   from_text=from_text)


@frozen
class InstrumentSpec:
    """A registered pass instrument: ``factory(**options)`` returns an instrument."""

    name: str
    factory: Callable[..., Any]
    summary: str = ""
    options: tuple[OptionSpec, ...] = field(default=(), converter=_options)

    def create(self, values: Mapping[str, Any] | None = None, *, from_text: bool = False) -> Any:
        """A new instrument built with the given options."""
        return create_with_options("instrument", self.name, self.factory, self.options, values,
                                   from_text=from_text)


class TargetKindBase:
    """The base class of target kinds (``passhost.target.TargetKind``, which checks its own
    declaration): what ``passhost_register_target_kinds`` returns."""

    __slots__ = ()


@frozen
class PipelineSpec:
    """A named pipeline: a pass list in the textual pipeline syntax."""

    name: str
    text: str
    summary: str = ""


@frozen
class PatternTableSpec:
    """A named pattern table for MergeComposite and partitioning: ``factory(target)``
    returns its ``(composite name, pattern[, check])`` entries for ``target`` (the
    ``passhost.target.Target`` being built for, or None when the table is named outside a
    build, as in ``MergeComposite{pattern_table=NAME}``)."""

    name: str
    factory: Callable[[Any], Any]
    summary: str = ""


@frozen
class OperatorSpec:
    """A graph operator: ``factory()`` returns it (an ``Op`` made by
    ``passhost.relay.op.define_op`` with this ``name``)."""

    name: str
    factory: Callable[[], Any]
    summary: str = ""
