"""C source of the ``cmsis-nn`` PrimFuncs, against the CMSIS-NN v4.x API.

For each PrimFunc ``@name`` the source defines an entry function::

    int32_t name(const int8_t *in0, [const int8_t *in1,] int8_t *out);

taking the PrimFunc's buffers in parameter order (inputs, then the output; int16 for the
int16 functions) and returning the ``arm_cmsis_nn_status`` of its CMSIS-NN call (0 on
success; ``arm_softmax_s8`` returns nothing, so its entry always returns 0). Constant
buffers are ``static const`` arrays named ``<name>_<buffer>``; every context (scratch)
buffer is one ``static`` array shared by all entry functions, sized for the largest and
8-byte aligned: the functions are not reentrant. The conv, depthwise, fully
connected and pooling calls are written as struct initialisers and a call, the others as
plain calls; the status goes through ``switch (status)`` whose ``default:`` returns it.

With ``debug_last_error`` the source also defines ``const char *<prefix>_last_error(void)``
(``"<entry>: <CMSIS-NN function>"`` of the last failing call, or NULL) and ``int32_t
<prefix>_last_error_status(void)``; without it failures are only returned.

The source is C99 using only ``<stdint.h>``, ``<stddef.h>`` (through ``arm_nn_types.h``) and
``arm_nnfunctions.h``: it compiles for a host or bare-metal (``arm-none-eabi-gcc``) alike.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from passhost.ir.module import IRModule
from passhost.tir import Buffer
from passhost_cmsis_nn.calls import LoweredCall, is_null, read_prim_func

__all__ = ["CSource", "PREFIX", "emit_c", "entry_order", "entry_signature"]

#: The prefix of the module-wide symbols (the scratch buffer, the last-error functions).
PREFIX = "cmsis_nn"
#: The names of the generated files in an artifact (``modules/cmsis-nn/<name>``).
SOURCE_NAME, HEADER_NAME = "cmsis_nn_model.c", "cmsis_nn_model.h"

_CTYPES = {"int8": "int8_t", "int16": "int16_t", "int32": "int32_t"}
_SCRATCH = f"{PREFIX}_scratch"
_VOID = ("arm_softmax_s8",)  # CMSIS-NN functions that return no status
_LINE = 16  # array elements per line
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")


class CSource:
    """The generated source and header of a module's PrimFuncs."""

    def __init__(self, source: str, header: str) -> None:
        self.source = source
        self.header = header

    def files(self) -> dict[str, str]:
        """The files an artifact stores, by name."""
        return {SOURCE_NAME: self.source, HEADER_NAME: self.header}


def entry_order(names: Iterable[str]) -> list[str]:
    """Entry functions in source order: by name length, then name (``main_2`` before
    ``main_10``)."""
    return sorted(names, key=lambda n: (len(n), n))


def _identifier(name: str, what: str) -> str:
    if not _IDENTIFIER.match(name):
        raise ValueError(f"cmsis-nn: {what} {name!r} is not a C identifier")
    return name


def _ctype(buf: Buffer) -> str:
    if buf.dtype not in _CTYPES:
        raise ValueError(f"cmsis-nn: buffer {buf.name} is {buf.dtype}; the C source takes "
                         f"{', '.join(_CTYPES)}")
    return _CTYPES[buf.dtype]


def _int(value: int) -> str:
    """A C literal of an int32 value (INT32_MIN cannot be written as one literal)."""
    return "(-2147483647 - 1)" if value == -(1 << 31) else str(int(value))


def entry_signature(name: str, params: Sequence[Buffer]) -> str:
    """``int32_t name(const int8_t *in0, ..., int8_t *out)``: inputs const, output last."""
    names = [_identifier(b.name, f"a parameter buffer of @{name}") for b in params]
    args = [f"const {_ctype(b)} *{n}" for b, n in zip(params[:-1], names)]
    args.append(f"{_ctype(params[-1])} *{names[-1]}")
    return f"int32_t {_identifier(name, 'the PrimFunc name')}({', '.join(args)})"


def _array(symbol: str, buf: Buffer, data: np.ndarray) -> str:
    values = [_int(v) for v in np.asarray(data).reshape(-1).tolist()]
    lines = [", ".join(values[i:i + _LINE]) for i in range(0, len(values), _LINE)]
    body = ",\n    ".join(lines)
    return f"static const {_ctype(buf)} {symbol}[{len(values)}] = {{\n    {body}\n}};\n"


