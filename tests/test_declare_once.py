"""Declared once: a pass's or instrument's options are its constructor's ``Annotated``
parameters and its summary its docstring's first line, so the registry spec derived from
the class (``pass_spec``, ``instrument_spec``) repeats nothing; a spec that disagrees with
its pass about opt level or dependencies is found when the pass is made."""

from __future__ import annotations

from typing import Annotated

import pytest

from passhost.plugins import (
    BOOL,
    FLOAT,
    INT,
    STR,
    STR_LIST,
    STR_LIST_MAP,
    OptionSpec,
    PassSpec,
    hookimpl,
    instrument_spec,
    options_of,
)
from passhost.transform import get_pass, module_pass, pass_spec


@module_pass(opt_level=2, name="Shrink", required=["InferType"])
class Shrink:
    """Shrink what can be shrunk.

    Everything after the first line is the longer description.
    """

    def __init__(self, factor: Annotated[float, "how much"] = 0.5,
                 ops: Annotated[tuple[str, ...], "the operators to shrink"] = (),
                 layouts: Annotated[dict[str, tuple[str, ...]] | None, "op:layout;..."] = None,
                 name: Annotated[str, "a label"] = "s", times: Annotated[int, "repeats"] = 1,
                 verbose: Annotated[bool, "say more"] = False, cache: object = None) -> None:
        self.factor = factor
        self.ops = ops

    def transform_module(self, mod, ctx):
        return mod


def test_the_options_are_the_annotated_parameters():
    assert options_of(Shrink) == (
        OptionSpec("factor", FLOAT, 0.5, "how much"),
        OptionSpec("ops", STR_LIST, (), "the operators to shrink"),
        OptionSpec("layouts", STR_LIST_MAP, None, "op:layout;..."),
        OptionSpec("name", STR, "s", "a label"),
        OptionSpec("times", INT, 1, "repeats"),
        OptionSpec("verbose", BOOL, False, "say more"))  # cache: not annotated, no option


def test_pass_spec_derives_everything_from_the_class():
    spec = pass_spec(Shrink)
    assert (spec.name, spec.opt_level, spec.required) == ("Shrink", 2, ("InferType",))
    assert spec.summary == "Shrink what can be shrunk"
    assert spec.options == options_of(Shrink)


def test_an_option_of_an_unsupported_type_is_refused():
    def factory(size: Annotated[list[int] | None, "no such option type"] = None):
        return None

    with pytest.raises(TypeError, match=r"parameter 'size': an option's type is one of int"):
        options_of(factory)


def test_instrument_spec_derives_options_and_summary():
    class Counter:
        """Count the passes."""

        def __init__(self, start: Annotated[int, "where to start"] = 0) -> None:
            self.count = start

    spec = instrument_spec("counter", Counter)
    assert (spec.name, spec.summary) == ("counter", "Count the passes")
    assert spec.options == (OptionSpec("start", INT, 0, "where to start"),)
    assert spec.create({"start": "7"}, from_text=True).count == 7


def test_a_spec_disagreeing_with_its_pass_is_found_when_the_pass_is_made(register_plugin):
    class Lying:
        @hookimpl
        def passhost_register_passes(self):
            return [PassSpec("Shrink", Shrink, 0, (), "a spec written by hand")]

    register_plugin(Lying(), "lying")
    with pytest.raises(TypeError, match=r"pass 'Shrink' disagrees with its registration: "
                                        r"the pass has opt level 2 and requires "
                                        r"\['InferType'\], the registered spec says 0 and \[\]"):
        get_pass("Shrink")
