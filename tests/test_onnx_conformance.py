"""ONNX's own conformance suite (node, simple, pytorch-converted, pytorch-operator) through
passhost: every test passes unless it is in the expected-failure list with its reason, and
every listed test fails (an unexpected pass fails too, so the list stays true)."""

from __future__ import annotations

import pytest

pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from onnx_conformance import conformance_tests, expected_failures

#: What passhost promises of the suites: node tests passing, and the share of the
#: PyTorch-exported suites.
NODE_TESTS_PASSING = 1300
PYTORCH_SHARE_PASSING = 0.9


def _params() -> list[object]:
    expected = expected_failures()
    params = []
    for name in conformance_tests():
        reason = expected.get(name)
        marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
        params.append(pytest.param(name, marks=marks, id=name))
    return params


@pytest.mark.parametrize("name", _params())
def test_conformance(name: str) -> None:
    conformance_tests()[name]()


def test_the_expected_failures_name_existing_tests_with_real_reasons() -> None:
    known = set(conformance_tests())
    listed = expected_failures()
    assert sorted(set(listed) - known) == []
    assert [name for name, reason in listed.items() if reason.startswith("unclassified")] == []


def test_the_promised_share_of_each_suite_passes() -> None:
    listed = expected_failures()
    for suite in ("node", "pytorch-converted", "pytorch-operator"):
        names = [n for n in conformance_tests() if n.startswith(f"{suite}/")]
        passing = len([n for n in names if n not in listed])
        if suite == "node":
            assert passing >= NODE_TESTS_PASSING, (suite, passing, len(names))
        else:
            assert passing >= PYTORCH_SHARE_PASSING * len(names), (suite, passing, len(names))
