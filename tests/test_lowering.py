"""The default lowering: the kernel-call convention and the buffer planning of fused
functions (outputs written in place, elementwise work over dead inputs)."""

from __future__ import annotations

import numpy as np
import pytest

from passhost import relay
from passhost.backend import lower_primitive
from passhost.errors import AttrError
from passhost.relay.expr import Function
from passhost.relay.op.nn import Conv2DAttrs
from passhost.relay.op.registry import get_op
from passhost.relay.type_infer import infer_type
from passhost.runtime import KernelCallError, decode_kernel_call, kernel_call
from passhost.runtime.kernel_call import COPY
from passhost.tir import (
    Allocate,
    AllocateConst,
    Evaluate,
    StringImm,
    call_extern,
    call_kernel,
    decl_buffer,
)
from passhost.tir import post_order as tir_post_order


def _calls(prim):
    return [decode_kernel_call(n.value) for n in tir_post_order(prim.body)
            if isinstance(n, Evaluate)]


def _primitive(params, body):
    func = Function(params, body, None, {"Primitive": 1})
    infer_type(func)
    return func


def test_kernel_call_round_trip_with_tuple_inputs_and_several_outputs():
    a, b, out = (decl_buffer((2, 3), "float32", n) for n in ("a", "b", "out"))
    cat = get_op("concatenate").make_attrs({"axis": 0})
    call = decode_kernel_call(kernel_call("concatenate", cat, [out], [(a, b)]).value)
    assert call.name == "concatenate" and call.attrs == cat
    assert call.outputs == (out,) and call.inputs == ((a, b),)
    single = decode_kernel_call(kernel_call("concatenate", cat, [out], [(a,)]).value)
    assert single.inputs == ((a,),), "a one-element tuple input stays a tuple"
    conv = Conv2DAttrs(strides=(2, 2), padding=(1, 1, 1, 1))
    c = decode_kernel_call(kernel_call("nn.conv2d", conv, [out], [a, b]).value)
    assert c.attrs == conv and c.inputs == (a, b)
    copy = decode_kernel_call(kernel_call(COPY, None, [out], [a]).value)
    assert copy.attrs is None and copy.inputs == (a,)


@pytest.mark.parametrize("signature, buffers, error, message", [
    ("not json", 2, KernelCallError, "bad signature"),
    ('{"attrs":{},"inputs":[1],"outputs":1}', 0, KernelCallError,
     "expected 1 output and 1 input"),
    ('{"attrs":{},"inputs":[1,1],"outputs":1}', 3, KernelCallError, "2 inputs, the operator"),
    ('{"attrs":{"axis":1},"inputs":[1],"outputs":1}', 2, AttrError, "axis"),
])
def test_malformed_kernel_calls(signature, buffers, error, message):
    bufs = [decl_buffer((2,), "float32", f"b{i}") for i in range(buffers)]
    with pytest.raises(error, match=message):
        decode_kernel_call(call_kernel("nn.relu", signature, *bufs))


def test_other_calls_are_not_kernel_calls():
    with pytest.raises(KernelCallError, match="not a kernel call"):
        decode_kernel_call(call_extern("f", StringImm("{}")))


def test_conv_add_relu_runs_in_the_output_buffer():
    x = relay.var("x", shape=(1, 3, 8, 8))
    w = relay.var("w", shape=(4, 3, 3, 3))
    b = relay.var("b", shape=(4, 1, 1))
    body = relay.nn.relu(relay.add(relay.nn.conv2d(x, w, padding=(1, 1)), b))
    prim = lower_primitive(_primitive([x, w, b], body), "f")
    out = prim.buffer_map[prim.params[-1]]
    calls = _calls(prim)
    assert [c.name for c in calls] == ["nn.conv2d", "add", "nn.relu"]
    assert all(c.outputs == (out,) for c in calls)
    assert calls[1].inputs[0] is out and calls[2].inputs == (out,)
    assert not any(isinstance(n, Allocate) for n in tir_post_order(prim.body))
    assert prim.attrs["global_symbol"] == "f"


def test_a_value_read_twice_is_not_overwritten():
    x = relay.var("x", shape=(4,))
    e = relay.exp(x)
    body = relay.add(relay.multiply(e, e), e)
    prim = lower_primitive(_primitive([x], body), "f")
    calls = _calls(prim)
    exp_out = calls[0].outputs[0]
    assert calls[1].outputs[0] is not exp_out, "exp is still read by the add"
    assert any(isinstance(n, Allocate) for n in tir_post_order(prim.body))


def test_tuple_results_copies_and_constants():
    x = relay.var("x", shape=(2, 2))
    c = relay.const(np.arange(4, dtype="float32").reshape(2, 2))
    body = relay.Tuple([relay.add(x, c), x])
    prim = lower_primitive(_primitive([x], body), "f")
    outs = [prim.buffer_map[p] for p in prim.params[1:]]
    calls = _calls(prim)
    assert [k.name for k in calls] == ["add", COPY]
    assert calls[0].outputs == (outs[0],) and calls[1].outputs == (outs[1],)
    consts = [n for n in tir_post_order(prim.body) if isinstance(n, AllocateConst)]
    assert len(consts) == 1 and np.array_equal(consts[0].data, c.data)


def test_split_writes_every_field():
    x = relay.var("x", shape=(4, 2))
    parts = relay.split(x, 2, axis=0)
    body = relay.Tuple([relay.nn.relu(relay.TupleGetItem(parts, 0)),
                        relay.TupleGetItem(parts, 1)])
    prim = lower_primitive(_primitive([x], body), "f")
    calls = _calls(prim)
    assert calls[0].name == "split" and len(calls[0].outputs) == 2
    out1 = prim.buffer_map[prim.params[2]]
    assert calls[0].outputs[1] is out1 or calls[-1].outputs == (out1,)
