"""Every operator has examples, and every example types, evaluates and round-trips."""

from __future__ import annotations

import numpy as np
import pytest

from passhost import relay, text
from passhost.ir import IRModule, structural_equal
from passhost.relay.op import list_ops
from passhost.relay.testing.op_examples import all_examples
from passhost.workloads import random_inputs

EXAMPLES = all_examples()


def test_every_registered_operator_has_an_example():
    covered = {name for name, _ in EXAMPLES}
    missing = [op.name for op in list_ops() if op.name not in covered
               and not op.name.startswith("test.")]
    assert missing == []


def test_every_example_names_a_registered_operator_it_uses():
    for name, build in EXAMPLES:
        used = {getattr(n, "name", None) for n in relay.post_order(build(), include_ops=True)}
        assert name in used, f"example for {name} does not call it"


@pytest.mark.parametrize(("name", "build"), EXAMPLES, ids=[f"{n}-{i}" for i, (n, _) in
                                                          enumerate(EXAMPLES)])
def test_example_evaluates_to_its_type_and_round_trips(name, build):
    func = build()
    ty = func.checked_type.ret_type
    out = relay.evaluate(func, *random_inputs(func))
    outs = out if isinstance(out, tuple) else (out,)
    assert all(np.all(np.isfinite(o)) for o in outs if o.dtype.kind == "f"), name
    mod = IRModule({"main": func})
    printed = text.print_module(mod)
    again = text.parse_module(printed)
    assert structural_equal(again, mod), printed
    assert again["main"].checked_type.ret_type == ty
    assert text.print_module(again) == printed
