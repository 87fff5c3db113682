"""C source of the ``cmsis-nn`` PrimFuncs, against the CMSIS-NN v4.x API, printed by the
host's C printer (:mod:`passhost.backend.c`).

For each PrimFunc ``@name`` the source defines an entry function::

    int32_t name(const int8_t *in0, [const int8_t *in1,] int8_t *out);

taking the PrimFunc's buffers in parameter order (inputs, then the output; int16 for the
int16 functions) and returning the ``arm_cmsis_nn_status`` of its CMSIS-NN call (0 on
success; ``arm_softmax_s8`` returns nothing, so its entry always returns 0). The printer
makes the unit freestanding (no threads, no heap), prints constant buffers as ``static
const`` arrays named ``<name>_<buffer>`` and points every context (``allocate`` in
``"global.workspace"``) into one ``static`` array ``cmsis_nn_scratch`` shared by all entry
functions, sized for the largest and 8-byte aligned: the functions are not reentrant. This
module supplies what is CMSIS-NN's own (:class:`CmsisNNCalls`): which inputs each call only
reads, the struct initialisers of the conv, depthwise, fully connected and pooling calls,
the call and its status; and the header.

With ``debug_last_error`` the source also defines ``const char *cmsis_nn_last_error(void)``
(``"<entry>: <CMSIS-NN function>"`` of the last failing call, or NULL: the printer's own
last-error message); without it failures are only returned.

The source is C99 using only ``<stdint.h>``, ``<stddef.h>`` and ``arm_nnfunctions.h``: it
compiles for a host or bare-metal (``arm-none-eabi-gcc``) alike.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from passhost.backend.c import (
    CCodegenError,
    ExternArgs,
    ExternCall,
    ExternPrinter,
    print_unit,
    storage_type,
)
from passhost.ir import IRModule
from passhost.tir import Call
from passhost_cmsis_nn.calls import is_null, layout_of, read_call, read_prim_func
from passhost_cmsis_nn.lowering import CONTEXT_SCOPE

__all__ = ["CSource", "CmsisNNCalls", "PREFIX", "emit_c", "entry_order"]

#: The prefix of the module-wide symbols (the scratch buffer, the last-error function).
PREFIX = "cmsis_nn"
#: The names of the generated files in an artifact (``modules/cmsis-nn/<name>``).
SOURCE_NAME, HEADER_NAME = "cmsis_nn_model.c", "cmsis_nn_model.h"

_VOID = ("arm_softmax_s8",)  # CMSIS-NN functions that return no status
_WRITTEN = ("output", "context")  # the pointer arguments a call writes


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


class _Call:
    """One CMSIS-NN call being printed: its arguments by name (as the C printer wrote them)
    and the locals it declares (named by the printer, so they clash with no other name of
    the function)."""

    def __init__(self, call: Call, args: ExternArgs) -> None:
        self.api, self.values = read_call(call)
        self.args = args
        self.position: dict[str, int] = {}
        pos = 0
        for name, width in layout_of(self.api):
            self.position[name] = pos
            pos += width
        self.lines: list[str] = []

    def text(self, arg: str, part: int = 0) -> str:
        """The C of argument ``arg`` (of part ``part`` of a tile or dims)."""
        return self.args.texts[self.position[arg] + part]

    def declare(self, ctype: str, hint: str, init: str) -> str:
        """Declare a local ``ctype`` initialised with ``init``; returns ``&name``."""
        name = self.args.fresh(hint)
        self.lines.append(f"{ctype} {name} = {init};")
        return f"&{name}"

    def ptr(self, arg: str, mutable: bool = False) -> str:
        """A pointer argument (or any argument: its C): the pointer, cast to non-const where
        the API's struct member is non-const, or NULL."""
        value = self.values[arg]
        if is_null(value):
            return "NULL"
        if mutable and self.args.const[self.position[arg]]:
            return f"({storage_type(value.dtype)} *){self.text(arg)}"
        return self.text(arg)

    def ints(self, *args: str) -> str:
        """Integer arguments as initialiser elements."""
        return ", ".join(self.text(a) for a in args)

    def tile(self, arg: str) -> str:
        """A ``cmsis_nn_tile`` initialiser ``{w, h}``."""
        return f"{{{self.text(arg)}, {self.text(arg, 1)}}}"

    def act(self) -> str:
        """The ``cmsis_nn_activation`` initialiser ``{min, max}``."""
        return f"{{{self.ints('act_min', 'act_max')}}}"

    def dims(self, name: str) -> str:
        """Declare ``cmsis_nn_dims <name>_dims = {n, h, w, c}``; returns its address."""
        values = ", ".join(self.text(f"{name}_dims", k) for k in range(4))
        return self.declare("cmsis_nn_dims", f"{name}_dims", f"{{{values}}}")

    def context(self) -> str:
        """Declare the ``cmsis_nn_context`` (the scratch memory, or NULL); returns its
        address."""
        memory = self.ptr("context")
        memory = memory if memory == "NULL" else f"(void *){memory}"
        return self.declare("cmsis_nn_context", "context",
                            f"{{{memory}, {self.text('context_size')}}}")


