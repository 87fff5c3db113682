"""The built-in instruments (spec rules 12, 33-35): exact printed output, dumped files, the
module diffs of PrintAfterChange, and their registration with the plugin host."""

from __future__ import annotations

import ast
import difflib
import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import passhost.relay as relay
from passhost.debug import ReproducerWriter, TraceEvents
from passhost.errors import OptionError
from passhost.instrument import (
    DumpIR,
    PassInstrument,
    PassPrintingInstrument,
    PrintAfterAll,
    PrintAfterChange,
    PrintBeforeAll,
)
from passhost.ir.module import IRModule
from passhost.transform import PassContext, Sequential, module_pass

X = relay.var("x", shape=(1, 4), dtype="float32")
HEADER = '#[version = "passhost.text/1"]\n'
SIGNATURE = "\ndef @main(%x: Tensor[(1, 4), float32]) {\n"
#: relu(x), then relu(x) + 1, then relu(x) + 1 + 1, written out by hand
TEXT0 = HEADER + SIGNATURE + "  nn.relu(%x)\n}\n"
TEXT1 = HEADER + SIGNATURE + "  %0 = nn.relu(%x);\n  add(%0, const(1.0, float32))\n}\n"
TEXT2 = (HEADER + SIGNATURE + "  %0 = nn.relu(%x);\n  %1 = add(%0, const(1.0, float32));\n"
         "  add(%1, const(1.0, float32))\n}\n")


def relu_module() -> IRModule:
    return IRModule.from_expr(relay.Function([X], relay.nn.relu(X)))


def info_line(name: str) -> str:
    return f'PassInfo(opt_level=0, name="{name}", required=[], traceable=False)'


def udiff(before: str, after: str, name: str) -> str:
    return "".join(difflib.unified_diff(before.splitlines(keepends=True),
                                        after.splitlines(keepends=True),
                                        fromfile=f"before {name}", tofile=f"after {name}"))


def _add_one(mod, ctx):
    f = mod["main"]
    return mod.with_function("main", relay.Function(f.params, relay.add(f.body, relay.const(1.0))))


def _relu_again(mod, ctx):
    f = mod["main"]
    return mod.with_function("main", relay.Function(f.params, relay.nn.relu(f.body)))


AddOne = module_pass(_add_one, name="AddOne")
AddOneMore = module_pass(_add_one, name="AddOneMore")
ReluAgain = module_pass(_relu_again, name="ReluAgain")
Identity = module_pass(lambda mod, ctx: mod, name="Identity")
#: returns a new module object with the same text: "changed nothing" is judged on the text
Copy = module_pass(lambda mod, ctx: mod.copy(), name="Copy")


class Skip(PassInstrument):
    """Skips the passes named (rule 8)."""

    def __init__(self, *names: str) -> None:
        self.skip = set(names)

    def should_run(self, mod, info):
        return info.name not in self.skip


def run(passes, mod, *instruments):
    with PassContext(instruments=list(instruments)):
        return passes(mod)


# -- PrintBeforeAll / PrintAfterAll (rule 33) ----------------------------------------------
def test_print_before_all_prints_info_and_input_module_in_pre_order(capsys):
    out = run(Sequential([AddOne, Identity]), relu_module(), PrintBeforeAll())
    assert str(out) == TEXT1
    assert capsys.readouterr().out == (
        f"Before Running Pass: {info_line('sequential')}\n{TEXT0}\n"
        f"Before Running Pass: {info_line('AddOne')}\n{TEXT0}\n"
        f"Before Running Pass: {info_line('Identity')}\n{TEXT1}\n")


def test_print_after_all_prints_info_and_output_module_in_post_order(capsys):
    run(Sequential([AddOne, Identity]), relu_module(), PrintAfterAll())
    assert capsys.readouterr().out == (
        f"After Running Pass: {info_line('AddOne')}\n{TEXT1}\n"
        f"After Running Pass: {info_line('Identity')}\n{TEXT1}\n"
        f"After Running Pass: {info_line('sequential')}\n{TEXT1}\n")


