"""What the tests of FuseOps' optional rules share: fusing a module given as text, and the
operators of each group it makes."""

from __future__ import annotations

from passhost import text
from passhost.ir.module import IRModule
from passhost.relay.expr import Call, Function
from passhost.relay.transform import FuseOps
from passhost.relay.visitor import post_order
from passhost.transform import PassContext

HEADER = '#[version = "passhost.text/1"]\n'


def fused(body: str, **config) -> IRModule:
    """FuseOps at opt level 3 on the module ``body`` (text without its header), checking
    that the pass leaves its input alone; ``config`` adds context options."""
    mod = text.parse_module(HEADER + body)
    with PassContext(opt_level=3, config={"testing.immutable_module": True, **config}):
        return FuseOps()(mod)


def groups(mod: IRModule) -> list[list[str]]:
    """The operators of each Primitive function main calls, in order."""
    return [[c.op.name for c in post_order(n.op.body) if isinstance(c, Call)]
            for n in post_order(mod["main"].body, stop=lambda n: isinstance(n, Function))
            if isinstance(n, Call) and isinstance(n.op, Function)]
