"""The standard graph passes, as in TVM's ``relay.transform``.

Each is a pass under the instrument protocol and is registered by name with the plugin host
(so pipelines such as ``InferType,FoldConstant`` find it). ``docs/passes.md`` describes them.
"""

from passhost.relay.transform.annotate_target import AnnotateTarget
from passhost.relay.transform.bind import bind_params_by_name
from passhost.relay.transform.canonicalize_ops import CanonicalizeOps
from passhost.relay.transform.convert_layout import ConvertLayout
from passhost.relay.transform.dead_code import DeadCodeElimination
from passhost.relay.transform.eliminate_common_subexpr import EliminateCommonSubexpr
from passhost.relay.transform.fold_constant import FoldConstant
from passhost.relay.transform.fold_scale_axis import FoldScaleAxis
from passhost.relay.transform.function_pass import FunctionPass, function_pass
from passhost.relay.transform.fuse_ops import FuseOps
from passhost.relay.transform.infer_type import InferType
from passhost.relay.transform.merge_composite import MergeComposite
from passhost.relay.transform.partition_graph import PartitionGraph
from passhost.relay.transform.simplify_inference import SimplifyInference

__all__ = [
    "AnnotateTarget", "CanonicalizeOps", "ConvertLayout", "DeadCodeElimination",
    "EliminateCommonSubexpr", "FoldConstant", "FoldScaleAxis", "FunctionPass", "FuseOps",
    "InferType", "MergeComposite", "PartitionGraph", "SimplifyInference", "bind_params_by_name",
    "function_pass",
]
