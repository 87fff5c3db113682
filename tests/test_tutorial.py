"""TVM's pass-instrument tutorial (the seed of this project), ported as
examples/pass_instrument_tutorial.py, runs on ResNet-18 and prints what the seed printed."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "examples" / "pass_instrument_tutorial.py"

# The seed's In[9] output, exactly (pprint's layout included).
OP_DIFF = """\
[(1, 'CanonicalizeOps', {'add': 1, 'nn.bias_add': -1}),
 (1, 'ConvertLayout', {'expand_dims': 1, 'layout_transform': 23}),
 (1, 'FoldConstant', {'expand_dims': -1, 'layout_transform': -21}),
 (0, 'sequential', {'add': 1, 'layout_transform': 2, 'nn.bias_add': -1})]
"""

# The seed's timing tree: the times differ, the shape does not.
TIMING = re.compile(
    r"Printing results of timing profile\.\.\.\n"
    r"InferType: \d+us \[\d+us\] \([\d.]+%; [\d.]+%\)\n"
    r"FoldScaleAxis: \d+us \[\d+us\] \([\d.]+%; [\d.]+%\)\n"
    r"\tFoldConstant: \d+us \[\d+us\] \([\d.]+%; [\d.]+%\)\n"
    r"\t\tInferType: \d+us \[\d+us\] \([\d.]+%; [\d.]+%\)\n")

# In[11]..In[18] as the seed prints them (TVM's "ValueError: " prefix aside: passhost keeps
# the exception's type, so the message's last line is the message itself).
EXCEPTION_CELLS = """\
In[11]
PassFine_0 enter_pass_ctx
PassBadEnterCtx bad enter_pass_ctx!!!
PassFine_0 exit_pass_ctx
Catching PassBadEnterCtx bad enter_pass_ctx
In[12]
In[13]
PassFine_0 enter_pass_ctx
PassBadExitCtx enter_pass_ctx
PassFine_1 enter_pass_ctx
PassFine_0 should_run
PassBadExitCtx should_run
PassFine_1 should_run
PassFine_0 run_before_pass
PassBadExitCtx run_before_pass
PassFine_1 run_before_pass
PassFine_0 run_after_pass
PassBadExitCtx run_after_pass
PassFine_1 run_after_pass
PassFine_0 exit_pass_ctx
PassBadExitCtx bad exit_pass_ctx!!!
Catching PassBadExitCtx bad exit_pass_ctx
In[14]
PassFine_0 enter_pass_ctx
PassBadRunBefore enter_pass_ctx
PassFine_1 enter_pass_ctx
PassFine_0 should_run
PassBadRunBefore should_run
PassFine_1 should_run
PassFine_0 run_before_pass
PassBadRunBefore bad run_before_pass!!!
PassFine_0 exit_pass_ctx
PassBadRunBefore exit_pass_ctx
PassFine_1 exit_pass_ctx
Catching PassBadRunBefore bad run_before_pass
In[15]
PassFine_0 exit_pass_ctx
PassBadRunBefore exit_pass_ctx
PassFine_1 exit_pass_ctx
In[16]
PassFine_0 enter_pass_ctx
PassBadRunBefore enter_pass_ctx
PassFine_1 enter_pass_ctx
In[17]
PassFine_0 should_run
PassBadRunBefore should_run
PassFine_1 should_run
PassFine_0 run_before_pass
PassBadRunBefore bad run_before_pass!!!
Catching PassBadRunBefore bad run_before_pass
In[18]
PassFine_0 exit_pass_ctx
PassBadRunBefore exit_pass_ctx
PassFine_1 exit_pass_ctx
"""


@pytest.fixture(scope="module")
def tutorial_output() -> str:
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_op_differences_are_the_seeds(tutorial_output):
    assert OP_DIFF in tutorial_output


def test_both_timing_trees_have_the_seeds_shape(tutorial_output):
    assert len(TIMING.findall(tutorial_output)) == 2, tutorial_output[-3000:]


def test_the_exception_cells_print_what_the_seed_prints(tutorial_output):
    assert tutorial_output.endswith(EXCEPTION_CELLS)


def test_it_prints_resnet18s_main_function_first(tutorial_output):
    first, signature = tutorial_output.splitlines()[:2]
    assert first == "Printing the IR module..."
    assert signature.startswith("fn (%data: Tensor[(1, 3, 224, 224), float32], "
                                "%bn_data_gamma: Tensor[(3), float32]")
