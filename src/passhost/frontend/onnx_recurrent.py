"""Converters of the ONNX recurrent layers: LSTM, GRU and RNN, unrolled over the sequence length
known while compiling.

Each direction becomes one ``nn.dense`` of the whole input sequence with the input weights
(bias folded in), then one ``nn.dense`` with the recurrence weights and the gate arithmetic
(``split``, the activations, ``multiply``, ``add``) per time step. ``sequence_lens`` (known or
computed) masks the steps past each batch entry's length: the state is kept and ``Y`` is zero
there, so a reverse direction starts at each entry's own last step, as ONNX specifies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from passhost import relay
from passhost.frontend.onnx_bfloat16 import computed_in_float32
from passhost.frontend.onnx_context import NodeContext, Value
from passhost.frontend.onnx_registry import Entry
from passhost.relay import nn
from passhost.relay.expr import Expr, const

__all__ = ["CONVERTERS"]

_FLOAT_DTYPES = ("float16", "float32", "float64")

#: An activation: (input, alpha, beta, dtype) -> output.
_Activation = Callable[[Expr, float, float, str], Expr]


def _scaled(x: Expr, alpha: float, dtype: str) -> Expr:
    return x if alpha == 1.0 else relay.multiply(x, const(alpha, dtype))


def _affine(x: Expr, alpha: float, beta: float, dtype: str) -> Expr:
    out = _scaled(x, alpha, dtype)
    return out if beta == 0.0 else relay.add(out, const(beta, dtype))


def _thresholded_relu(x: Expr, alpha: float, _beta: float, dtype: str) -> Expr:
    return relay.where(relay.greater(x, const(alpha, dtype)), x, const(0.0, dtype))


def _hard_sigmoid(x: Expr, alpha: float, beta: float, dtype: str) -> Expr:
    return relay.clip(_affine(x, alpha, beta, dtype), a_min=0.0, a_max=1.0)


def _elu(x: Expr, alpha: float, _beta: float, dtype: str) -> Expr:
    negative = _scaled(relay.subtract(relay.exp(x), const(1.0, dtype)), alpha, dtype)
    return relay.where(relay.less(x, const(0.0, dtype)), negative, x)


def _softsign(x: Expr, _alpha: float, _beta: float, dtype: str) -> Expr:
    return relay.divide(x, relay.add(relay.abs(x), const(1.0, dtype)))


def _softplus(x: Expr, _alpha: float, _beta: float, dtype: str) -> Expr:
    return relay.log(relay.add(relay.exp(x), const(1.0, dtype)))


def _scaled_tanh(x: Expr, alpha: float, beta: float, dtype: str) -> Expr:
    return _scaled(relay.tanh(_scaled(x, beta, dtype)), alpha, dtype)


class _ActivationKind(NamedTuple):
    """An ONNX recurrent activation: its builder and default alpha and beta (None: the
    activation takes no such parameter)."""

    build: _Activation
    alpha: float | None = None
    beta: float | None = None


#: The activations ONNX's recurrent layers name (matched case-insensitively).
_ACTIVATIONS: dict[str, _ActivationKind] = {
    "relu": _ActivationKind(lambda x, _a, _b, _d: nn.relu(x)),
    "tanh": _ActivationKind(lambda x, _a, _b, _d: relay.tanh(x)),
    "sigmoid": _ActivationKind(lambda x, _a, _b, _d: relay.sigmoid(x)),
    "affine": _ActivationKind(_affine, 1.0, 0.0),
    "leakyrelu": _ActivationKind(lambda x, a, _b, _d: nn.leaky_relu(x, alpha=a), 0.01),
    "thresholdedrelu": _ActivationKind(_thresholded_relu, 1.0),
    "scaledtanh": _ActivationKind(_scaled_tanh, 1.0, 1.0),
    "hardsigmoid": _ActivationKind(_hard_sigmoid, 0.2, 0.5),
    "elu": _ActivationKind(_elu, 1.0),
    "softsign": _ActivationKind(_softsign),
    "softplus": _ActivationKind(_softplus),
}


class _Cell(NamedTuple):
    """What distinguishes LSTM, GRU and RNN: gate count and default activations."""

    gates: int
    activations: tuple[str, ...]


_LSTM = _Cell(4, ("Sigmoid", "Tanh", "Tanh"))
_GRU = _Cell(3, ("Sigmoid", "Tanh"))
_RNN = _Cell(1, ("Tanh",))


class _Layer:
    """The checked inputs and attributes of one recurrent node."""

    def __init__(self, ctx: NodeContext, cell: _Cell) -> None:
        self.ctx = ctx
        self.cell = cell
        direction = ctx.attr("direction", "forward")
        if direction not in ("forward", "reverse", "bidirectional"):
            raise ctx.error(f"expected direction forward, reverse or bidirectional, found "
                            f"{direction!r}")
        self.directions = ("forward", "reverse") if direction == "bidirectional" \
            else (direction,)
        self.layout = int(ctx.attr("layout", 0))
        if self.layout not in (0, 1):
            raise ctx.error(f"expected layout 0 or 1, found {self.layout}")
        self.dtype = ctx.dtype(0)
        if self.dtype not in _FLOAT_DTYPES:
            raise ctx.error(f"expected X of type {', '.join(_FLOAT_DTYPES)}, found "
                            f"{self.dtype}")
        x_shape = ctx.shape(0)
        if len(x_shape) != 3:
            raise ctx.error(f"expected a 3-D X, found shape {list(x_shape)}")
        self.seq, self.batch = (x_shape[1], x_shape[0]) if self.layout else x_shape[:2]
        self.input_size = x_shape[2]
        self.hidden = self._hidden_size()
        self.clip = ctx.attr("clip")
        if self.clip is not None and not float(self.clip) > 0:
            raise ctx.error(f"expected a positive clip, found {self.clip}")
        self.check_shape(1, "W", (cell.gates * self.hidden, self.input_size))
        self.check_shape(2, "R", (cell.gates * self.hidden, self.hidden))
        if ctx.has_input(3):
            self.check_shape(3, "B", (2 * cell.gates * self.hidden,))
        self.activations = self._activations()

    def _hidden_size(self) -> int:
        ctx = self.ctx
        w_shape = ctx.shape(1)
        if len(w_shape) != 3:
            raise ctx.error(f"expected a 3-D W, found shape {list(w_shape)}")
        hidden = ctx.attr("hidden_size")
        if hidden is None:
            if w_shape[1] % self.cell.gates:
                raise ctx.error(f"expected W's second dimension to be a multiple of "
                                f"{self.cell.gates}, found shape {list(w_shape)}")
            return w_shape[1] // self.cell.gates
        if int(hidden) <= 0:
            raise ctx.error(f"expected a positive hidden_size, found {hidden}")
        return int(hidden)

    def check_shape(self, index: int, name: str, tail: tuple[int, ...]) -> None:
        """Check input ``index`` is (directions, *tail) of X's dtype."""
        shape = tuple(self.ctx.shape(index))
        expected = (len(self.directions), *tail)
        if shape != expected:
            raise self.ctx.error(f"expected {name} (input {index}) of shape {list(expected)}, "
                                 f"found {list(shape)}")
        found = self.ctx.known(index).dtype.name if self.ctx.is_known(index) \
            else self.ctx.dtype(index)
        if found != self.dtype:
            raise self.ctx.error(f"expected {name} (input {index}) of type {self.dtype} (X's), "
                                 f"found {found}")

    def _activations(self) -> list[list[Callable[[Expr], Expr]]]:
        """Per direction, the activation functions in the order the cell uses them."""
        ctx = self.ctx
        count = len(self.cell.activations)
        names = [n.decode() if isinstance(n, bytes) else str(n)
                 for n in ctx.attr("activations",
                                  self.cell.activations * len(self.directions))]
        if len(names) != count * len(self.directions):
            raise ctx.error(f"expected {count * len(self.directions)} activations ({count} "
                            f"per direction), found {names}")
        alphas = [float(a) for a in ctx.attr("activation_alpha", ())]
        betas = [float(b) for b in ctx.attr("activation_beta", ())]
        funcs = []
        for name in names:
            kind = _ACTIVATIONS.get(name.lower())
            if kind is None:
                raise ctx.error(f"expected activations among {sorted(_ACTIVATIONS)}, found "
                                f"{name!r}")
            alpha = alphas.pop(0) if kind.alpha is not None and alphas else kind.alpha
            beta = betas.pop(0) if kind.beta is not None and betas else kind.beta
            funcs.append(_bind(kind.build, alpha or 0.0, beta or 0.0, self.dtype))
        return [funcs[i * count:(i + 1) * count] for i in range(len(self.directions))]

    # -- inputs per direction -----------------------------------------------------------------
    def weight(self, index: int, d: int) -> Expr:
        """W, R or B (input ``index``) of direction ``d``, without the direction axis."""
        shape = self.ctx.shape(index)
        return _row(self.ctx.input(index), d, shape)

    def state(self, index: int, d: int) -> Expr:
        """initial_h or initial_c (input ``index``) of direction ``d`` as (batch, hidden)."""
        if not self.ctx.has_input(index):
            return const(np.zeros((self.batch, self.hidden), self.dtype))
        name = "initial_h" if index == 5 else "initial_c"
        expected = (self.batch, len(self.directions), self.hidden) if self.layout \
            else (len(self.directions), self.batch, self.hidden)
        shape = tuple(self.ctx.shape(index))
        if shape != expected:
            raise self.ctx.error(f"expected {name} (input {index}) of shape {list(expected)} "
                                 f"(layout {self.layout}), found {list(shape)}")
        value = self.ctx.input(index)
        if self.layout:
            value = relay.transpose(value, axes=(1, 0, 2))
        return _row(value, d, (len(self.directions), self.batch, self.hidden))

    def inputs_by_step(self, w: Expr, bias: Expr | None) -> list[Expr]:
        """X @ W.T (+ bias) of every time step, each (batch, gates * hidden)."""
        x = self.ctx.input(0)
        if self.layout:
            x = relay.transpose(x, axes=(1, 0, 2))
        flat = relay.reshape(x, newshape=(self.seq * self.batch, self.input_size))
        xw = nn.dense(flat, w)
        if bias is not None:
            xw = relay.add(xw, bias)
        units = self.cell.gates * self.hidden
        xw = relay.reshape(xw, newshape=(self.seq, self.batch, units))
        if self.seq == 1:
            return [relay.reshape(xw, newshape=(self.batch, units))]
        parts = relay.split(xw, indices_or_sections=self.seq, axis=0)
        return [relay.reshape(parts[t], newshape=(self.batch, units)) for t in range(self.seq)]

    def step_masks(self) -> list[Expr | None]:
        """Per time step, a (batch, 1) bool mask of the entries still in their sequence, or
        None where every entry is (sequence_lens absent, or all full length)."""
        ctx = self.ctx
        if not ctx.has_input(4):
            return [None] * self.seq
        if tuple(ctx.shape(4)) != (self.batch,):
            raise ctx.error(f"expected sequence_lens (input 4) of shape [{self.batch}], found "
                            f"{list(ctx.shape(4))}")
        if ctx.is_known(4):
            lens = ctx.known(4).astype(np.int64)
            if np.any(lens < 0) or np.any(lens > self.seq):
                raise ctx.error(f"expected sequence_lens in [0, {self.seq}], found "
                                f"{lens.tolist()}")
            if np.all(lens == self.seq):
                return [None] * self.seq
            lens_expr: Expr = const(lens.astype(np.int32))
        else:
            dtype = ctx.dtype(4)
            if dtype != "int32":
                raise ctx.error(f"expected sequence_lens of type int32, found {dtype}")
            lens_expr = ctx.input(4)
        lens_expr = relay.reshape(lens_expr, newshape=(self.batch, 1))
        return [relay.less(const(np.int32(t)), lens_expr) for t in range(self.seq)]

    def clipped(self, x: Expr) -> Expr:
        """``x`` clipped to [-clip, clip] when the node sets ``clip``."""
        if self.clip is None:
            return x
        return relay.clip(x, a_min=-float(self.clip), a_max=float(self.clip))

    @staticmethod
    def gates(x: Expr, n: int) -> list[Expr]:
        """(batch, n * hidden) split into n (batch, hidden) gates."""
        parts = relay.split(x, indices_or_sections=n, axis=1)
        return [parts[i] for i in range(n)]

    # -- outputs ------------------------------------------------------------------------------
    def outputs(self, runs: Sequence[tuple[list[Expr], list[Expr]]]) -> list[Value]:
        """Y and the final states from each direction's (per-step outputs, final states)."""
        ys = []
        for steps, _ in runs:
            rows = [relay.reshape(s, newshape=(1, 1, self.batch, self.hidden)) for s in steps]
            ys.append(_concat(rows, axis=0))
        y = _concat(ys, axis=1)
        if self.layout:
            y = relay.transpose(y, axes=(2, 0, 1, 3))
        finals = []
        for k in range(len(runs[0][1])):
            per_dir = [relay.reshape(final[k], newshape=(1, self.batch, self.hidden))
                       for _, final in runs]
            state = _concat(per_dir, axis=0)
            finals.append(relay.transpose(state, axes=(1, 0, 2)) if self.layout else state)
        return [y, *finals]


