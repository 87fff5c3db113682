"""The inference race: passhost's cpu target against onnxruntime and PyTorch eager on the
models of ``race_models.py``, in one process, on the same ONNX file and inputs.

For each model and thread count, each runtime's output is checked against onnxruntime's
(``runtimes.check``) before it is timed; the runtimes are then timed in turns, in rounds
(``timing.interleaved_medians_ms``), and each ratio is the median of the ratios within a
round, so that the shared machine's slow spells cancel. A runtime that fails to import,
build or match is left out of the timing, and its error ends the row.
"""

from __future__ import annotations

import gc
import importlib.util
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import race_models
from runtimes import check, one_line, ort_session, passhost_executor, torch_runner
from timing import interleaved_medians_ms, median_of

from passhost.frontend import from_onnx

#: The largest passhost / onnxruntime latency ratio that meets issue 20's target.
TARGET_RATIO = 1.0
#: The table's header (:func:`format_row` lines up under it).
HEADER = (f"{'model':<18}{'thr':>3}  {'passhost ms':>11}  {'ort ms':>9}  {'torch ms':>9}  "
          f"{'ph/ort':>7}  {'ph/torch':>8}  notes")


@dataclass
class Row:
    """One line of the race's table: a model at a thread count."""

    model: str
    threads: int
    ms: dict[str, float] = field(default_factory=dict)
    ratios: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def _cell(value: float | None, width: int, over: float | None = None) -> str:
    """``value`` right-aligned in ``width`` characters ("-" when missing), followed by
    "!" when it is above ``over``."""
    if value is None:
        return f"{'-':>{width}} "
    mark = "!" if over is not None and value > over else " "
    return f"{value:>{width}.{2 if over is not None else 3}f}{mark}"


def format_row(row: Row) -> str:
    """``row`` as a line under :data:`HEADER`; a ratio over :data:`TARGET_RATIO` is
    followed by "!"."""
    return (f"{row.model:<18}{row.threads:>3}  {_cell(row.ms.get('passhost'), 11)} "
            f"{_cell(row.ms.get('onnxruntime'), 9)} {_cell(row.ms.get('torch'), 9)} "
            f"{_cell(row.ratios.get('onnxruntime'), 7, TARGET_RATIO)} "
            f"{_cell(row.ratios.get('torch'), 8, 1.0)} {'; '.join(row.notes)}").rstrip()


def _passhost(path: Path) -> tuple[Any, dict[str, np.ndarray]] | str:
    """passhost's import of ONNX file ``path``, or why it failed."""
    try:
        return from_onnx(path)
    except Exception as err:  # reported in the row: the point is how far each model gets
        return f"passhost import FAILED: {one_line(err)}"


def _torch(name: str, path: Path) -> Callable[..., Any] | str | None:
    """Model ``name`` as PyTorch eager, why it failed, or None without torch."""
    if importlib.util.find_spec("torch") is None:
        return None
    try:
        return race_models.torch_forward(name, path)
    except Exception as err:  # reported in the row, as above
        return f"torch build FAILED: {one_line(err)}"


def _race_threads(name: str, path: Path, threads: int, rounds: int,
                  imported: tuple[Any, dict[str, np.ndarray]] | str,
                  forward: Callable[..., Any] | str | None, layout: str | None) -> Row:
    """One row: model ``name`` (ONNX file ``path``) at ``threads`` threads (passhost's
    convolutions in ``layout``, when given)."""
    row = Row(name, threads)
    inputs = race_models.example_inputs(name)
    session = ort_session(path, threads)
    expected = session.run(None, inputs)
    runners: dict[str, Callable[[], Any]] = {
        "onnxruntime": lambda: session.run(None, inputs)}
    if isinstance(imported, str):
        row.notes.append(imported)
    else:
        try:
            executor = passhost_executor(*imported, threads, inputs, layout)
        except Exception as err:  # reported in the row, as above
            row.notes.append(f"passhost build FAILED: {one_line(err)}")
        else:
            try:
                executor.run()
                error = max(check("passhost", name, executor.get_output(i), want) /
                            max(float(np.max(np.abs(want), initial=0.0)), 1e-30)
                            for i, want in enumerate(expected))
                runners["passhost"] = executor.run
                row.notes.append(f"max|ph-ort|/max|ort| {error:.1g}")
            except Exception as err:  # a wrong output or a failed run: reported
                row.notes.append(f"passhost run FAILED: {one_line(err)}")
    if isinstance(forward, str):
        row.notes.append(forward)
    elif forward is not None:
        run = torch_runner(forward, inputs, threads)
        try:
            check("torch", name, run(), expected[0])
            runners["torch"] = run
        except Exception as err:  # reported in the row, as above
            row.notes.append(f"torch FAILED: {one_line(err)}")
    timed = interleaved_medians_ms(runners, rounds)
    row.ms = {runner: median_of(timed, runner) for runner in runners}
    if "passhost" in runners:
        row.ratios = {other: median_of(timed, "passhost", other)
                      for other in runners if other != "passhost"}
    return row


def race(names: Iterable[str], threads: Iterable[int], rounds: int, cache: Path,
         emit: Callable[[str], None] = print, layout: str | None = None) -> list[Row]:
    """Race every model of ``names`` at every thread count of ``threads``, ``rounds``
    rounds each, with ONNX files cached in ``cache`` (passhost's convolutions converted to
    ``layout`` when given); ``emit`` gets the header, then each row as it is done. Returns
    the rows."""
    emit(HEADER)
    rows = []
    for name in names:
        try:
            path = race_models.onnx_file(name, cache)
        except Exception as err:  # an export that fails is reported, and the race goes on
            rows.append(Row(name, 0, notes=[f"export FAILED: {one_line(err)}"]))
            emit(format_row(rows[-1]))
            continue
        imported = _passhost(path)
        forward = _torch(name, path)
        for count in threads:
            rows.append(_race_threads(name, path, count, rounds, imported, forward, layout))
            emit(format_row(rows[-1]))
            gc.collect()
        del imported, forward
        gc.collect()
    return rows
