"""``PassInfo``: a pass's name, optimisation level and declared dependencies."""

from __future__ import annotations

from collections.abc import Iterable

from attrs import field, frozen

from passhost.plugins.options import names


def pass_names(value: Iterable[str] | str | None) -> tuple[str, ...]:
    """A tuple of pass names; a single string is one name, None is none."""
    return names(value, "pass name")


def _check_opt_level(_info: object, _attr: object, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TypeError(f"opt_level is an int >= 0, found {value!r}")


def _check_name(_info: object, _attr: object, value: str) -> None:
    if not isinstance(value, str) or not value:
        raise TypeError(f"a pass name is a non-empty str, found {value!r}")


def _check_flag(_info: object, attr: object, value: object) -> None:
    if not isinstance(value, bool):
        raise TypeError(f"{attr.name} is a bool, found {value!r}")  # type: ignore[attr-defined]


@frozen(repr=False)
class PassInfo:
    """What the pass manager and instruments know of a pass.

    ``required`` names passes (resolved through the pass registry) that a Sequential runs
    before this one. ``always_run`` marks a pass the compile cannot do without (a structural
    step of the build flow): debugging tools that skip passes, such as bisection, never skip
    it. It is shown in the repr only when set, so TVM's repr is kept for every other pass.
    ``sequential`` tells instruments that the pass is a Sequential.
    """

    opt_level: int = field(validator=_check_opt_level)
    name: str = field(validator=_check_name)
    required: tuple[str, ...] = field(default=(), converter=pass_names)
    traceable: bool = False
    always_run: bool = field(default=False, kw_only=True, validator=_check_flag)
    #: Set by Sequential: the pass runs other passes as its children, each of which the
    #: instruments see, rather than a body of its own. Not part of equality.
    sequential: bool = field(default=False, kw_only=True, eq=False, validator=_check_flag)

    def __repr__(self) -> str:
        required = ", ".join(f'"{r}"' for r in self.required)
        always = ", always_run=True" if self.always_run else ""
        return (f'PassInfo(opt_level={self.opt_level}, name="{self.name}", '
                f"required=[{required}], traceable={self.traceable}{always})")

    __str__ = __repr__