def _bind(build: _Activation, alpha: float, beta: float, dtype: str,
          ) -> Callable[[Expr], Expr]:
    return lambda x: build(x, alpha, beta, dtype)


def _row(value: Expr, index: int, shape: Sequence[int]) -> Expr:
    """``value[index]`` of a tensor of static ``shape``."""
    part = relay.strided_slice(value, begin=(index,), end=(index + 1,), axes=(0,))
    return relay.reshape(part, newshape=tuple(shape[1:]))


def _slice(value: Expr, start: int, stop: int) -> Expr:
    """``value[start:stop]`` along the first axis."""
    return relay.strided_slice(value, begin=(start,), end=(stop,), axes=(0,))


def _concat(values: list[Expr], axis: int) -> Expr:
    return values[0] if len(values) == 1 else relay.concatenate(values, axis=axis)


def _select(mask: Expr | None, new: Expr, old: Expr) -> Expr:
    return new if mask is None else relay.where(mask, new, old)


def _time_order(layer: _Layer, d: int) -> list[int]:
    return list(range(layer.seq))[::-1] if layer.directions[d] == "reverse" \
        else list(range(layer.seq))


def _run(layer: _Layer, d: int, bias: Expr | None,
         step: Callable[[Expr, list[Expr]], list[Expr]], states: list[Expr],
         ) -> tuple[list[Expr], list[Expr]]:
    """Run one direction: ``step(x_t @ W.T + bias, states) -> new states`` (the hidden state
    first). Returns the per-step hidden outputs in time order and the final states."""
    xs = layer.inputs_by_step(layer.weight(1, d), bias)
    masks = layer.step_masks()
    zeros = const(np.zeros((layer.batch, layer.hidden), layer.dtype))
    outputs: list[Expr] = [zeros] * layer.seq
    for t in _time_order(layer, d):
        new = step(xs[t], states)
        states = [_select(masks[t], n, s) for n, s in zip(new, states)]
        outputs[t] = _select(masks[t], new[0], zeros)
    return outputs, states