class _Entry:
    """The C of one entry function."""

    def __init__(self, name: str, lowered: LoweredCall) -> None:
        self.name = name
        self.lowered = lowered
        self.args = lowered.args
        self.symbols = {id(b): b.name for b in lowered.params}
        self.arrays: list[str] = []
        for arg, value in self.args.items():
            if isinstance(value, Buffer) and id(value) not in self.symbols:
                data = lowered.constant(value)
                if data is None:
                    raise ValueError(f"cmsis-nn: @{name}: argument {arg!r} is neither a "
                                     f"parameter nor a constant buffer")
                symbol = _identifier(f"{name}_{value.name}", "a constant's symbol")
                self.symbols[id(value)] = symbol
                self.arrays.append(_array(symbol, value, data))

    def ptr(self, arg: str, mutable: bool = False) -> str:
        """A pointer argument: a buffer's symbol (cast to non-const where the API's struct
        member is non-const), or NULL."""
        value = self.args[arg]
        if is_null(value):
            return "NULL"
        symbol = self.symbols[id(value)]
        if mutable and id(value) not in {id(b) for b in self.lowered.params}:
            return f"({_ctype(value)} *){symbol}"
        return symbol

    def tile(self, arg: str) -> str:
        """A ``cmsis_nn_tile`` initialiser ``{w, h}``."""
        w, h = self.args[arg]
        return f"{{{_int(w)}, {_int(h)}}}"

    def dims(self, arg: str) -> str:
        """A ``cmsis_nn_dims`` initialiser ``{n, h, w, c}``."""
        return "{" + ", ".join(_int(v) for v in self.args[arg]) + "}"

    def context(self) -> str:
        """The ``cmsis_nn_context`` declaration: the shared scratch array, or NULL."""
        size = self.args["context_size"]
        if is_null(self.args["context"]):
            return f"cmsis_nn_context context = {{NULL, {_int(size)}}};"
        return f"cmsis_nn_context context = {{(void *){_SCRATCH}, {_int(size)}}};"

    def call_lines(self) -> list[str]:
        """The declarations and the CMSIS-NN call (storing its status in ``status``)."""
        api = self.lowered.api
        a = self.args
        if api in ("arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8"):
            depthwise = api.startswith("arm_depthwise")
            params = (f"cmsis_nn_dw_conv_params conv_params = {{{_int(a['input_offset'])}, "
                      f"{_int(a['output_offset'])}, {_int(a['ch_mult'])}, "
                      if depthwise else
                      f"cmsis_nn_conv_params conv_params = {{{_int(a['input_offset'])}, "
                      f"{_int(a['output_offset'])}, ")
            params += (f"{self.tile('stride')}, {self.tile('padding')}, "
                       f"{self.tile('dilation')}, {{{_int(a['act_min'])}, "
                       f"{_int(a['act_max'])}}}}};")
            return [
                self.context(), params,
                f"cmsis_nn_per_channel_quant_params quant_params = "
                f"{{{self.ptr('multiplier', True)}, {self.ptr('shift', True)}}};",
                *self._dims("input", "filter", "bias", "output"),
                f"arm_cmsis_nn_status status = {api}(&context, &conv_params, &quant_params, "
                f"&input_dims, {self.ptr('input')}, &filter_dims, {self.ptr('filter')}, "
                f"&bias_dims, {self.ptr('bias')}, &output_dims, {self.ptr('output')});"]
        if api == "arm_fully_connected_s8":
            return [
                self.context(),
                f"cmsis_nn_fc_params fc_params = {{{_int(a['input_offset'])}, "
                f"{_int(a['filter_offset'])}, {_int(a['output_offset'])}, "
                f"{{{_int(a['act_min'])}, {_int(a['act_max'])}}}}};",
                f"cmsis_nn_per_tensor_quant_params quant_params = "
                f"{{{_int(a['multiplier'])}, {_int(a['shift'])}}};",
                *self._dims("input", "filter", "bias", "output"),
                f"arm_cmsis_nn_status status = {api}(&context, &fc_params, &quant_params, "
                f"&input_dims, {self.ptr('input')}, &filter_dims, {self.ptr('filter')}, "
                f"&bias_dims, {self.ptr('bias')}, &output_dims, {self.ptr('output')});"]
        if api.startswith(("arm_avgpool", "arm_max_pool")):
            return [
                self.context(),
                f"cmsis_nn_pool_params pool_params = {{{self.tile('stride')}, "
                f"{self.tile('padding')}, {{{_int(a['act_min'])}, {_int(a['act_max'])}}}}};",
                *self._dims("input", "filter", "output"),
                f"arm_cmsis_nn_status status = {api}(&context, &pool_params, &input_dims, "
                f"{self.ptr('input')}, &filter_dims, &output_dims, {self.ptr('output')});"]
        plain = ", ".join(self._plain(arg) for arg in a)
        if api in _VOID:
            return [f"{api}({plain});"]
        return [f"arm_cmsis_nn_status status = {api}({plain});"]

    def _plain(self, arg: str) -> str:
        value = self.args[arg]
        return self.ptr(arg) if isinstance(value, Buffer) or is_null(value) else _int(value)

    def _dims(self, *names: str) -> list[str]:
        return [f"cmsis_nn_dims {n}_dims = {self.dims(f'{n}_dims')};" for n in names]

    def function(self, debug_last_error: bool) -> str:
        """The entry function's definition."""
        lines = [f"{entry_signature(self.name, self.lowered.params)}", "{"]
        lines += [f"    {line}" for line in self.call_lines()]
        if self.lowered.api not in _VOID:
            lines += ["    switch (status)", "    {", "    case ARM_CMSIS_NN_SUCCESS:",
                      "        break;", "    default:"]
            if debug_last_error:
                lines += [f'        {PREFIX}_error_call = "{self.name}: {self.lowered.api}";',
                          f"        {PREFIX}_error_status = (int32_t)status;"]
            lines += ["        return (int32_t)status;", "    }"]
        lines += ["    return 0;", "}", ""]
        return "\n".join(lines)


