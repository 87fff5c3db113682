"""The plugin host: hookspecs, typed options, specs, registries and the plugin manager.

This layer is at the bottom of passhost and knows nothing of the IR.
"""

from passhost.plugins.declare import instrument_spec, options_of
from passhost.plugins.hookspecs import INSTRUMENT_CALLBACKS, hookimpl, hookspec
from passhost.plugins.loading import ENTRY_POINT_GROUP, LoadSettings
from passhost.plugins.manager import (
    STATUSES,
    PluginFailure,
    PluginHost,
    PluginRecord,
    create_host,
    get_host,
    set_host,
)
from passhost.plugins.options import (
    BOOL,
    FLOAT,
    INT,
    STR,
    STR_LIST,
    STR_LIST_MAP,
    OptionSpec,
    OptionType,
    int_range,
    option_type,
)
from passhost.plugins.registry import Entry, Registries, Registry
from passhost.plugins.specs import (
    InstrumentSpec,
    OperatorSpec,
    PassSpec,
    PatternTableSpec,
    PipelineSpec,
    lazy_factory,
    lazy_object,
)

__all__ = [
    "BOOL", "ENTRY_POINT_GROUP", "FLOAT", "INSTRUMENT_CALLBACKS", "INT", "STATUSES",
    "LoadSettings", "PluginFailure", "create_host", "STR", "STR_LIST", "STR_LIST_MAP",
    "Entry", "InstrumentSpec", "OperatorSpec", "OptionSpec", "OptionType", "PassSpec",
    "PatternTableSpec",
    "PipelineSpec",
    "PluginHost", "PluginRecord", "Registries", "Registry", "get_host", "hookimpl",
    "hookspec", "instrument_spec", "int_range", "lazy_factory", "lazy_object", "option_type",
    "options_of", "set_host",
]
