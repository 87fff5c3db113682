"""The checks of the specs a plugin's registration hooks return, stated once: the host
makes them when it registers a plugin (a failing plugin is ``invalid``) and
:func:`passhost.testing.check_plugin` reports them all at once, in the same words.

A spec must be of the hook's type; names must be writable in a pipeline and on the command
line (``sequential`` is reserved for nested pipelines); opt levels, dependencies, options
and their defaults well formed; a factory must take every declared option as a keyword
argument and need no other. (Whether a pipeline's text parses is checked by ``check_plugin``
and at the pipeline's first use: parsing needs the pass layer, above this one.)
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from passhost.plugins.hookspecs import REGISTRATION_HOOKS
from passhost.plugins.names import SEQUENTIAL, is_name
from passhost.plugins.options import OptionSpec
from passhost.plugins.registry import Registries
from passhost.plugins.specs import (
    InstrumentSpec,
    OperatorSpec,
    PassSpec,
    PatternTableSpec,
    PipelineSpec,
    TargetKindBase,
)

__all__ = ["expected_spec", "spec_problems"]

#: What each registration hook must return, by registry attribute.
_SPEC_TYPES: dict[str, type] = {
    "passes": PassSpec,
    "instruments": InstrumentSpec,
    "config_options": OptionSpec,
    "pipelines": PipelineSpec,
    "pattern_tables": PatternTableSpec,
    "operators": OperatorSpec,
    "targets": TargetKindBase,  # passhost.target.TargetKind, which checks itself
}
_HOOK_OF_SPEC = {_SPEC_TYPES[attr]: hook for hook, attr in REGISTRATION_HOOKS.items()}


def expected_spec(attr: str) -> str:
    """What the registration hook of ``attr`` returns, for messages."""
    cls = _SPEC_TYPES[attr]
    return "target kinds" if cls is TargetKindBase else cls.__name__


def spec_problems(attr: str, returned: object) -> list[str]:
    """What is wrong with one spec returned by the registration hook of ``attr``."""
    cls = _SPEC_TYPES[attr]
    spec: Any = returned
    if not isinstance(returned, cls):
        hint = ""
        belongs = next((hook for spec_type, hook in _HOOK_OF_SPEC.items()
                        if isinstance(spec, spec_type)), None)
        if belongs is not None:
            hint = f" ({type(spec).__name__} objects are returned by {belongs})"
        expected = "TargetKind" if cls is TargetKindBase else cls.__name__
        return [f"returned {type(spec).__name__} {spec!r}, expected {expected}{hint}"]
    if cls is TargetKindBase:
        return []
    kind = Registries.KINDS[attr]
    name = getattr(spec, "name", None)
    what = f"{kind} {name!r}"
    found = _name_problems(kind, name, what)
    if attr == "config_options":
        return found or _option_problems(spec, what)
    summary = getattr(spec, "summary", "")
    if not isinstance(summary, str):
        found.append(f"{what}: summary is a str, found {summary!r}")
    if attr == "pipelines":
        if not isinstance(spec.text, str):
            found.append(f"{what}: text is a str, found {spec.text!r}")
        return found
    if not callable(spec.factory):
        found.append(f"{what}: factory {spec.factory!r} is not callable")
    if attr in ("pattern_tables", "operators"):
        return found
    if attr == "passes":
        found.extend(_pass_problems(spec, what))
    found.extend(_options_problems(spec, what))
    return found


def _name_problems(kind: str, name: Any, what: str) -> list[str]:
    if not isinstance(name, str) or not name:
        return [f"{kind} name {name!r}: a name is a non-empty str"]
    if not is_name(name):
        return [f"{what}: a name matches [A-Za-z_][A-Za-z0-9_.-]* (so that it can be "
                f"written in a pipeline and on the command line)"]
    if kind in ("pass", "pipeline") and name == SEQUENTIAL:
        return [f"{what}: {SEQUENTIAL!r} is reserved for nested pipelines"]
    return []


def _pass_problems(spec: PassSpec, what: str) -> list[str]:
    found = []
    level = spec.opt_level
    if isinstance(level, bool) or not isinstance(level, int) or level < 0:
        found.append(f"{what}: opt_level is an int >= 0, found {level!r}")
    for required in spec.required:
        if not isinstance(required, str) or not required:
            found.append(f"{what}: required holds pass names, found {required!r}")
    return found


def _options_problems(spec: PassSpec | InstrumentSpec, what: str) -> list[str]:
    """The options of a pass or instrument: well-formed, distinct, accepted by the
    factory as keyword arguments."""
    found: list[str] = []
    seen: set[str] = set()
    for option in spec.options:
        if not isinstance(option, OptionSpec):
            found.append(f"{what}: options hold OptionSpec, found {option!r}")
            continue
        found.extend(_option_problems(option, f"{what}: option {option.name!r}"))
        if option.name in seen:
            found.append(f"{what}: option {option.name!r} is declared twice")
        seen.add(option.name)
    if callable(spec.factory):
        found.extend(f"{what}: {problem}" for problem in _keyword_problems(spec.factory, seen))
    return found


def _option_problems(option: OptionSpec, what: str) -> list[str]:
    if not isinstance(option.name, str) or not is_name(option.name):
        return [f"{what}: an option name matches [A-Za-z_][A-Za-z0-9_.-]*"]
    found = []
    if option.default is not None:
        try:
            option.type.check(option.default)
        except (TypeError, ValueError):
            found.append(f"{what}: the default {option.default!r} does not fit the "
                         f"option's type ({option.type.name})")
    if not isinstance(option.summary, str):
        found.append(f"{what}: summary is a str, found {option.summary!r}")
    return found


def _keyword_problems(factory: Callable[..., Any], names: set[str]) -> list[str]:
    """The declared options ``factory`` cannot take as keyword arguments."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):  # no signature to inspect: trust the factory
        return []
    params = signature.parameters
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return []
    keyword = {inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY}
    found = [f"option {option!r} is declared but the factory {factory.__qualname__}"
             f"{signature} has no such keyword argument"
             for option in sorted(names) if option not in params
             or params[option].kind not in keyword]
    required = [p.name for p in params.values() if p.kind in keyword
                and p.default is inspect.Parameter.empty and p.name not in names]
    if required:
        found.append(f"the factory {factory.__qualname__}{signature} requires "
                     f"{', '.join(required)}, which no declared option provides")
    return found