def _bias_halves(layer: _Layer, d: int) -> tuple[Expr, Expr] | None:
    """(Wb, Rb) of direction ``d``, or None without B."""
    if not layer.ctx.has_input(3):
        return None
    b = layer.weight(3, d)
    units = layer.cell.gates * layer.hidden
    return _slice(b, 0, units), _slice(b, units, 2 * units)


# -- RNN -------------------------------------------------------------------------------------
@computed_in_float32
def _rnn(ctx: NodeContext) -> Sequence[Value]:
    """ONNX RNN becomes the simple recurrence unrolled over the time steps (``nn.dense`` and
    the activation per step), any direction, activation and layout; ``sequence_lens`` may be
    known or computed."""
    layer = _Layer(ctx, _RNN)
    runs = []
    for d in range(len(layer.directions)):
        (f,) = layer.activations[d]
        halves = _bias_halves(layer, d)
        bias = None if halves is None else relay.add(*halves)
        r = layer.weight(2, d)

        def step(xw: Expr, states: list[Expr], f=f, r=r) -> list[Expr]:
            return [f(layer.clipped(relay.add(xw, nn.dense(states[0], r))))]

        runs.append(_run(layer, d, bias, step, [layer.state(5, d)]))
    return layer.outputs(runs)


# -- GRU -------------------------------------------------------------------------------------
@computed_in_float32
def _gru(ctx: NodeContext) -> Sequence[Value]:
    """ONNX GRU becomes the gated recurrence unrolled over the time steps (``nn.dense``,
    ``split``, the activations and the update arithmetic per step), any direction,
    activation, layout and ``linear_before_reset``; ``sequence_lens`` may be known or
    computed."""
    layer = _Layer(ctx, _GRU)
    h = layer.hidden
    linear_before_reset = bool(ctx.attr("linear_before_reset", 0))
    one = const(1.0, layer.dtype)
    runs = []
    for d in range(len(layer.directions)):
        f, g = layer.activations[d]
        r = layer.weight(2, d)
        r_zr, r_h = _slice(r, 0, 2 * h), _slice(r, 2 * h, 3 * h)
        halves = _bias_halves(layer, d)
        bias, rb_h = None, None
        if halves is not None:
            wb, rb = halves
            if linear_before_reset:
                rb_zr = _slice(rb, 0, 2 * h)
                bias = relay.add(wb, relay.concatenate(
                    [rb_zr, const(np.zeros(h, layer.dtype))], axis=0))
                rb_h = _slice(rb, 2 * h, 3 * h)
            else:
                bias = relay.add(wb, rb)

        def step(xw: Expr, states: list[Expr], f=f, g=g, r_zr=r_zr, r_h=r_h,
                 rb_h=rb_h) -> list[Expr]:
            prev = states[0]
            x_z, x_r, x_h = layer.gates(xw, 3)
            h_z, h_r = layer.gates(nn.dense(prev, r_zr), 2)
            z = f(layer.clipped(relay.add(x_z, h_z)))
            reset = f(layer.clipped(relay.add(x_r, h_r)))
            if linear_before_reset:
                rec = nn.dense(prev, r_h)
                if rb_h is not None:
                    rec = relay.add(rec, rb_h)
                rec = relay.multiply(reset, rec)
            else:
                rec = nn.dense(relay.multiply(reset, prev), r_h)
            candidate = g(layer.clipped(relay.add(x_h, rec)))
            new = relay.add(relay.multiply(relay.subtract(one, z), candidate),
                            relay.multiply(z, prev))
            return [new]

        runs.append(_run(layer, d, bias, step, [layer.state(5, d)]))
    return layer.outputs(runs)


