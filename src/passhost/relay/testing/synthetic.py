"""Generated convolutional graphs of any size, for property tests and scaling benchmarks.

A graph is described by a list of block choices (small integers, see :data:`BLOCKS`); each
block applies a few operators to the running value, sometimes reusing an earlier value (a
residual add) or a constant subgraph, so every standard pass finds work to do. All tensors
keep the shape ``(1, C, H, W)`` until the classifier head, so any sequence of blocks is a
valid graph, and the weights are constants drawn from a seeded generator (He-uniform, so
values neither vanish nor explode with depth).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from passhost import relay
from passhost.ir.module import IRModule
from passhost.relay import nn
from passhost.relay.expr import Expr, Function

__all__ = ["BLOCKS", "build_graph", "graph_of_size"]


class _Builder:
    """The running state while blocks are added: current value, earlier values, weights."""

    def __init__(self, channels: int, seed: int) -> None:
        self.channels = channels
        self.rng = np.random.default_rng(seed)
        self.x: Expr = relay.var("data", shape=(1, channels, 6, 6))
        self.earlier: list[Expr] = [self.x]

    def weight(self, shape: tuple[int, ...], fan_in: int) -> Expr:
        bound = np.sqrt(6.0 / fan_in)
        return relay.const(self.rng.uniform(-bound, bound, shape).astype("float32"))

    def vector(self, low: float, high: float, shape: tuple[int, ...] | None = None) -> Expr:
        shape = shape or (self.channels,)
        return relay.const(self.rng.uniform(low, high, shape).astype("float32"))

    def conv(self, kernel: int, groups: int = 1) -> Expr:
        c = self.channels
        w = self.weight((c, c // groups, kernel, kernel), c // groups * kernel * kernel)
        pad = kernel // 2
        return nn.conv2d(self.x, w, padding=(pad, pad), groups=groups, channels=c,
                         kernel_size=(kernel, kernel))

    def batch_norm(self) -> Expr:
        bn = nn.batch_norm(self.x, self.vector(0.5, 1.5), self.vector(-0.5, 0.5),
                           self.vector(-0.5, 0.5), self.vector(0.5, 2.0))
        return bn[0]

    def channel_scale(self) -> Expr:
        return relay.multiply(self.x, self.vector(0.5, 1.5, (self.channels, 1, 1)))

    def residual(self) -> Expr:
        other = self.earlier[int(self.rng.integers(len(self.earlier)))]
        return relay.add(self.x, other)

    def repeated(self) -> Expr:
        # the same computation twice: EliminateCommonSubexpr merges it
        return relay.add(relay.sigmoid(self.x), relay.sigmoid(self.x))

    def constant_subgraph(self) -> Expr:
        # a value computed from constants only: FoldConstant evaluates it
        shift = relay.multiply(self.vector(-1, 1, (self.channels, 1, 1)), relay.const(0.5))
        return relay.add(self.x, relay.expand_dims(relay.squeeze(shift, axis=(1, 2)), 1, 2))

    def head(self) -> Expr:
        pooled = nn.batch_flatten(nn.global_avg_pool2d(self.x))
        dense = nn.dense(pooled, self.weight((10, self.channels), self.channels), units=10)
        return nn.bias_add(dense, self.vector(-0.1, 0.1, (10,)))


#: The blocks, by choice number: what each adds after the running value.
BLOCKS: tuple[tuple[str, Callable[[_Builder], Expr]], ...] = (
    ("conv3x3", lambda b: b.conv(3)),
    ("conv1x1+bias_add", lambda b: nn.bias_add(b.conv(1), b.vector(-0.2, 0.2))),
    ("batch_norm", _Builder.batch_norm),
    ("relu", lambda b: nn.relu(b.x)),
    ("residual add", _Builder.residual),
    ("channel scale", _Builder.channel_scale),
    ("max_pool 3x3 s1", lambda b: nn.max_pool2d(b.x, pool_size=(3, 3), padding=(1, 1))),
    ("depthwise conv", lambda b: b.conv(3, groups=b.channels)),
    ("dropout", lambda b: nn.dropout(b.x)),
    ("repeated sigmoid", _Builder.repeated),
    ("constant subgraph", _Builder.constant_subgraph),
    ("clip", lambda b: relay.clip(b.x, -3.0, 3.0)),
)


def build_graph(choices: Sequence[int], *, channels: int = 4, seed: int = 0) -> IRModule:
    """A module whose ``main`` applies the blocks ``choices`` (indices into :data:`BLOCKS`,
    taken modulo its length) to a ``(1, channels, 6, 6)`` input, then a classifier head
    (global pooling, dense, bias)."""
    builder = _Builder(channels, seed)
    for choice in choices:
        builder.x = BLOCKS[choice % len(BLOCKS)][1](builder)
        builder.earlier.append(builder.x)
        if len(builder.earlier) > 8:
            builder.earlier.pop(0)
    body = builder.head()
    params = relay.analysis.free_vars(body)
    return IRModule.from_expr(Function(params, body))


def graph_of_size(nodes: int, *, seed: int = 0) -> IRModule:
    """A generated module with about ``nodes`` call nodes in ``main`` (blocks drawn at
    random from a seeded generator)."""
    rng = np.random.default_rng(seed)
    choices: list[int] = []
    count = 0
    per_block = _calls_per_block()
    while count < nodes - 4:
        choice = int(rng.integers(len(BLOCKS)))
        choices.append(choice)
        count += per_block[choice]
    return build_graph(choices, seed=seed)


def _calls_per_block() -> list[int]:
    """How many calls each block adds (counted on a throwaway builder)."""
    counts = []
    for _, block in BLOCKS:
        builder = _Builder(4, 0)
        start = builder.x
        out = block(builder)
        counts.append(sum(isinstance(n, relay.Call)
                          for n in relay.post_order(out, stop=lambda n, start=start: n is start)))
    return counts
