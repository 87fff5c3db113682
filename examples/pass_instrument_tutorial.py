"""How to use pass instruments: TVM's pass-instrument tutorial, in passhost's names.

Run it with ``python examples/pass_instrument_tutorial.py``. It builds ResNet-18 from the
model zoo, times InferType and FoldScaleAxis with the timing instrument (plugin
passhost-timing), counts how each pass of a layout-conversion sequence changes the operator
calls, and shows what happens when an instrument raises. The sections follow the notebook
cells In[1]..In[18] of the original; tests/test_tutorial.py checks the printed results.
"""

from pprint import pprint

import passhost
import passhost.relay as relay
from passhost.instrument import pass_instrument
from passhost.relay.testing import resnet
from passhost.relay.transform import bind_params_by_name
from passhost_timing import PassTimingInstrument

# -- Create an example program: ResNet-18 (In[2], In[3]) -------------------------------------
batch_size = 1
num_of_image_class = 1000
image_shape = (3, 224, 224)
output_shape = (batch_size, num_of_image_class)
relay_mod, relay_params = resnet.get_workload(num_layers=18, batch_size=1, image_shape=image_shape)
print("Printing the IR module...")
print(relay_mod["main"])

# -- A PassContext with instruments (In[4]) ---------------------------------------------------
timing_inst = PassTimingInstrument()
with passhost.transform.PassContext(instruments=[timing_inst]):
    relay_mod = relay.transform.InferType()(relay_mod)
    relay_mod = relay.transform.FoldScaleAxis()(relay_mod)
    # get the profile before leaving the context, which clears it
    profiles = timing_inst.render()
print("Printing results of timing profile...")
print(profiles)

# -- The current PassContext with instruments (In[5], In[6]) ---------------------------------
cur_pass_ctx = passhost.transform.PassContext.current()
cur_pass_ctx.override_instruments([timing_inst])
relay_mod = relay.transform.InferType()(relay_mod)
relay_mod = relay.transform.FoldScaleAxis()(relay_mod)
profiles = timing_inst.render()
print("Printing results of timing profile...")
print(profiles)

# An empty list clears the instruments; the timing instrument's exit_pass_ctx clears its
# profile, so render() would now warn "no passes have been profiled...".
cur_pass_ctx.override_instruments([])


# -- A custom instrument: operator-call differences per pass (In[7]) --------------------------
@pass_instrument
class RelayCallNodeDiffer:
    """Records, for each pass that changed them, how the counts of operator calls in
    ``main`` changed: ``(depth, pass name, {op name: difference})``."""

    def __init__(self):
        self._op_diff = []
        # passes nest: a stack pairs each run_after_pass with its run_before_pass
        self._op_cnt_before_stack = []

    def enter_pass_ctx(self):
        self._op_diff = []
        self._op_cnt_before_stack = []

    def exit_pass_ctx(self):
        assert len(self._op_cnt_before_stack) == 0, "The stack is not empty. Something wrong."

    def run_before_pass(self, mod, info):
        self._op_cnt_before_stack.append((info.name, self._count_nodes(mod)))

    def run_after_pass(self, mod, info):
        name_before, op_to_cnt_before = self._op_cnt_before_stack.pop()
        assert name_before == info.name, f"name_before: {name_before}, info.name: {info.name}"
        cur_depth = len(self._op_cnt_before_stack)
        op_diff = self._diff(self._count_nodes(mod), op_to_cnt_before)
        if op_diff:  # only passes that changed something
            self._op_diff.append((cur_depth, info.name, op_diff))

    def get_pass_to_op_diff(self):
        """[(depth, pass_name, {op_name: diff_num, ...}), ...]"""
        return self._op_diff

    @staticmethod
    def _count_nodes(mod):
        """How often each operator is called in the module's main function."""
        ret = {}

        def visit(node):
            if isinstance(node, relay.Call) and hasattr(node.op, "name"):
                ret[node.op.name] = ret.get(node.op.name, 0) + 1

        relay.analysis.post_order_visit(mod["main"], visit)
        return ret

    @staticmethod
    def _diff(d_after, d_before):
        """The counts of ``d_after`` minus those of ``d_before``, non-zero entries only."""
        ret = {}
        for k in set(d_after) | set(d_before):
            change = d_after.get(k, 0) - d_before.get(k, 0)
            if change:
                ret[k] = change
        return ret