def _call(c: _Call) -> str:
    """Declare what the CMSIS-NN call takes; returns the call."""
    api = c.api
    if api in ("arm_convolve_wrapper_s8", "arm_depthwise_conv_wrapper_s8"):
        ctx = c.context()
        if api.startswith("arm_depthwise"):
            params = c.declare("cmsis_nn_dw_conv_params", "conv_params",
                               f"{{{c.ints('input_offset', 'output_offset', 'ch_mult')}, "
                               f"{c.tile('stride')}, {c.tile('padding')}, "
                               f"{c.tile('dilation')}, {c.act()}}}")
        else:
            params = c.declare("cmsis_nn_conv_params", "conv_params",
                               f"{{{c.ints('input_offset', 'output_offset')}, "
                               f"{c.tile('stride')}, {c.tile('padding')}, "
                               f"{c.tile('dilation')}, {c.act()}}}")
        quant = c.declare("cmsis_nn_per_channel_quant_params", "quant_params",
                          f"{{{c.ptr('multiplier', True)}, {c.ptr('shift', True)}}}")
    elif api == "arm_fully_connected_s8":
        ctx = c.context()
        params = c.declare("cmsis_nn_fc_params", "fc_params",
                           f"{{{c.ints('input_offset', 'filter_offset', 'output_offset')}, "
                           f"{c.act()}}}")
        quant = c.declare("cmsis_nn_per_tensor_quant_params", "quant_params",
                          f"{{{c.ints('multiplier', 'shift')}}}")
    elif api.startswith(("arm_avgpool", "arm_max_pool")):
        ctx = c.context()
        params = c.declare("cmsis_nn_pool_params", "pool_params",
                           f"{{{c.tile('stride')}, {c.tile('padding')}, {c.act()}}}")
        dims = [c.dims(n) for n in ("input", "filter", "output")]
        return (f"{api}({ctx}, {params}, {dims[0]}, {c.ptr('input')}, {dims[1]}, {dims[2]}, "
                f"{c.ptr('output')})")
    else:
        return f"{api}({', '.join(c.ptr(arg) for arg in c.values)})"
    dims = [c.dims(n) for n in ("input", "filter", "bias", "output")]
    return (f"{api}({ctx}, {params}, {quant}, {dims[0]}, {c.ptr('input')}, {dims[1]}, "
            f"{c.ptr('filter')}, {dims[2]}, {c.ptr('bias')}, {dims[3]}, {c.ptr('output')})")


class CmsisNNCalls(ExternPrinter):
    """How the C printer prints a ``cmsis-nn`` PrimFunc's CMSIS-NN call: its inputs are
    only read, and it is written as struct initialisers, the call and its status."""

    def read_only(self, call: Call) -> Collection[int]:
        """Every single argument but the output and the context (of which only the
        pointers matter: the inputs, weights, bias, multipliers and shifts)."""
        out, pos = [], 0
        for name, width in layout_of(call.args[0].value):
            if width == 1 and name not in _WRITTEN:
                out.append(pos)
            pos += width
        return out

    def statement(self, call: Call, args: ExternArgs) -> ExternCall:
        """The CMSIS-NN call with what it needs declared; its status checked unless the
        function returns none."""
        c = _Call(call, args)
        text = _call(c)
        if c.api in _VOID:
            return ExternCall([*c.lines, f"{text};"], None, c.api)
        status = args.fresh("status")
        return ExternCall([*c.lines, f"arm_cmsis_nn_status {status} = {text};"], status, c.api)


def _header(signatures: list[str], debug_last_error: bool) -> str:
    lines = ["/* Generated by passhost (cmsis-nn target): the entry functions. Each returns",
             " * the arm_cmsis_nn_status of its CMSIS-NN call (0 on success). */",
             "#ifndef CMSIS_NN_MODEL_H", "#define CMSIS_NN_MODEL_H", "",
             "#include <stdint.h>", "", "#ifdef __cplusplus", 'extern "C" {', "#endif", ""]
    lines += [f"{s};" for s in signatures]
    if debug_last_error:
        lines += ["", "/* \"<entry>: <CMSIS-NN function>\" of the last failing call, or NULL. */",
                  f"const char *{PREFIX}_last_error(void);"]
    lines += ["", "#ifdef __cplusplus", "}", "#endif", "", "#endif /* CMSIS_NN_MODEL_H */", ""]
    return "\n".join(lines)


_PREAMBLE = f"""\
/* Generated by passhost (cmsis-nn target) against the CMSIS-NN v4.x API. */
#include "{HEADER_NAME}"
#include "arm_nnfunctions.h"
"""


def emit_c(mod: IRModule, debug_last_error: bool = False) -> CSource:
    """The C source and header of the ``cmsis-nn`` PrimFuncs of ``mod``."""
    names = entry_order(name for name, _ in mod.items())
    for name in names:
        read_prim_func(name, mod[name])  # one CMSIS-NN call of a known layout
    try:
        unit = print_unit({name: mod[name] for name in names}, _PREAMBLE, prefix=PREFIX,
                          extern_printer=CmsisNNCalls(), freestanding=True,
                          last_error=debug_last_error, restrict=False,
                          scratch_scope=CONTEXT_SCOPE)
    except CCodegenError as err:
        raise ValueError(f"cmsis-nn: {err}") from None
    renamed = [n for n in names if unit.functions[n].symbol != n]
    if renamed:
        raise ValueError(f"cmsis-nn: the PrimFunc name {renamed[0]!r} is not a C identifier "
                         "the source can define")
    signatures = [unit.functions[n].signature for n in names]
    return CSource(unit.source, _header(signatures, debug_last_error))
