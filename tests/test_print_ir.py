"""The PrintIR pass: an ordinary, instrumented pass that writes the module to stderr."""

from __future__ import annotations

from passhost.transform import PassContext, PrintIR, Sequential, get_pass
from passlog import instrument, make_module


def test_print_ir_writes_header_and_module_and_returns_it(capsys):
    mod = make_module()
    assert PrintIR("after parsing")(mod) is mod
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"PrintIR(after parsing):\n{mod.astext(show_meta_data=False)}\n"


def test_print_ir_is_instrumented_like_any_pass(capsys):
    log: list[str] = []
    with PassContext(instruments=[instrument("i1", log)]):
        Sequential([PrintIR()])(make_module())
    assert log == ["i1.enter", "i1.should_run(sequential)", "i1.before(sequential)",
                   "i1.should_run(PrintIR)", "i1.before(PrintIR)", "i1.after(PrintIR)",
                   "i1.after(sequential)", "i1.exit"]
    assert capsys.readouterr().err.startswith("PrintIR():\n")


def test_print_ir_from_the_registry_with_text_options(plugin_host, capsys):
    printer = get_pass("PrintIR", {"header": "here", "show_meta_data": "true"}, from_text=True)
    assert (printer.info.name, printer.header, printer.show_meta_data) == (
        "PrintIR", "here", True)
    mod = make_module()
    printer(mod)
    assert capsys.readouterr().err == f"PrintIR(here):\n{mod.astext()}\n"