# -- Several instruments, and the layout-conversion sequence (In[8], In[9]) ------------------
call_node_inst = RelayCallNodeDiffer()
desired_layouts = {
    "nn.conv2d": ["NHWC", "HWIO"],
}
pass_seq = passhost.transform.Sequential(
    [
        relay.transform.FoldConstant(),
        relay.transform.ConvertLayout(desired_layouts),
        relay.transform.FoldConstant(),
    ]
)
relay_mod["main"] = bind_params_by_name(relay_mod["main"], relay_params)
# timing_inst comes after call_node_inst, so the time of call_node_inst.run_after_pass() is
# included in the timing profile.
with passhost.transform.PassContext(opt_level=3, instruments=[call_node_inst, timing_inst]):
    relay_mod = pass_seq(relay_mod)
    profiles = timing_inst.render()
# print(profiles)

pprint(call_node_inst.get_pass_to_op_diff())


# -- Exceptions in instruments (In[10]..In[18]) ----------------------------------------------
class PassExampleBase:
    def __init__(self, name):
        self._name = name

    def enter_pass_ctx(self):
        print(self._name, "enter_pass_ctx")

    def exit_pass_ctx(self):
        print(self._name, "exit_pass_ctx")

    def should_run(self, mod, info):
        print(self._name, "should_run")
        return True

    def run_before_pass(self, mod, pass_info):
        print(self._name, "run_before_pass")

    def run_after_pass(self, mod, pass_info):
        print(self._name, "run_after_pass")


@pass_instrument
class PassFine(PassExampleBase):
    pass


@pass_instrument
class PassBadEnterCtx(PassExampleBase):
    def enter_pass_ctx(self):
        print(self._name, "bad enter_pass_ctx!!!")
        raise ValueError(f"{self._name} bad enter_pass_ctx")


@pass_instrument
class PassBadExitCtx(PassExampleBase):
    def exit_pass_ctx(self):
        print(self._name, "bad exit_pass_ctx!!!")
        raise ValueError(f"{self._name} bad exit_pass_ctx")


# An exception in enter_pass_ctx disables instrumentation; the instruments whose
# enter_pass_ctx succeeded are exited.  passhost keeps the exception's type, so the last
# line of str(ex) is the message itself (TVM's read "ValueError: ...").
print("In[11]")
demo_ctx = passhost.transform.PassContext(
    instruments=[
        PassFine("PassFine_0"),
        PassBadEnterCtx("PassBadEnterCtx"),
        PassFine("PassFine_1"),
    ]
)
try:
    with demo_ctx:
        relay_mod = relay.transform.InferType()(relay_mod)
except ValueError as ex:
    print("Catching", str(ex).split("\n")[-1])

# The failing context cleared its instruments: nothing is printed.
print("In[12]")
demo_ctx.override_instruments([])

# An exception in exit_pass_ctx disables instrumentation and propagates: instruments after
# the failing one are not exited.
print("In[13]")
demo_ctx = passhost.transform.PassContext(
    instruments=[
        PassFine("PassFine_0"),
        PassBadExitCtx("PassBadExitCtx"),
        PassFine("PassFine_1"),
    ]
)
try:
    with demo_ctx:
        relay_mod = relay.transform.InferType()(relay_mod)
except ValueError as ex:
    print("Catching", str(ex).split("\n")[-1])


# Exceptions in should_run, run_before_pass and run_after_pass propagate; the with statement
# exits the context (and its instruments) safely.
@pass_instrument
class PassBadRunBefore(PassExampleBase):
    def run_before_pass(self, mod, pass_info):
        print(self._name, "bad run_before_pass!!!")
        raise ValueError(f"{self._name} bad run_before_pass")


print("In[14]")
demo_ctx = passhost.transform.PassContext(
    instruments=[
        PassFine("PassFine_0"),
        PassBadRunBefore("PassBadRunBefore"),
        PassFine("PassFine_1"),
    ]
)
try:
    with demo_ctx:
        relay_mod = relay.transform.InferType()(relay_mod)
except ValueError as ex:
    print("Catching", str(ex).split("\n")[-1])

# Instrumentation was not disabled, so override_instruments exits the old instruments.
print("In[15]")
demo_ctx.override_instruments([])

# Without a with statement, nothing exits the instruments after an exception.
print("In[16]")
cur_pass_ctx = passhost.transform.PassContext.current()
cur_pass_ctx.override_instruments(
    [
        PassFine("PassFine_0"),
        PassBadRunBefore("PassBadRunBefore"),
        PassFine("PassFine_1"),
    ]
)
print("In[17]")
try:
    relay_mod = relay.transform.InferType()(relay_mod)
except ValueError as ex:
    print("Catching", str(ex).split("\n")[-1])

# Clear the instruments.
print("In[18]")
cur_pass_ctx.override_instruments([])
