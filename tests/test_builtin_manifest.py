"""The built-in plugin registers its passes, instruments, config options and operators
without importing them, from ``src/passhost/builtin_manifest.json``: a copy of what each pass
class (opt level, dependencies, options), instrument factory (options), config option
constant (name, type, default, summary) and operator module (name, summary) declares, which
must stay what the code says. After changing
one of those declarations: ``python -m passhost.builtin_plugin``."""

from __future__ import annotations

import json

from passhost import builtin_plugin
from passhost.plugins.declare import options_of
from passhost.plugins.specs import lazy_factory
from passhost.testing import imported_modules


def resolve(module: str, attr: str):
    return lazy_factory(module, attr).resolve()


def test_the_manifest_is_what_the_code_declares():
    written = json.loads(builtin_plugin.MANIFEST.read_text(encoding="utf-8"))
    assert set(written) == {"passes", "instruments", "config_options", "operators"}
    assert written == builtin_plugin.manifest(), (
        "src/passhost/builtin_manifest.json is stale: python -m passhost.builtin_plugin")


def test_every_registered_pass_is_its_class_declaration():
    for spec in builtin_plugin.passhost_register_passes():
        module, attr, summary = builtin_plugin.PASSES[spec.name]
        cls = resolve(module, attr)
        info = cls.pass_info
        assert (spec.name, spec.opt_level, spec.required) == (info.name, info.opt_level,
                                                               tuple(info.required))
        assert spec.options == options_of(cls) and spec.summary == summary


def test_every_registered_instrument_is_its_factory_declaration():
    specs = builtin_plugin.passhost_register_instruments()
    assert [spec.name for spec in specs] == list(builtin_plugin.INSTRUMENTS)
    for spec in specs:
        module, attr, summary = builtin_plugin.INSTRUMENTS[spec.name]
        assert spec.options == options_of(resolve(module, attr)), spec.name
        assert spec.summary == summary


def test_every_registered_config_option_is_the_constant_its_reader_declares():
    specs = builtin_plugin.passhost_register_config_options()
    assert [spec.name for spec in specs] == list(builtin_plugin.CONFIG_OPTIONS)
    for spec in specs:
        assert spec == resolve(*builtin_plugin.CONFIG_OPTIONS[spec.name])


def test_every_operator_defined_is_registered_as_itself():
    from passhost.relay.op import Op, get_op

    specs = builtin_plugin.passhost_register_operators()
    assert len(specs) > 100
    for spec in specs:
        op = spec.factory()
        assert isinstance(op, Op) and op.name == spec.name and get_op(spec.name) is op
        assert spec.summary and spec.summary in op.description


def test_registering_imports_no_pass_instrument_reader_or_operator_module():
    code = ("from passhost import builtin_plugin\n"
            "builtin_plugin.passhost_register_passes()\n"
            "builtin_plugin.passhost_register_instruments()\n"
            "builtin_plugin.passhost_register_config_options()\n"
            "builtin_plugin.passhost_register_operators()\n")
    _, imported = imported_modules(code, ("passhost.relay", "passhost.tir", "passhost.backend",
                                          "passhost.transform", "passhost.instrument",
                                          "passhost.debug"))
    assert imported == []
