"""What the commands share: the error for bad command-line values, reading modules and
models, making instruments and config from their texts, writing output files.

Only the standard library is imported here at module level; each helper imports the
machinery it needs when called, so that ``passhost --version`` loads no plugin.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO

from passhost.errors import PasshostError

__all__ = ["CommandError", "make_instruments", "open_for_writing", "parse_config",
           "read_model", "read_module", "render_instruments", "stdout_to_stderr",
           "write_output"]


class CommandError(PasshostError):
    """A command-line value that is wrong: a file that cannot be read, a malformed setting."""


def make_instruments(specs: Sequence[str]) -> list[Any]:
    """The instruments named by ``specs``, each ``NAME`` or ``NAME{key=value,...}`` in the
    textual pipeline syntax, created from the instrument registry with text options."""
    from passhost.instrument import get_instrument
    from passhost.transform.pipeline import PassElement, parse_pipeline

    instruments = []
    for text in specs:
        elements = parse_pipeline(text, source_name="<instrument>").elements
        if len(elements) != 1 or not isinstance(elements[0], PassElement):
            raise CommandError(f"an instrument is one NAME or NAME{{key=value,...}}, "
                               f"found {text!r}")
        element = elements[0]
        instruments.append(get_instrument(element.name, dict(element.options),
                                          from_text=True))
    return instruments


def render_instruments(instruments: Sequence[Any], stream: TextIO | None = None) -> None:
    """Write the text of every instrument that has a callable ``render()`` (the timing
    profile, for one) to ``stream`` (default: stderr)."""
    stream = sys.stderr if stream is None else stream
    for inst in instruments:
        render = getattr(inst, "render", None)
        if callable(render):
            text = render()
            if text:
                stream.write(text if text.endswith("\n") else text + "\n")


def parse_config(items: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` texts as PassContext config, each value read by the registered option's
    type; unknown keys and bad values raise errors naming the key."""
    from passhost.plugins.manager import get_host

    registry = get_host().registries.config_options
    config = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CommandError(f"--pass-config takes KEY=VALUE, found {item!r}")
        config[key] = registry.get(key).parse(value, "config option")
    return config


def _read_text(source: str) -> str:
    try:
        with open(source, encoding="utf-8") as file:
            return file.read()
    except (OSError, UnicodeDecodeError) as err:
        raise CommandError(f"cannot read {source}: {getattr(err, 'strerror', None) or err}"
                           ) from None


def read_module(source: str, bind_params: bool = False) -> Any:
    """The module ``source`` names: ``zoo:MODEL``, a file in the IR text format, or ``-``
    for standard input. ``bind_params`` binds a zoo model's weights as constants."""
    if source.startswith("zoo:"):
        from passhost.workloads.zoo import get_model

        mod, params = get_model(source[len("zoo:"):])
        if bind_params:
            from passhost.relay.expr import Function
            from passhost.relay.transform import bind_params_by_name

            main = mod["main"]
            assert isinstance(main, Function)  # a zoo model's main is a graph function
            mod = mod.with_function("main", bind_params_by_name(main, params))
        return mod
    from passhost.text import parse_module

    if source == "-":
        return parse_module(sys.stdin.read(), source_name="<stdin>")
    return parse_module(_read_text(source), source_name=source)


def read_model(source: str) -> tuple[Any, dict[str, Any]]:
    """(module, params) of MODEL: a zoo name (``resnet18``, ``zoo:resnet-18``), an ONNX
    file (``.onnx``), a TFLite file (``.tflite``), a file in the IR text format (its weights
    are constants inside it) or ``-`` (standard input)."""
    from passhost.workloads.zoo import get_model

    name = source[len("zoo:"):] if source.startswith("zoo:") else source
    looks_like_path = source == "-" or os.sep in source or "." in os.path.basename(source)
    if source.startswith("zoo:") or not (os.path.exists(source) or looks_like_path):
        return get_model(name)
    if source.endswith(".onnx"):
        from passhost.frontend import from_onnx

        return from_onnx(source)
    if source.endswith(".tflite"):
        from passhost.frontend import from_tflite

        return from_tflite(source)
    return read_module(source), {}


@contextlib.contextmanager
def stdout_to_stderr() -> Iterator[None]:
    """Send everything written to standard output, by Python (``print``) or to file
    descriptor 1 (C code, subprocesses), to standard error while the block runs: the
    plugins loaded in it cannot spoil a document the command prints afterwards."""
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no file descriptor 1: only Python's stream can be redirected
        saved = None
    try:
        if saved is not None:
            os.dup2(2, 1)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        if saved is not None:
            os.dup2(saved, 1)
            os.close(saved)


def open_for_writing(path: str, what: str = "output") -> TextIO:
    """``path`` opened for writing text, or a :class:`CommandError` saying why it cannot be
    (a missing folder, a folder where the file should be, no permission)."""
    try:
        return open(path, "w", encoding="utf-8")
    except OSError as err:
        raise CommandError(f"cannot write the {what} {path}: {err.strerror or err}") from None


def write_output(text: str, output: str | None, announce: bool = False) -> None:
    """Write ``text`` to the file ``output``, or to standard output when it is None or
    ``-``; ``announce`` prints ``wrote FILE`` on standard error after writing a file."""
    if output in (None, "-"):
        sys.stdout.write(text)
        return
    with open_for_writing(output) as file:
        file.write(text)
    if announce:
        print(f"wrote {output}", file=sys.stderr)
