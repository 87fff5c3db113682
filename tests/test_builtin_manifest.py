"""The built-in plugin registers its passes without importing them, from
``src/passhost/builtin_manifest.json``: a copy of what each pass class declares (opt level,
dependencies, options), which must stay what the classes say. After changing a built-in
pass's declaration: ``python -m passhost.builtin_plugin``."""

from __future__ import annotations

import json

from passhost import builtin_plugin
from passhost.plugins.declare import options_of
from passhost.plugins.specs import lazy_factory
from passhost.testing import imported_modules


def test_the_manifest_is_what_the_pass_classes_declare():
    written = json.loads(builtin_plugin.MANIFEST.read_text(encoding="utf-8"))
    assert written == builtin_plugin.manifest(), (
        "src/passhost/builtin_manifest.json is stale: python -m passhost.builtin_plugin")


def test_every_registered_pass_is_its_class_declaration():
    for spec in builtin_plugin.passhost_register_passes():
        module, attr, summary = builtin_plugin.PASSES[spec.name]
        cls = lazy_factory(module, attr).resolve()
        info = cls.pass_info
        assert (spec.name, spec.opt_level, spec.required) == (info.name, info.opt_level,
                                                               tuple(info.required))
        assert spec.options == options_of(cls) and spec.summary == summary


def test_registering_the_passes_imports_no_pass_module():
    code = ("from passhost import builtin_plugin\n"
            "builtin_plugin.passhost_register_passes()\n")
    _, imported = imported_modules(code, ("passhost.relay.transform", "passhost.tir.transform",
                                          "passhost.backend"))
    assert imported == []