def test_print_all_nested_sequentials_and_a_skipped_pass(capsys):
    inner = Sequential([AddOne, Identity], name="inner")
    outer = Sequential([inner, AddOneMore], name="outer")
    run(outer, relu_module(), PrintBeforeAll(), PrintAfterAll(), Skip("Identity"))
    out = capsys.readouterr().out
    assert "Identity" not in out  # rule 12: a skipped pass is not printed
    headers = [line for line in out.splitlines() if "Running Pass" in line]
    assert headers == [
        f"Before Running Pass: {info_line('outer')}",
        f"Before Running Pass: {info_line('inner')}",
        f"Before Running Pass: {info_line('AddOne')}",
        f"After Running Pass: {info_line('AddOne')}",
        f"After Running Pass: {info_line('inner')}",
        f"Before Running Pass: {info_line('AddOneMore')}",
        f"After Running Pass: {info_line('AddOneMore')}",
        f"After Running Pass: {info_line('outer')}",
    ]
    assert out.endswith(f"After Running Pass: {info_line('outer')}\n{TEXT2}\n")


def test_skipping_a_sequential_prints_nothing_for_it_or_its_children(capsys):
    seq = Sequential([AddOne], name="inner")
    out = run(Sequential([seq, Identity]), relu_module(), PrintBeforeAll(), Skip("inner"))
    assert str(out) == TEXT0
    assert capsys.readouterr().out == (
        f"Before Running Pass: {info_line('sequential')}\n{TEXT0}\n"
        f"Before Running Pass: {info_line('Identity')}\n{TEXT0}\n")


def test_print_instruments_write_to_the_file_given(capsys):
    before, after = io.StringIO(), io.StringIO()
    run(AddOne, relu_module(), PrintBeforeAll(file=before), PrintAfterAll(file=after))
    assert before.getvalue() == f"Before Running Pass: {info_line('AddOne')}\n{TEXT0}\n"
    assert after.getvalue() == f"After Running Pass: {info_line('AddOne')}\n{TEXT1}\n"
    assert capsys.readouterr().out == ""


def test_print_instruments_find_stdout_when_printing(monkeypatch):
    inst = PrintAfterAll()
    redirected = io.StringIO()
    monkeypatch.setattr(sys, "stdout", redirected)  # after the instrument was built
    run(Identity, relu_module(), inst)
    assert redirected.getvalue() == f"After Running Pass: {info_line('Identity')}\n{TEXT0}\n"


# -- PassPrintingInstrument (rule 34) ------------------------------------------------------
def test_pass_printing_instrument_prints_the_named_passes_only(capsys):
    inst = PassPrintingInstrument(["AddOne", "Identity"], ["AddOne"])
    run(Sequential([AddOne, Identity, AddOneMore]), relu_module(), inst)
    assert capsys.readouterr().out == (
        f"Print IR before: AddOne\n{TEXT0}\n\n\n"
        f"Print IR after: AddOne\n{TEXT1}\n\n\n"
        f"Print IR before: Identity\n{TEXT1}\n\n\n")


def test_pass_printing_instrument_matches_names_exactly(capsys):
    # TVM tests substrings: "Add" would match "AddOne" there
    inst = PassPrintingInstrument(["Add", "One"], "AddOneMore")
    run(Sequential([AddOne, AddOneMore]), relu_module(), inst)
    assert capsys.readouterr().out == f"Print IR after: AddOneMore\n{TEXT2}\n\n\n"


def test_pass_printing_instrument_single_string_is_one_name(capsys):
    inst = PassPrintingInstrument("AddOne", "AddOne", file=None)
    assert inst.print_before_pass_names == {"AddOne"}
    run(Sequential([AddOne, Identity]), relu_module(), inst)
    assert capsys.readouterr().out == (f"Print IR before: AddOne\n{TEXT0}\n\n\n"
                                       f"Print IR after: AddOne\n{TEXT1}\n\n\n")


def test_pass_printing_instrument_skipped_pass_is_not_printed(capsys):
    inst = PassPrintingInstrument(["AddOne", "Identity"], ["AddOne", "Identity"])
    run(Sequential([AddOne, Identity]), relu_module(), inst, Skip("AddOne"))
    assert capsys.readouterr().out == (f"Print IR before: Identity\n{TEXT0}\n\n\n"
                                       f"Print IR after: Identity\n{TEXT0}\n\n\n")


