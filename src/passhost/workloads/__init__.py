"""Workloads for the command line, the debugging tools and the tests: the built-in model zoo
by name (:mod:`.zoo`) and random inputs of given tensor types (:mod:`.inputs`). The models
themselves are built by ``passhost.relay.testing`` (TVM's names, kept for its tutorials).
"""

from passhost.workloads.inputs import random_arrays, random_inputs
from passhost.workloads.zoo import get_model, list_models

__all__ = ["get_model", "list_models", "random_arrays", "random_inputs"]
