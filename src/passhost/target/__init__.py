"""The target layer: target kinds registered by plugins, targets parsed from target strings,
and the two target hooks of the build flow.

``Target("cpu -num-threads=2")`` reads one target, :func:`parse_targets` a comma-separated
list (external targets first, the host target last); a plugin registers a
:class:`TargetKind` with ``passhost_register_targets``.
"""

from passhost.target.hooks import relay_to_tir, tir_to_runtime
from passhost.target.kind import PHASES, TargetKind, TargetKindError, is_target_name
from passhost.target.target import (
    DISTRIBUTIONS,
    Target,
    TargetError,
    parse_targets,
    quote_value,
)

__all__ = [
    "DISTRIBUTIONS", "PHASES", "Target", "TargetError", "TargetKind", "TargetKindError",
    "is_target_name", "parse_targets", "quote_value", "relay_to_tir", "tir_to_runtime",
]