def test_pass_printing_instrument_writes_to_file(capsys):
    sink = io.StringIO()
    run(AddOne, relu_module(), PassPrintingInstrument([], ["AddOne"], file=sink))
    assert sink.getvalue() == f"Print IR after: AddOne\n{TEXT1}\n\n\n"
    assert capsys.readouterr().out == ""


# -- DumpIR (rule 35) ----------------------------------------------------------------------
def listing(path: Path) -> list[str]:
    return sorted(p.name for p in path.iterdir())


def test_dump_ir_writes_numbered_files_in_post_order(tmp_path):
    inner = Sequential([AddOne, Identity], name="inner")
    outer = Sequential([inner, AddOneMore], name="outer")
    run(outer, relu_module(), DumpIR(tmp_path))
    assert listing(tmp_path) == ["000_AddOne.txt", "001_Identity.txt", "002_inner.txt",
                                 "003_AddOneMore.txt", "004_outer.txt"]
    contents = {p.name: p.read_text() for p in tmp_path.iterdir()}
    assert contents["000_AddOne.txt"] == TEXT1
    assert contents["001_Identity.txt"] == TEXT1
    assert contents["002_inner.txt"] == TEXT1
    assert contents["003_AddOneMore.txt"] == TEXT2
    assert contents["004_outer.txt"] == TEXT2


def test_dump_ir_files_hold_the_module_with_metadata(tmp_path):
    big = relay.const(np.arange(40, dtype="float32").reshape(10, 4))
    mod = IRModule.from_expr(relay.Function([X], relay.add(X, big)))
    run(AddOne, mod, DumpIR(tmp_path / "dumps"))
    expected = IRModule.from_expr(
        relay.Function([X], relay.add(relay.add(X, big), relay.const(1.0)))).astext()
    text = (tmp_path / "dumps" / "000_AddOne.txt").read_text()
    assert text == expected
    assert "#[metadata]" in text and "metadata omitted" not in text


def test_dump_ir_creates_the_directory(tmp_path):
    target = tmp_path / "a" / "b"
    inst = DumpIR(str(target))
    assert not target.exists()  # nothing written yet
    run(Identity, relu_module(), inst)
    assert listing(target) == ["000_Identity.txt"]


def test_dump_ir_counter_belongs_to_the_instance_and_is_never_reset(tmp_path):
    inst, other = DumpIR(tmp_path / "one"), DumpIR(tmp_path / "two")
    run(AddOne, relu_module(), inst)
    run(Sequential([Identity]), relu_module(), inst, other)
    assert listing(tmp_path / "one") == ["000_AddOne.txt", "001_Identity.txt",
                                         "002_sequential.txt"]
    assert listing(tmp_path / "two") == ["000_Identity.txt", "001_sequential.txt"]


def test_dump_ir_skipped_pass_is_not_dumped(tmp_path):
    run(Sequential([AddOne, Identity]), relu_module(), DumpIR(tmp_path), Skip("AddOne"))
    assert listing(tmp_path) == ["000_Identity.txt", "001_sequential.txt"]
    assert (tmp_path / "000_Identity.txt").read_text() == TEXT0


def test_dump_ir_sanitises_pass_names(tmp_path):
    odd = module_pass(lambda mod, ctx: mod, name='a<b>:c"d/e\\f|g?h*i')
    run(odd, relu_module(), DumpIR(tmp_path))
    assert listing(tmp_path) == ["000_a_b__c_d_e_f_g_h_i.txt"]


def test_dump_ir_refresh_empties_a_directory_of_dump_files(tmp_path, recwarn):
    for name in ("000_A.txt", "001_sequential.txt", "1234_B_c.txt"):
        (tmp_path / name).write_text("old")
    inst = DumpIR(tmp_path, refresh=True)
    assert listing(tmp_path) == []
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]
    run(Identity, relu_module(), inst)
    assert listing(tmp_path) == ["000_Identity.txt"]


@pytest.mark.parametrize("foreign", ["notes.md", "01_A.txt", "000_A.dump", "000A.txt"])
def test_dump_ir_refresh_warns_and_keeps_a_directory_with_foreign_files(tmp_path, foreign):
    names = sorted(["000_A.txt", foreign])
    for name in names:
        (tmp_path / name).write_text("keep")
    with pytest.warns(UserWarning) as record:
        DumpIR(tmp_path, refresh=True)
    message = str(record[0].message)
    assert str(tmp_path) in message and repr(foreign) in message
    assert listing(tmp_path) == names


