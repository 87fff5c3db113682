"""What the tests of the ``passhost`` command share: running it in process, reading its
tables, a module file's text, and a plugin providing one of each kind (``Tools``)."""

from __future__ import annotations

import re

from passhost.cli import main
from passhost.errors import (
    PasshostError,
)
from passhost.plugins import (
    InstrumentSpec,
    OptionSpec,
    PipelineSpec,
    PluginFailure,
    PluginHost,
    PluginRecord,
    hookimpl,
)
from passhost.transform import module_pass, pass_spec

#: The standard graph passes the built-in plugin registers, in registration order.
GRAPH_PASSES = ["InferType", "FoldConstant", "SimplifyInference", "FoldScaleAxis",
                "CanonicalizeOps", "ConvertLayout", "EliminateCommonSubexpr",
                "DeadCodeElimination", "FuseOps", "MergeComposite", "AnnotateTarget",
                "PartitionGraph"]
#: The other passes it registers: the default lowering of the build flow, and PrintIR.
BUILD_PASSES = [
    "LowerTE", "tir.Simplify", "tir.ReuseBuffers", "tir.CollapseLoops", "tir.TileTransposes",
    "tir.VectorizeReductions", "tir.AnnotateLoops", "PrintIR"]
BUILTIN_PROVIDES = ("20 passes, 9 instruments, 7 config options, 1 pipeline, 1 pattern table, "
                    "133 operators")
HEADER = ["NAME", "VERSION", "STATUS", "PROVIDES", "HOOKS"]
PLUGIN_KEYS = {"name", "entry_point", "distribution", "version", "module", "status", "builtin",
               "requires_passhost", "hooks", "provides", "error"}
PROVIDES_KEYS = ["targets", "passes", "instruments", "config_options", "pipelines",
                 "pattern_tables", "operators"]
ENV_VARS = ("PASSHOST_LOAD_PLUGINS", "PASSHOST_DISABLE_PLUGINS", "PASSHOST_STRICT_PLUGINS",
            "PASSHOST_TRACE_PLUGINS")

MODULE_TEXT = """\
#[version = "passhost.text/1"]

def @main(%x: Tensor[(1, 4), float32]) {
  nn.relu(%x)
}
"""


def run(capsys, *argv: str) -> tuple[int, str, str]:
    """``passhost ARGV`` in this process: exit status, stdout, stderr."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def table_rows(text: str) -> list[list[str]]:
    """The cells of a table's unindented lines (the header and the rows)."""
    return [re.split(r"\s{2,}", line) for line in text.splitlines()
            if line and not line.startswith(" ") and not line.startswith("(")]


# -- plugin objects ---------------------------------------------------------------------------

@module_pass(opt_level=3, name="Tag")
class Tag:
    """Marks the module with the attribute ``tagged``."""

    def __init__(self, value: int = 1) -> None:
        self.value = value

    def transform_module(self, mod, ctx):
        return mod.with_attr("tagged", self.value)


@module_pass(opt_level=0, name="Fail")
class Fail:
    """Raises a passhost error."""

    def transform_module(self, mod, ctx):
        raise PasshostError("the pass gave up")


class _Counter:
    """An instrument taking the option ``n``."""

    def __init__(self, n: int = 0) -> None:
        self.n = n


class Tools:
    """A plugin providing one of each kind (but targets)."""

    @hookimpl
    def passhost_register_passes(self):
        return [pass_spec(Tag, "tag the module", options=[OptionSpec("value", int, 1, "")]),
                pass_spec(Fail, "always fails")]

    @hookimpl
    def passhost_register_instruments(self):
        return [InstrumentSpec("dup", object, "a duplicate"),
                InstrumentSpec("counter", _Counter, "counts", options=[OptionSpec("n", int)])]

    @hookimpl
    def passhost_register_config_options(self):
        return [OptionSpec("tools.level", int, 3, "how hard to try")]

    @hookimpl
    def passhost_register_pipelines(self):
        return [PipelineSpec("tagging", "Tag{value=2}", "tag twice as hard"),
                PipelineSpec("broken", "Tag,Nope", "refers to an unknown pass")]


class Other:
    """A plugin whose instrument name clashes with Tools's."""

    @hookimpl
    def passhost_register_instruments(self):
        return [InstrumentSpec("dup", object, "another duplicate")]


def failure(kind: type[BaseException], message: str) -> PluginFailure:
    """A failure with a real traceback."""
    try:
        raise kind(message)
    except kind as err:
        return PluginFailure.from_exception(err)


def install_tools(plugin_host: PluginHost) -> PluginHost:
    """``plugin_host`` with ``tools`` (active) and records of every other status."""
    plugin_host.register(Tools(), "tools", distribution="passhost-tools")
    records = [
        PluginRecord("broken", distribution="passhost-broken", version="1.0",
                     entry_point="passhost_broken.plugin", module="passhost_broken.plugin",
                     status="error",
                     error=failure(ModuleNotFoundError, "No module named 'x'")),
        PluginRecord("off", distribution="passhost-off", version="2.0",
                     entry_point="passhost_off.plugin", module="passhost_off.plugin",
                     status="disabled"),
        PluginRecord("old", distribution="passhost-old", version="0.0.1",
                     entry_point="passhost_old.plugin", module="passhost_old.plugin",
                     status="incompatible", requires_passhost=">=9",
                     error=PluginFailure("PluginError", "requires passhost>=9, this is "
                                                        "passhost 0.1.0")),
        PluginRecord("bad", distribution="passhost-bad", version="0.3",
                     entry_point="passhost_bad.plugin", module="passhost_bad.plugin",
                     status="invalid",
                     error=failure(ValueError, "hook passhost_register_pases is unknown")),
    ]
    for record in records:
        plugin_host.records[record.name] = record
    return plugin_host


