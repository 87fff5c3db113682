"""``passhost opt``: pipelines, instruments, config and errors, and ``make_instruments``."""

from __future__ import annotations

import importlib
import re

import numpy as np
import pytest

import passhost.relay as relay
from cli_helpers import (
    MODULE_TEXT,
    Other,
    run,
    table_rows,
)
from passhost.cli import CommandError, main, make_instruments
from passhost.errors import (
    ConflictError,
    OptionError,
    ParseError,
    UnknownNameError,
)
from passhost.ir import IRModule, structural_equal
from passhost.plugins import (
    PassSpec,
    hookimpl,
)
from passhost.text import parse_module

# -- opt --------------------------------------------------------------------------------------

def test_opt_prints_the_module(tools_host, module_file, capsys):
    status, out, err = run(capsys, "opt", str(module_file), "--passes", "PrintIR")
    assert status == 0
    assert structural_equal(parse_module(out), parse_module(MODULE_TEXT))
    assert err.startswith("PrintIR():\n")


def test_opt_writes_output_file(tools_host, module_file, tmp_path, capsys):
    target = tmp_path / "out.txt"
    status, out, _ = run(capsys, "opt", str(module_file), "--passes", "Tag{value=7}",
                         "--opt-level", "3", "-o", str(target))
    assert (status, out) == (0, "")
    assert parse_module(target.read_text()).attrs["tagged"] == 7


def test_opt_with_timing_renders_the_profile_to_stderr(plugin_host, module_file, capsys):
    plugin_host.register(importlib.import_module("passhost_timing.plugin"), "timing")
    status, out, err = run(capsys, "opt", str(module_file), "--passes", "PrintIR",
                           "--instrument", "timing")
    assert status == 0
    assert structural_equal(parse_module(out), parse_module(MODULE_TEXT))
    # the pipeline is one Sequential: the passes are nested (a tab deeper) below it
    assert re.search(r"^sequential: \d+us \[\d+us\]", err, re.M)
    assert re.search(r"^\tPrintIR: \d+us \[\d+us\] \(", err, re.M)


def test_opt_renders_instruments_when_a_pass_fails(tools_host, module_file, capsys):
    tools_host.register(importlib.import_module("passhost_timing.plugin"), "timing")
    status, out, err = run(capsys, "opt", str(module_file), "--passes", "PrintIR,Fail",
                           "--instrument", "timing")
    assert (status, out) == (1, "")
    assert re.search(r"^\tFail: \d+us", err, re.M)
    assert err.splitlines()[-2:] == ["passhost: error: the pass gave up",
                                     "  while running pass Fail inside sequential"]


def test_opt_level_required_and_disabled_passes(tools_host, module_file, capsys):
    def tagged(*extra: str) -> object:
        status, out, err = run(capsys, "opt", str(module_file), "--passes", "Tag", *extra)
        assert status == 0, err
        return parse_module(out).attrs.get("tagged")

    assert tagged() is None  # opt level 3 > default 2
    assert tagged("--opt-level", "3") == 1
    assert tagged("--required-pass", "Tag") == 1
    assert tagged("--opt-level", "3", "--disabled-pass", "Tag") is None


def test_opt_config_values_are_parsed_by_their_type(tools_host, module_file, capsys):
    status, _, err = run(capsys, "opt", str(module_file), "--passes", "Tag",
                         "--config", "testing.immutable_module=true", "--config",
                         "tools.level=4")
    assert (status, err) == (0, "")


@pytest.mark.parametrize(("config", "message"), [
    ("tools.level=high", "config option 'tools.level' expects int, found 'high'"),
    ("testing.immutable_module=maybe", "config option 'testing.immutable_module' expects bool"),
    ("tools.levl=1", "unknown config option 'tools.levl'; did you mean 'tools.level'?"),
    ("tools.level", "--pass-config takes KEY=VALUE, found 'tools.level'"),
])
def test_opt_bad_config_names_the_key(tools_host, module_file, capsys, config, message):
    status, out, err = run(capsys, "opt", str(module_file), "--passes", "", "--config", config)
    assert (status, out) == (1, "")
    assert err.startswith(f"passhost: error: {message}")