def test_dump_ir_refresh_treats_a_subdirectory_as_foreign(tmp_path):
    (tmp_path / "000_A.txt").write_text("keep")
    (tmp_path / "001_B.txt").mkdir()
    with pytest.warns(UserWarning, match="001_B.txt"):
        DumpIR(tmp_path, refresh=True)
    assert listing(tmp_path) == ["000_A.txt", "001_B.txt"]


def test_dump_ir_without_refresh_keeps_old_files(tmp_path, recwarn):
    (tmp_path / "notes.md").write_text("keep")
    (tmp_path / "007_Old.txt").write_text("keep")
    run(Identity, relu_module(), DumpIR(tmp_path))
    assert listing(tmp_path) == ["000_Identity.txt", "007_Old.txt", "notes.md"]
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]


def test_dump_ir_refresh_of_a_missing_directory_is_fine(tmp_path):
    DumpIR(tmp_path / "missing", refresh=True)
    assert not (tmp_path / "missing").exists()


# -- PrintAfterChange ----------------------------------------------------------------------
def initial(text: str) -> str:
    return f"=== initial module ===\n{text}"


def test_diff_format_is_a_unified_diff_with_three_lines_of_context(capsys):
    run(AddOne, relu_module(), PrintAfterChange())
    assert capsys.readouterr().out == initial(TEXT0) + (
        "--- before AddOne\n"
        "+++ after AddOne\n"
        "@@ -1,5 +1,6 @@\n"
        ' #[version = "passhost.text/1"]\n'
        " \n"
        " def @main(%x: Tensor[(1, 4), float32]) {\n"
        "-  nn.relu(%x)\n"
        "+  %0 = nn.relu(%x);\n"
        "+  add(%0, const(1.0, float32))\n"
        " }\n")


def test_only_changing_passes_are_reported(capsys):
    run(Sequential([AddOne, Identity, Copy, AddOneMore]), relu_module(), PrintAfterChange())
    assert capsys.readouterr().out == (initial(TEXT0) + udiff(TEXT0, TEXT1, "AddOne")
                                       + udiff(TEXT1, TEXT2, "AddOneMore"))


def test_unchanged_pipeline_prints_only_the_initial_module(capsys):
    run(Sequential([Identity, Copy]), relu_module(), PrintAfterChange())
    assert capsys.readouterr().out == initial(TEXT0)


def test_nested_sequentials_report_each_change_once(capsys):
    inner = Sequential([AddOne, Identity], name="inner")
    outer = Sequential([inner, Sequential([AddOneMore], name="more")], name="outer")
    run(outer, relu_module(), PrintAfterChange())
    assert capsys.readouterr().out == (initial(TEXT0) + udiff(TEXT0, TEXT1, "AddOne")
                                       + udiff(TEXT1, TEXT2, "AddOneMore"))


@module_pass(name="Outer")
def outer_changing(mod, ctx):
    """Calls AddOne inside its body, then changes the module itself."""
    return _relu_again(AddOne(mod), ctx)


@module_pass(name="OuterOnlyCalls")
def outer_only_calls(mod, ctx):
    return AddOne(mod)


def test_pass_called_inside_another_pass_each_change_reported_once(capsys):
    out = run(outer_changing, relu_module(), PrintAfterChange())
    final = HEADER + SIGNATURE + ("  %0 = nn.relu(%x);\n  %1 = add(%0, const(1.0, float32));\n"
                                  "  nn.relu(%1)\n}\n")
    assert str(out) == final
    assert capsys.readouterr().out == (initial(TEXT0) + udiff(TEXT0, TEXT1, "AddOne")
                                       + udiff(TEXT1, final, "Outer"))


def test_enclosing_pass_whose_children_did_everything_reports_nothing(capsys):
    run(Sequential([outer_only_calls]), relu_module(), PrintAfterChange())
    assert capsys.readouterr().out == initial(TEXT0) + udiff(TEXT0, TEXT1, "AddOne")


