"""Passes by name: the pass registry of the plugin host, seen from the pass manager."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from passhost.plugins.declare import first_line, options_of
from passhost.plugins.manager import get_host
from passhost.plugins.options import OptionSpec
from passhost.plugins.specs import PassSpec
from passhost.transform.passes import Pass


def get_pass(name: str, options: Mapping[str, Any] | None = None, *,
             from_text: bool = False) -> Pass:
    """A new instance of the registered pass ``name``; unknown names raise an error listing
    close matches."""
    spec: PassSpec = get_host().registries.passes.get(name)
    created = spec.create(options, from_text=from_text)
    if not isinstance(created, Pass):
        raise TypeError(f"the factory of pass {name!r} returned {type(created).__name__}, "
                        f"expected a Pass")
    if created.info.name != name:
        raise TypeError(f"the factory of pass {name!r} returned a pass named "
                        f"{created.info.name!r}")
    declared = (created.info.opt_level, tuple(created.info.required))
    if declared != (spec.opt_level, tuple(spec.required)):
        raise TypeError(f"pass {name!r} disagrees with its registration: the pass has opt "
                        f"level {declared[0]} and requires {list(declared[1])}, the registered "
                        f"spec says {spec.opt_level} and {list(spec.required)}; derive the "
                        f"spec from the pass (passhost.transform.pass_spec)")
    created._origin = (name, _options_text(spec, options, from_text))
    return created


def _options_text(spec: PassSpec, options: Mapping[str, Any] | None,
                  from_text: bool) -> tuple[tuple[str, str], ...]:
    """The options a pass was made with, as the text a pipeline element gives them."""
    if not options:
        return ()
    declared = {opt.name: opt for opt in spec.options}
    return tuple((key, value if from_text else declared[key].format(value))
                 for key, value in options.items())


def pass_origin(pass_: Pass) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    """``(registered name, options as text)`` of a pass made by :func:`get_pass`, else
    None (a pass made in Python: its options are not known)."""
    return getattr(pass_, "_origin", None)


def list_passes() -> list[PassSpec]:
    """The registered pass specs, sorted by name."""
    return [entry.spec for entry in get_host().registries.passes.entries()]


def pass_spec(factory: Callable[..., Pass] | Pass, summary: str | None = None,
              options: Iterable[OptionSpec] | None = None) -> PassSpec:
    """A :class:`PassSpec` for a pass class made by ``module_pass`` & co. (name, opt level
    and dependencies are read from it; unless given, the options from its constructor's
    ``Annotated`` parameters, :func:`passhost.plugins.declare.options_of`, and the summary
    from its docstring's first line) or for a pass instance (always that instance)."""
    if isinstance(factory, Pass):
        instance = factory
        info = instance.info

        def create() -> Pass:
            return instance

        return PassSpec(info.name, create, info.opt_level, info.required, summary or "")
    declared = getattr(factory, "pass_info", None)
    if declared is None:
        raise TypeError(f"pass_spec needs a Pass or a pass class with pass_info, found "
                        f"{factory!r}; build a PassSpec directly for other factories")
    return PassSpec(declared.name, factory, declared.opt_level, declared.required,
                    first_line(factory) if summary is None else summary,
                    options_of(factory) if options is None else options)