def test_opt_bad_pipeline_reports_line_and_column(tools_host, module_file, capsys):
    status, _, err = run(capsys, "opt", str(module_file), "--passes", "PrintIR{header=x")
    assert status == 1
    assert err.startswith("passhost: error: <pipeline>:1:17: expected ',' or '}'")
    status, _, err = run(capsys, "opt", str(module_file), "--passes", "PrintIR,\n  Tga")
    assert status == 1
    assert err == ("passhost: error: <pipeline>:2:3: unknown pass or pipeline 'Tga'; did you "
                   "mean 'Tag'?\n")


def test_opt_errors_inside_named_pipelines_print_their_notes(tools_host, module_file, capsys):
    status, _, err = run(capsys, "opt", str(module_file), "--passes", "broken")
    assert status == 1
    assert err.splitlines() == [
        "passhost: error: <pipeline broken>:1:5: unknown pass or pipeline 'Nope'",
        "  in pipeline 'broken' used at <pipeline>:1:1",
    ]


def test_opt_bad_module_text_reports_line_and_column(tools_host, tmp_path, capsys):
    path = tmp_path / "bad.txt"
    path.write_text(MODULE_TEXT.replace("nn.relu(%x)", "nn.relu(%y)"))
    status, _, err = run(capsys, "opt", str(path), "--passes", "")
    assert status == 1
    assert re.match(rf"passhost: error: {re.escape(str(path))}:4:\d+: ", err)


def test_opt_missing_input_file(tools_host, tmp_path, capsys):
    status, _, err = run(capsys, "opt", str(tmp_path / "none.txt"), "--passes", "")
    assert status == 1
    assert err == f"passhost: error: cannot read {tmp_path / 'none.txt'}: No such file or " \
                  "directory\n"


def test_opt_unknown_instrument_lists_close_matches(plugin_host, module_file, capsys):
    status, _, err = run(capsys, "opt", str(module_file), "--passes", "",
                         "--instrument", "dump-it")
    assert status == 1
    assert err == "passhost: error: unknown instrument 'dump-it'; did you mean 'dump-ir'?\n"


def test_opt_instrument_with_options(plugin_host, module_file, tmp_path, capsys):
    dump = tmp_path / "dump"
    status, _, _ = run(capsys, "opt", str(module_file), "--passes", "PrintIR",
                       "--instrument", f'dump-ir{{dump_dir="{dump}",refresh=true}}')
    assert status == 0
    assert sorted(p.name for p in dump.iterdir()) == ["000_PrintIR.txt", "001_sequential.txt"]


def test_opt_reads_zoo_models(plugin_host, capsys):
    status, out, _ = run(capsys, "opt", "zoo:mlp", "--passes", "")
    assert status == 0
    assert "nn.dense" in out
    parse_module(out)
    status, _, err = run(capsys, "opt", "zoo:mlq", "--passes", "")
    assert status == 1
    assert err.startswith("passhost: error: unknown zoo model 'mlq'")


def test_opt_output_parses_back_unless_meta_data_is_hidden(plugin_host, tmp_path, capsys):
    x = relay.var("x", shape=(1, 40), dtype="float32")
    const = relay.const(np.arange(40, dtype="float32").reshape(1, 40))
    mod = IRModule.from_expr(relay.Function([x], relay.add(x, const)))
    path = tmp_path / "const.txt"
    path.write_text(mod.astext())
    _, out, _ = run(capsys, "opt", str(path), "--passes", "", "--hide-meta-data")
    assert "metadata omitted" in out
    _, out, _ = run(capsys, "opt", str(path), "--passes", "")
    assert structural_equal(parse_module(out), mod)
    run(capsys, "opt", str(path), "--passes", "", "-o", str(tmp_path / "out.txt"))
    assert structural_equal(parse_module((tmp_path / "out.txt").read_text()), mod)


def test_opt_print_after_change_and_short_options(plugin_host, module_file, capsys):
    status, out, _ = run(capsys, "opt", str(module_file), "--passes", "PrintIR", "-O", "3",
                         "--pass-config", "testing.immutable_module=true",
                         "--print-after-change")
    assert status == 0
    # the initial module is printed; PrintIR changes nothing, so no diff follows
    assert out.startswith("=== initial module ===\n")
    assert "--- before" not in out


def test_opt_level_must_be_a_natural_number(plugin_host, module_file, capsys):
    with pytest.raises(SystemExit):
        main(["opt", str(module_file), "--passes", "", "--opt-level", "-1"])
    assert "expected an integer >= 0, found '-1'" in capsys.readouterr().err


# -- make_instruments -------------------------------------------------------------------------