def test_sequential_changing_after_its_children_reports_from_the_last_report(capsys):
    seq = Sequential([AddOne, ReluAgain], name="seq")
    mid = HEADER + SIGNATURE + ("  %0 = nn.relu(%x);\n  %1 = add(%0, const(1.0, float32));\n"
                                "  nn.relu(%1)\n}\n")
    run(seq, relu_module(), PrintAfterChange())
    assert capsys.readouterr().out == (initial(TEXT0) + udiff(TEXT0, TEXT1, "AddOne")
                                       + udiff(TEXT1, mid, "ReluAgain"))


def test_same_pipeline_on_a_fresh_module_in_one_context_is_reported_again(capsys):
    with PassContext(instruments=[PrintAfterChange()]):
        Sequential([AddOne, Identity])(relu_module())
        Sequential([AddOne, Identity])(relu_module())
    assert capsys.readouterr().out == (initial(TEXT0) + udiff(TEXT0, TEXT1, "AddOne")
                                       + udiff(TEXT0, TEXT1, "AddOne"))


def test_skipped_pass_is_not_diffed(capsys):
    run(Sequential([AddOne, AddOneMore]), relu_module(), PrintAfterChange(), Skip("AddOne"))
    assert capsys.readouterr().out == initial(TEXT0) + udiff(TEXT0, TEXT1, "AddOneMore")


def test_skipped_only_pass_prints_nothing_at_all(capsys):
    run(AddOne, relu_module(), PrintAfterChange(), Skip("AddOne"))
    assert capsys.readouterr().out == ""


def test_initial_module_is_printed_again_in_each_context(capsys):
    inst = PrintAfterChange()
    with PassContext(instruments=[inst]):
        mod = AddOne(relu_module())
        Identity(mod)  # same context: no second initial module
    with PassContext(instruments=[inst]):
        AddOne(mod)
    assert capsys.readouterr().out == (initial(TEXT0) + udiff(TEXT0, TEXT1, "AddOne")
                                       + initial(TEXT1) + udiff(TEXT1, TEXT2, "AddOne"))


class CountingModule(IRModule):
    """An IRModule that counts how often it is printed."""

    __slots__ = ("printed",)

    def astext(self, show_meta_data: bool = True) -> str:
        self.printed += 1
        return super().astext(show_meta_data)


def test_an_unchanged_module_object_is_printed_once(capsys):
    mod = CountingModule({"main": relay.Function([X], relay.nn.relu(X))})
    mod.printed = 0
    run(Sequential([Identity, Identity, Sequential([Identity])]), mod, PrintAfterChange())
    assert mod.printed == 1
    assert capsys.readouterr().out == initial(TEXT0)


def test_print_after_change_dump_dir(tmp_path, capsys):
    odd = module_pass(_relu_again, name="Re/lu?")
    run(Sequential([AddOne, Identity, odd]), relu_module(), PrintAfterChange(tmp_path / "d"))
    assert capsys.readouterr().out == ""
    mid = HEADER + SIGNATURE + ("  %0 = nn.relu(%x);\n  %1 = add(%0, const(1.0, float32));\n"
                                "  nn.relu(%1)\n}\n")
    files = {p.name: p.read_text() for p in (tmp_path / "d").iterdir()}
    assert files == {"000_initial.txt": TEXT0,
                     "001_AddOne.diff": udiff(TEXT0, TEXT1, "AddOne"),
                     "002_Re_lu_.diff": udiff(TEXT1, mid, "Re/lu?")}


def test_print_after_change_writes_to_file(capsys):
    sink = io.StringIO()
    run(AddOne, relu_module(), PrintAfterChange(file=sink))
    assert sink.getvalue() == initial(TEXT0) + udiff(TEXT0, TEXT1, "AddOne")
    assert capsys.readouterr().out == ""


def test_print_after_change_recovers_after_a_failing_pass(capsys):
    @module_pass(name="Boom")
    def boom(mod, ctx):
        raise ValueError("boom")

    inst = PrintAfterChange()
    with PassContext(instruments=[inst]):
        with pytest.raises(ValueError, match="boom"):
            Sequential([AddOne, boom])(relu_module())
        Sequential([AddOne])(relu_module())
    assert capsys.readouterr().out == (initial(TEXT0) + udiff(TEXT0, TEXT1, "AddOne")
                                       + udiff(TEXT0, TEXT1, "AddOne"))


