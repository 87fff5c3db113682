"""passhost's own registrations, loaded by the plugin host like any other plugin."""

from __future__ import annotations

from passhost.plugins.hookspecs import hookimpl
from passhost.plugins.options import OptionSpec
from passhost.plugins.specs import PassSpec


@hookimpl
def passhost_register_passes() -> list[PassSpec]:
    """The host's passes."""
    from passhost.transform import PrintIR, pass_spec

    return [
        pass_spec(PrintIR, "write the module's text to stderr", options=[
            OptionSpec("header", str, "", "a header printed before the module"),
            OptionSpec("show_meta_data", bool, False, "print large constants in full"),
        ]),
    ]


@hookimpl
def passhost_register_config_options() -> list[OptionSpec]:
    """The host's PassContext config options."""
    from passhost.transform.context import IMMUTABLE_MODULE

    return [
        OptionSpec(IMMUTABLE_MODULE, bool, False,
                   "check that every pass leaves its input module unchanged"),
    ]