def test_make_instruments_creates_each_in_order(plugin_host, tmp_path):
    made = make_instruments(["print-after-all", f"dump-ir{{dump_dir={tmp_path}}}"])
    assert [type(i).__name__ for i in made] == ["PrintAfterAll", "DumpIR"]
    assert make_instruments([]) == []


@pytest.mark.parametrize(("spec", "error", "message"), [
    ("timing,dump-ir", CommandError, "an instrument is one NAME or NAME{key=value,...}"),
    ("sequential{dump-ir}", CommandError, "an instrument is one NAME"),
    ("", CommandError, "an instrument is one NAME"),
    ("dump-ir{dump_dir=", ParseError, r"<instrument>:1:18: expected a value for option 'dump_dir'"),
    ("dump-ir{dir=x}", UnknownNameError, "did you mean 'dump_dir'"),
    ("dump-ir{dump_dir=d,refresh=often}", OptionError, "'refresh' expects bool"),
    ("print-after-al", UnknownNameError, "did you mean 'print-after-all'"),
])
def test_make_instruments_errors(plugin_host, spec, error, message):
    with pytest.raises(error, match=re.escape(message)):
        make_instruments([spec])


def test_make_instruments_names_both_providers_of_a_conflict(plugin_host):
    plugin_host.register(Other(), "other")
    plugin_host.register(Other(), "another")
    with pytest.raises(ConflictError, match="'other' and 'another'"):
        make_instruments(["dup"])


def test_registry_listing_of_a_pass_spec_without_options(plugin_host, capsys):
    class Plain:
        @hookimpl
        def passhost_register_passes(self):
            return [PassSpec("Plain", object, 1, ("PrintIR",), "plain")]

    plugin_host.register(Plain(), "plain")
    _, out, _ = run(capsys, "passes", "list")
    assert ["Plain", "1", "PrintIR", "-", "plain", "plain"] in table_rows(out)


# -- opt with the standard graph passes ------------------------------------------------------

def test_opt_runs_standard_passes_on_a_bound_zoo_model(plugin_host, capsys):
    status, out, err = run(capsys, "opt", "zoo:resnet-18", "--bind-params", "-O", "3",
                           "--passes", "SimplifyInference,FoldConstant,FoldScaleAxis")
    assert (status, err) == (0, "")
    main_fn = parse_module(out)["main"]
    assert [p.name_hint for p in main_fn.params] == ["data"]   # the weights are bound
    ops = {getattr(n.op, "name", None) for n in relay.post_order(main_fn)
           if isinstance(n, relay.Call)}
    assert "nn.batch_norm" not in ops and "nn.conv2d" in ops


def test_opt_bind_params_needs_a_zoo_model(plugin_host, module_file, capsys):
    status, _, err = run(capsys, "opt", str(module_file), "--bind-params", "--passes", "")
    assert status == 1
    assert "--bind-params applies to zoo models" in err


def test_opt_reports_an_ill_typed_module_with_the_op_and_the_pass(plugin_host, tmp_path,
                                                                   capsys):
    bad = tmp_path / "bad.txt"
    bad.write_text('#[version = "passhost.text/1"]\n\n'
                   "def @main(%x: Tensor[(1, 4), float32], %b: Tensor[(3), float32]) {\n"
                   "  add(%x, %b)\n}\n")
    status, out, err = run(capsys, "opt", str(bad), "--passes", "FoldConstant")
    assert (status, out) == (1, "")
    assert err.splitlines() == [
        "passhost: error: add: argument 'rhs' expected a shape broadcastable with "
        f"Tensor[(1, 4), float32], found Tensor[(3), float32] (at {bad}:4:3)",
        "  while running pass InferType inside FoldConstant inside sequential"]


@pytest.mark.parametrize(("pipeline", "message"), [
    ("ConvertLayout{desired_layouts=nn.conv2dd:NHWC}", "did you mean 'nn.conv2d'"),
    ("ConvertLayout{desired_layouts=nn.conv2d:NCWH}", "ConvertLayout"),
    ("FuseOps{max_depth=deep}", "max_depth"),
    ("AnnotateTarget{kinds=\"\"}", "AnnotateTarget"),
    ("MergeComposite{pattern_table=nope}", "unknown pattern table 'nope'"),
])
def test_opt_reports_bad_pass_options(plugin_host, module_file, capsys, pipeline, message):
    status, out, err = run(capsys, "opt", str(module_file), "--passes", pipeline)
    assert (status, out) == (1, "")
    assert err.startswith("passhost: error:") and message in err, err