# -- registration --------------------------------------------------------------------------
def test_dump_ir_is_registered(plugin_host, tmp_path):
    spec = plugin_host.registries.instruments.get("dump-ir")
    inst = spec.create({"dump_dir": str(tmp_path)}, from_text=False)
    assert isinstance(inst, DumpIR)
    assert inst.dump_dir == tmp_path
    (tmp_path / "notes.md").write_text("keep")
    with pytest.warns(UserWarning, match="notes.md"):
        spec.create({"dump_dir": str(tmp_path), "refresh": "true"}, from_text=True)
    with pytest.raises(OptionError, match="dump_dir"):
        spec.create()


@pytest.mark.parametrize(("name", "option", "cls"), [
    ("dump-ir", "dump_dir", DumpIR), ("trace-events", "path", TraceEvents),
    ("reproducer", "dir", ReproducerWriter)])
def test_the_class_checks_a_required_option(plugin_host, name, option, cls):
    message = f"instrument {name!r} needs the option {option!r}"
    with pytest.raises(OptionError) as info:
        plugin_host.registries.instruments.get(name).create()
    assert str(info.value) == message
    with pytest.raises(OptionError) as info:
        cls()
    assert str(info.value) == message


def test_print_passes_is_registered_with_text_options(plugin_host, capsys):
    spec = plugin_host.registries.instruments.get("print-passes")
    inst = spec.create({"before": "A;B", "after": "AddOne"}, from_text=True)
    assert isinstance(inst, PassPrintingInstrument)
    assert inst.print_before_pass_names == {"A", "B"}
    assert inst.print_after_pass_names == {"AddOne"}
    assert spec.create({"before": "AddOne"}).print_before_pass_names == {"AddOne"}
    assert spec.create().print_after_pass_names == set()
    run(AddOne, relu_module(), inst)
    assert capsys.readouterr().out == f"Print IR after: AddOne\n{TEXT1}\n\n\n"


def test_printing_and_diff_instruments_are_registered(plugin_host, tmp_path):
    registry = plugin_host.registries.instruments
    assert isinstance(registry.get("print-before-all").create(), PrintBeforeAll)
    assert isinstance(registry.get("print-after-all").create(), PrintAfterAll)
    change = registry.get("print-after-change")
    assert change.create().dump_dir is None
    made = change.create({"dump_dir": str(tmp_path)}, from_text=True)
    assert isinstance(made, PrintAfterChange) and made.dump_dir == tmp_path
    names = ["dump-ir", "print-after-all", "print-after-change", "print-before-all",
             "print-passes"]
    assert [(registry.entry(n).provider, registry.entry(n).distribution) for n in names] == [
        ("builtin", "passhost")] * len(names)


def test_instrument_package_does_not_import_transform():
    package = Path(__file__).parents[1] / "src" / "passhost" / "instrument"
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert not (node.module or "").startswith("passhost.transform"), path
            elif isinstance(node, ast.Import):
                assert not any(a.name.startswith("passhost.transform") for a in node.names)
    code = ("import sys, passhost.instrument; "
            "print([m for m in sys.modules if m.startswith('passhost.transform')])")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert done.stdout.strip() == "[]"


def test_get_instrument_makes_a_registered_instrument_with_checked_options():
    from passhost.errors import OptionError, UnknownNameError
    from passhost.instrument import DumpIR, PassPrintingInstrument, get_instrument

    dump = get_instrument("dump-ir", {"dump_dir": "out", "refresh": False})
    assert isinstance(dump, DumpIR) and str(dump.dump_dir) == "out"
    assert get_instrument("dump-ir", {"dump_dir": "out"}) is not dump
    printing = get_instrument("print-passes", {"after": "A;B"}, from_text=True)
    assert isinstance(printing, PassPrintingInstrument)
    with pytest.raises(UnknownNameError, match="did you mean 'dump-ir'"):
        get_instrument("dump-it")
    with pytest.raises(OptionError, match="'refresh' expects bool"):
        get_instrument("dump-ir", {"dump_dir": "out", "refresh": "maybe"})
