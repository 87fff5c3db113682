"""``PassInfo``: a pass's name, optimisation level and declared dependencies."""

from __future__ import annotations

from collections.abc import Iterable

from attrs import field, frozen

from passhost.plugins.options import names


def pass_names(value: Iterable[str] | str | None) -> tuple[str, ...]:
    """A tuple of pass names; a single string is one name, None is none."""
    return names(value, "pass name")


def _check_opt_level(_info: object, _attr: object, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"opt_level is an int >= 0, found {value!r}")


def _check_name(_info: object, _attr: object, value: object) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"a pass name is a non-empty str, found {value!r}")


@frozen(repr=False)
class PassInfo:
    """What the pass manager and instruments know of a pass.

    ``required`` names passes (resolved through the pass registry) that a Sequential runs
    before this one.
    """

    opt_level: int = field(validator=_check_opt_level)
    name: str = field(validator=_check_name)
    required: tuple[str, ...] = field(default=(), converter=pass_names)
    traceable: bool = False

    def __repr__(self) -> str:
        required = ", ".join(f'"{r}"' for r in self.required)
        return (f'PassInfo(opt_level={self.opt_level}, name="{self.name}", '
                f"required=[{required}], traceable={self.traceable})")

    __str__ = __repr__