# -- LSTM ------------------------------------------------------------------------------------
@computed_in_float32
def _lstm(ctx: NodeContext) -> Sequence[Value]:
    """ONNX LSTM becomes the cell unrolled over the time steps (``nn.dense``, ``split``, the
    activations and the cell arithmetic per step), any direction, activation and layout,
    with peepholes (P), ``input_forget`` and ``clip``; ``sequence_lens`` may be known or
    computed."""
    layer = _Layer(ctx, _LSTM)
    h = layer.hidden
    input_forget = bool(ctx.attr("input_forget", 0))
    if ctx.has_input(7):
        layer.check_shape(7, "P", (3 * h,))
    one = const(1.0, layer.dtype)
    runs = []
    for d in range(len(layer.directions)):
        f, g, act_h = layer.activations[d]
        r = layer.weight(2, d)
        halves = _bias_halves(layer, d)
        bias = None if halves is None else relay.add(*halves)
        peep = None
        if ctx.has_input(7):
            p = layer.weight(7, d)
            peep = [_slice(p, k * h, (k + 1) * h) for k in range(3)]

        def step(xw: Expr, states: list[Expr], f=f, g=g, act_h=act_h, r=r,
                 peep=peep) -> list[Expr]:
            prev_h, prev_c = states
            pre_i, pre_o, pre_f, pre_c = layer.gates(relay.add(xw, nn.dense(prev_h, r)), 4)
            if peep is not None:
                pre_i = relay.add(pre_i, relay.multiply(peep[0], prev_c))
                pre_f = relay.add(pre_f, relay.multiply(peep[2], prev_c))
            i = f(layer.clipped(pre_i))
            forget = relay.subtract(one, i) if input_forget else f(layer.clipped(pre_f))
            cell = relay.add(relay.multiply(forget, prev_c),
                             relay.multiply(i, g(layer.clipped(pre_c))))
            if peep is not None:
                pre_o = relay.add(pre_o, relay.multiply(peep[1], cell))
            o = f(layer.clipped(pre_o))
            return [relay.multiply(o, act_h(cell)), cell]

        runs.append(_run(layer, d, bias, step, [layer.state(5, d), layer.state(6, d)]))
    return layer.outputs(runs)


#: The converter of each ONNX operator type this module handles.
CONVERTERS: dict[str, Entry] = {
    "LSTM": _lstm,
    "GRU": _gru,
    "RNN": _rnn,
}
