"""Test workloads (as TVM's relay.testing): a small model zoo and operator examples.

``resnet``, ``mobilenet``, ``mlp`` and ``transformer`` each have ``get_workload(...)``
returning ``(IRModule, params)``; :func:`create_workload` turns any graph function into one.
"""

from passhost.relay.testing import init, layers, mlp, mobilenet, op_examples, resnet, transformer
from passhost.relay.testing.init import create_workload

__all__ = [
    "create_workload", "init", "layers", "mlp", "mobilenet", "op_examples", "resnet",
    "transformer",
]