_ERROR_STATE = f"""\
static const char *{PREFIX}_error_call = NULL;
static int32_t {PREFIX}_error_status = 0;

const char *{PREFIX}_last_error(void)
{{
    return {PREFIX}_error_call;
}}

int32_t {PREFIX}_last_error_status(void)
{{
    return {PREFIX}_error_status;
}}
"""


def _scratch(entries: Sequence[_Entry]) -> str:
    size = max([e.lowered.context_size for e in entries], default=0)
    if size <= 0:
        return ""
    words = (size + 7) // 8
    return (f"/* The scratch memory of every context: {size} bytes, 8-byte aligned. */\n"
            f"static int64_t {_SCRATCH}[{words}];\n")


def _header(entries: Sequence[_Entry], debug_last_error: bool) -> str:
    lines = ["/* Generated by passhost (cmsis-nn target): the entry functions. Each returns",
             " * the arm_cmsis_nn_status of its CMSIS-NN call (0 on success). */",
             "#ifndef CMSIS_NN_MODEL_H", "#define CMSIS_NN_MODEL_H", "",
             "#include <stdint.h>", "", "#ifdef __cplusplus", 'extern "C" {', "#endif", ""]
    lines += [f"{entry_signature(e.name, e.lowered.params)};" for e in entries]
    if debug_last_error:
        lines += ["", "/* \"<entry>: <CMSIS-NN function>\" of the last failing call, or NULL. */",
                  f"const char *{PREFIX}_last_error(void);",
                  "/* The status that call returned. */",
                  f"int32_t {PREFIX}_last_error_status(void);"]
    lines += ["", "#ifdef __cplusplus", "}", "#endif", "", "#endif /* CMSIS_NN_MODEL_H */", ""]
    return "\n".join(lines)


def emit_c(mod: IRModule, debug_last_error: bool = False) -> CSource:
    """The C source and header of the ``cmsis-nn`` PrimFuncs of ``mod``."""
    entries = [_Entry(name, read_prim_func(name, mod[name]))
               for name in entry_order(name for name, _ in mod.items())]
    parts: list[Any] = [
        "/* Generated by passhost (cmsis-nn target) against the CMSIS-NN v4.x API. */",
        f'#include "{HEADER_NAME}"', '#include "arm_nnfunctions.h"', ""]
    scratch = _scratch(entries)
    if scratch:
        parts.append(scratch)
    if debug_last_error:
        parts.append(_ERROR_STATE)
    for entry in entries:
        parts.extend(entry.arrays)
        parts.append(entry.function(debug_last_error))
    return CSource("\n".join(parts), _header(entries, debug_last_error))
