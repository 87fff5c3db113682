"""Every operator's TE compute equals its NumPy reference kernel on its examples."""

from __future__ import annotations

import pytest

from passhost.relay.op import list_ops
from passhost.relay.testing.op_examples import all_examples
from passhost.workloads import random_inputs
from te_harness import assert_matches_reference, loops_of

COVERED = [(name, build) for name, build in all_examples()
           if all(op.te_compute is not None for op in list_ops() if op.name == name)
           and loops_of(build()) is not None]


def test_some_operators_compile_to_loops():
    assert {"add"} <= {name for name, _ in COVERED}


@pytest.mark.parametrize(("name", "build"), COVERED,
                         ids=[f"{n}-{i}" for i, (n, _) in enumerate(COVERED)])
def test_te_compute_matches_the_reference(name, build):
    func = build()
    for seed in range(2):
        assert_matches_reference(func, random_inputs(func, seed))
