"""Textual pipelines: parsing, canonical formatting, building through the registries."""

from __future__ import annotations

import json
import re
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from passhost.errors import ParseError
from passhost.instrument import PassInstrument
from passhost.ir import IRModule
from passhost.plugins import (
    FLOAT,
    INT,
    STR,
    STR_LIST_MAP,
    OptionSpec,
    PipelineSpec,
    hookimpl,
)
from passhost.transform import (
    PassContext,
    PassElement,
    Pipeline,
    PipelineError,
    Sequential,
    SequentialElement,
    build_pipeline,
    format_pipeline,
    module_pass,
    parse_pipeline,
    pass_spec,
)

# -- parsing --------------------------------------------------------------------------------

EXAMPLE = ("InferType,FoldConstant,"
           "sequential{ConvertLayout{desired_layouts=nn.conv2d:NHWC:HWIO},FoldConstant}")


def test_parse_the_example():
    assert parse_pipeline(EXAMPLE) == Pipeline((
        PassElement("InferType"),
        PassElement("FoldConstant"),
        SequentialElement((
            PassElement("ConvertLayout", (("desired_layouts", "nn.conv2d:NHWC:HWIO"),)),
            PassElement("FoldConstant"),
        )),
    ))


@pytest.mark.parametrize("text", ["", " ", "\n\t  \r\n"])
def test_empty_text_is_an_empty_pipeline(text):
    assert parse_pipeline(text) == Pipeline(())
    assert parse_pipeline(text).elements == ()


def test_sequential_bodies_may_be_empty_and_nest():
    parsed = parse_pipeline("sequential{},sequential,sequential{ sequential{ A } ,B}")
    assert parsed == Pipeline((
        SequentialElement(()),
        SequentialElement(()),
        SequentialElement((SequentialElement((PassElement("A"),)), PassElement("B"))),
    ))


def test_whitespace_and_newlines_between_tokens_are_ignored():
    spaced = """
        InferType ,
          FoldConstant,sequential {
            ConvertLayout {
              desired_layouts = nn.conv2d:NHWC:HWIO
            } ,
            FoldConstant
          }
    """
    assert parse_pipeline(spaced) == parse_pipeline(EXAMPLE)


def test_elements_remember_line_and_column():
    parsed = parse_pipeline("A,\n  sequential{\n\tB{x=1},  C}")
    a, seq = parsed.elements
    b, c = seq.children
    assert (a.line, a.column) == (1, 1)
    assert (seq.line, seq.column) == (2, 3)
    assert (b.line, b.column) == (3, 2)
    assert (c.line, c.column) == (3, 11)


def test_positions_take_no_part_in_equality():
    assert PassElement("A", line=3, column=4) == PassElement("A")
    assert hash(PassElement("A", line=3, column=4)) == hash(PassElement("A"))
    assert parse_pipeline("  A") == parse_pipeline("A")
    assert PassElement("A") != PassElement("B")
    assert PassElement("A", {"x": "1"}) != PassElement("A", {"x": "2"})


def test_options_keep_their_order_and_their_text():
    (element,) = parse_pipeline("Tile{b=2, a=0.50, c=nn.conv2d:NHWC;x:y}").elements
    assert element.options == (("b", "2"), ("a", "0.50"), ("c", "nn.conv2d:NHWC;x:y"))


@pytest.mark.parametrize(("written", "value"), [
    ('""', ""),
    ('"a,b"', "a,b"),
    ('"{x}"', "{x}"),
    ('"k=v"', "k=v"),
    ('"two words"', "two words"),
    ('"say \\"hi\\""', 'say "hi"'),
    ('"tab\\tnew\\nline"', "tab\tnew\nline"),
    ('"\\u00e9\\\\"', "\u00e9\\"),
    ('"plain"', "plain"),
    ("back\\slash", "back\\slash"),
    ("a:b;c/d+e-1.5", "a:b;c/d+e-1.5"),
    ("\u00e9t\u00e9", "\u00e9t\u00e9"),
])
def test_option_values_bare_and_quoted(written, value):
    (element,) = parse_pipeline(f"P{{opt={written}}}").elements
    assert element.options == (("opt", value),)


def test_names_may_hold_dots_dashes_digits_and_underscores():
    parsed = parse_pipeline("my-pass_2.x{nn.conv2d=NHWC},_private")
    assert [e.name for e in parsed.elements] == ["my-pass_2.x", "_private"]
    assert parsed.elements[0].options == (("nn.conv2d", "NHWC"),)


def test_the_data_model_checks_what_it_holds():
    assert PassElement("A", {"x": "1", "y": ""}).options == (("x", "1"), ("y", ""))
    with pytest.raises(ValueError, match="use SequentialElement"):
        PassElement("sequential")
    with pytest.raises(ValueError, match="found '9lives'"):
        PassElement("9lives")
    with pytest.raises(ValueError, match=r"option name .* found 'a b'"):
        PassElement("A", {"a b": "1"})
    with pytest.raises(ValueError, match="duplicate option 'x'"):
        PassElement("A", [("x", "1"), ("x", "2")])
    with pytest.raises(TypeError, match="option 'x' has a text value, found int 1"):
        PassElement("A", {"x": 1})
    with pytest.raises(TypeError, match="found str 'A'"):
        Pipeline(("A",))
    with pytest.raises(TypeError, match="a pipeline is text"):
        parse_pipeline(None)


# -- formatting -----------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "canonical"), [
    ("", ""),
    (EXAMPLE, EXAMPLE),
    (" A , B { x = 1 , y = \"2\" } ", "A,B{x=1,y=2}"),
    ("sequential", "sequential{}"),
    ("sequential{ sequential { } }", "sequential{sequential{}}"),
    ('P{a="",b="x y",c="a,b",d="{",e="=",f="\\"",g="\\u0041"}',
     'P{a="",b="x y",c="a,b",d="{",e="=",f="\\"",g=A}'),
    ('P{v="line\\nbreak",w="tab\\there"}', 'P{v="line\\nbreak",w="tab\\there"}'),
    ("P{v=back\\slash}", "P{v=back\\slash}"),
    ('P{v="\u00e9 x"}', 'P{v="\u00e9 x"}'),
])
def test_canonical_text(text, canonical):
    parsed = parse_pipeline(text)
    assert format_pipeline(parsed) == canonical
    assert str(parsed) == canonical
    assert format_pipeline(parse_pipeline(canonical)) == canonical
    assert parse_pipeline(canonical) == parsed


def test_elements_print_as_their_text():
    element = PassElement("ConvertLayout", {"desired_layouts": "nn.conv2d:NHWC:HWIO"})
    assert str(element) == "ConvertLayout{desired_layouts=nn.conv2d:NHWC:HWIO}"
    assert str(SequentialElement((PassElement("A"), element))) == (
        "sequential{A,ConvertLayout{desired_layouts=nn.conv2d:NHWC:HWIO}}")


def test_format_takes_a_pipeline():
    with pytest.raises(TypeError, match="takes a Pipeline, found str"):
        format_pipeline("A,B")


def test_deep_nesting_does_not_hit_the_recursion_limit():
    depth = sys.getrecursionlimit() * 3
    text = "sequential{" * depth + "A" + "}" * depth
    parsed = parse_pipeline(text)
    assert format_pipeline(parsed) == text
    element = parsed.elements[0]
    for _ in range(depth):
        (element,) = element.children
    assert element.name == "A"


# -- round trip (property) ------------------------------------------------------------------

NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,10}", fullmatch=True).filter(
    lambda name: name != "sequential")
VALUES = st.one_of(
    st.text(max_size=12),
    st.text(alphabet=',{}="\\ \n\t\r:;=./-_aZ9\u00e9\u2028\x00\x1f', max_size=12),
)
OPTIONS = st.lists(st.tuples(NAMES, VALUES), max_size=4, unique_by=lambda option: option[0])
PASSES = st.builds(PassElement, NAMES, OPTIONS)
ELEMENTS = st.recursive(
    PASSES, lambda children: st.builds(SequentialElement, st.lists(children, max_size=4)),
    max_leaves=25)
PIPELINES = st.builds(Pipeline, st.lists(ELEMENTS, max_size=5))
SPACE = st.text(alphabet=" \t\n\r", max_size=3)


@settings(max_examples=80, deadline=None)
@given(PIPELINES)
def test_format_then_parse_is_the_identity(pipeline):
    text = format_pipeline(pipeline)
    assert parse_pipeline(text) == pipeline
    assert format_pipeline(parse_pipeline(text)) == text


def _spaced(pipeline: Pipeline, data: st.DataObject) -> str:
    """The pipeline's text with random whitespace around tokens and quotes on some bare
    values: a non-canonical spelling of the same pipeline."""
    def space() -> str:
        return data.draw(SPACE)

    def element(item) -> str:
        if isinstance(item, SequentialElement):
            body = ",".join(space() + element(c) + space() for c in item.children)
            return "sequential" + space() + "{" + body + space() + "}"
        if not item.options:
            return item.name
        options = []
        for key, value in item.options:
            quote = data.draw(st.booleans()) or not value or not re.fullmatch(
                r'[^,{}="\s]+', value)
            written = json.dumps(value, ensure_ascii=data.draw(st.booleans())) if quote else value
            options.append(space() + key + space() + "=" + space() + written + space())
        return item.name + space() + "{" + ",".join(options) + "}"

    return space() + ",".join(element(e) + space() for e in pipeline.elements) + space()


@settings(max_examples=50, deadline=None)
@given(PIPELINES, st.data())
def test_any_spelling_parses_to_the_same_pipeline(pipeline, data):
    text = _spaced(pipeline, data)
    assert parse_pipeline(text) == pipeline


def test_canonical_text_holds_no_whitespace_outside_quotes():
    pipeline = Pipeline((PassElement("A", {"x": "a b", "y": "c"}), SequentialElement(())))
    assert format_pipeline(pipeline) == 'A{x="a b",y=c},sequential{}'


# -- syntax errors --------------------------------------------------------------------------

SYNTAX_ERRORS = [
    ("A B", 1, 3, "expected ',' or end of pipeline, found 'B'"),
    ("A}", 1, 2, "expected ',' or end of pipeline, found '}'"),
    ("A{x=1}}", 1, 7, "expected ',' or end of pipeline, found '}'"),
    ("A@b", 1, 2, "expected ',' or end of pipeline, found '@b'"),
    ("A=1", 1, 2, "expected ',' or end of pipeline, found '='"),
    (",", 1, 1, "expected a pass or pipeline name, found ','"),
    ("A,", 1, 3, "expected a pass or pipeline name, found end of pipeline"),
    ("A,,B", 1, 3, "expected a pass or pipeline name, found ','"),
    ("9abc", 1, 1, "expected a pass or pipeline name, found '9abc'"),
    ('"A"', 1, 1, "expected a pass or pipeline name, found '\"'"),
    ("{x=1}", 1, 1, "expected a pass or pipeline name, found '{'"),
    ("sequential{A,}", 1, 14, "expected a pass or pipeline name, found '}'"),
    ("sequential{,A}", 1, 12, "expected a pass or pipeline name, found ','"),
    ("sequential{A", 1, 13,
     "expected ',' or '}', found end of pipeline ('{' at 1:11 is not closed)"),
    ("sequential{\n  sequential{", 2, 14,
     "expected a pass or pipeline name, found end of pipeline ('{' at 2:13 is not closed)"),
    ("sequential{A B}", 1, 14, "expected ',' or '}', found 'B'"),
    ("sequential{A}}", 1, 14, "expected ',' or end of pipeline, found '}'"),
    ("sequential{x=1}", 1, 13, "expected ',' or '}', found '='"),
    ("P{}", 1, 3, "expected an option name for 'P', found '}'"),
    ("P{=1}", 1, 3, "expected an option name for 'P', found '='"),
    ("P{x=1,}", 1, 7, "expected an option name for 'P', found '}'"),
    ("P{x}", 1, 4, "expected '=' after option 'x', found '}'"),
    ("P{x 1}", 1, 5, "expected '=' after option 'x', found '1'"),
    ("P{x=}", 1, 5, "expected a value for option 'x', found '}'"),
    ("P{x==1}", 1, 5, "expected a value for option 'x', found '='"),
    ("P{x=,y=2}", 1, 5, "expected a value for option 'x', found ','"),
    ("P{x=1", 1, 6, "expected ',' or '}', found end of pipeline ('{' at 1:2 is not closed)"),
    ("P{x=1 y=2}", 1, 7, "expected ',' or '}', found 'y'"),
    ("P{x=1{}", 1, 6, "expected ',' or '}', found '{'"),
    ('P{x="a"b}', 1, 8, "expected ',' or '}', found 'b'"),
    ("P{x=a b}", 1, 7, "expected ',' or '}', found 'b'"),
    ("P{x\n=", 2, 2,
     "expected a value for option 'x', found end of pipeline ('{' at 1:2 is not closed)"),
    ("P{x=1,x=2}", 1, 7, "duplicate option 'x' of 'P' (first given at 1:3)"),
    ("A,\n P{\n  a=1,\n  a=2}", 4, 3, "duplicate option 'a' of 'P' (first given at 3:3)"),
    ('P{x="abc}', 1, 5, "unterminated string: no closing '\"'"),
    ('P{x="abc\\"}', 1, 5, "unterminated string: no closing '\"'"),
    ('P{x="a\\qb"}', 1, 7,
     "invalid escape '\\q' in a quoted string, expected one of "
     "\\\" \\\\ \\/ \\b \\f \\n \\r \\t \\uXXXX"),
    ('P{x="\\u12g4"}', 1, 6, "invalid \\uXXXX escape in a quoted string, expected four hex "
                             "digits"),
    ('A,\nP{x="a\nb"}', 2, 7,
     "control character '\\n' in a quoted string must be written as an escape"),
    ('P{x="a\tb"}', 1, 7,
     "control character '\\t' in a quoted string must be written as an escape"),
]


@pytest.mark.parametrize(("text", "line", "column", "message"), SYNTAX_ERRORS)
def test_syntax_errors_say_where_what_was_expected_and_found(text, line, column, message):
    with pytest.raises(ParseError) as caught:
        parse_pipeline(text)
    error = caught.value
    assert (error.line, error.column, error.message) == (line, column, message)
    assert error.source_name == "<pipeline>"
    assert str(error) == f"<pipeline>:{line}:{column}: {message}"
    assert not isinstance(error, PipelineError)


def test_syntax_errors_stop_build_pipeline_too():
    with pytest.raises(ParseError, match=re.escape("<pipeline>:1:3: expected")):
        build_pipeline("A B")


# -- building -------------------------------------------------------------------------------

def _recording_pass(name, calls, opt_level=0, required=()):
    """A pass class that records its name and options in ``calls`` when it runs."""

    @module_pass(name=name, opt_level=opt_level, required=required)
    class Recorder:
        def __init__(self, **options):
            self.options = options

        def transform_module(self, mod, ctx):
            calls.append((name, self.options))
            return mod

    return Recorder


class _Plugin:
    """A test plugin registering the given pass and pipeline specs."""

    def __init__(self, passes=(), pipelines=()):
        self.passes = list(passes)
        self.pipelines = list(pipelines)

    @hookimpl
    def passhost_register_passes(self):
        return self.passes

    @hookimpl
    def passhost_register_pipelines(self):
        return self.pipelines


PIPELINE_SPECS = [
    PipelineSpec("standard", "InferType, FoldConstant", "type inference then folding"),
    PipelineSpec("outer", "standard,sequential{Tile{factor=2}}"),
    PipelineSpec("empty", ""),
    PipelineSpec("self-loop", "InferType,self-loop"),
    PipelineSpec("loop-a", "InferType,loop-b"),
    PipelineSpec("loop-b", "sequential{FoldConstant,loop-c}"),
    PipelineSpec("loop-c", "loop-a"),
    PipelineSpec("uses-loop", "loop-b"),
    PipelineSpec("bad-ref", "InferType,FoldConstnt"),
    PipelineSpec("uses-bad-ref", "standard,\n  bad-ref"),
    PipelineSpec("broken", "InferType,,"),
    PipelineSpec("InferType", "FoldConstant"),
]


@pytest.fixture
def calls(plugin_host):
    """The calls of the registered test passes, in order. They stand in for the built-in
    passes of the same names, so the built-in plugin is set aside."""
    plugin_host.unregister("builtin")
    log = []
    passes = [
        pass_spec(_recording_pass("InferType", log), "infer types"),
        pass_spec(_recording_pass("FoldConstant", log, opt_level=2), "fold constants"),
        pass_spec(_recording_pass("ConvertLayout", log, opt_level=3), "convert layouts",
                  options=[OptionSpec("desired_layouts", STR_LIST_MAP, {}, "op:layouts")]),
        pass_spec(_recording_pass("Tile", log), "tile loops", options=[
            OptionSpec("factor", INT, 1, "tile size"),
            OptionSpec("scale", FLOAT, 1.0, "a float"),
            OptionSpec("label", STR, "", "a string"),
        ]),
    ]
    plugin_host.register(_Plugin(passes, PIPELINE_SPECS), "test-passes")
    return log


def _names(seq):
    """The tree of pass names of a built pipeline: Sequentials as (name, [children])."""
    if isinstance(seq, Sequential):
        return (seq.info.name, [_names(p) for p in seq.passes])
    return seq.info.name


def test_build_makes_a_sequential_of_registered_passes(calls):
    built = build_pipeline("InferType,sequential{FoldConstant,Tile},FoldConstant")
    assert isinstance(built, Sequential)
    assert _names(built) == ("sequential", [
        "InferType", ("sequential", ["FoldConstant", "Tile"]), "FoldConstant"])
    assert built.passes[0].info.opt_level == 0
    assert built.passes[2].info.opt_level == 2
    assert _names(build_pipeline("", name="nothing")) == ("nothing", [])
    assert _names(build_pipeline("InferType", name="mine")) == ("mine", ["InferType"])


def test_build_takes_a_parsed_pipeline(calls):
    built = build_pipeline(Pipeline((PassElement("Tile", {"factor": "7"}),
                                     SequentialElement((PassElement("InferType"),)))))
    assert _names(built) == ("sequential", ["Tile", ("sequential", ["InferType"])])
    assert built.passes[0].options == {"factor": 7}
    with pytest.raises(TypeError, match="text or a Pipeline, found list"):
        build_pipeline(["InferType"])


def test_options_arrive_typed(calls):
    built = build_pipeline(
        'ConvertLayout{desired_layouts=nn.conv2d:NHWC:HWIO},'
        'Tile{factor=4, scale=0.25, label="two words"},'
        'ConvertLayout{desired_layouts="nn.conv2d:NHWC:HWIO;nn.max_pool2d:NHWC"},Tile')
    layout, tile, layouts, default_tile = built.passes
    assert layout.options == {"desired_layouts": {"nn.conv2d": ("NHWC", "HWIO")}}
    assert tile.options == {"factor": 4, "scale": 0.25, "label": "two words"}
    assert layouts.options == {"desired_layouts": {"nn.conv2d": ("NHWC", "HWIO"),
                                                   "nn.max_pool2d": ("NHWC",)}}
    assert default_tile.options == {}


def test_a_named_pipeline_becomes_a_sequential_named_after_it(calls):
    built = build_pipeline("outer,empty,Tile")
    assert _names(built) == ("sequential", [
        ("outer", [("standard", ["InferType", "FoldConstant"]), ("sequential", ["Tile"])]),
        ("empty", []),
        "Tile",
    ])
    assert built.passes[0].passes[1].passes[0].options == {"factor": 2}


def test_passes_are_found_before_pipelines_of_the_same_name(calls):
    assert _names(build_pipeline("InferType")) == ("sequential", ["InferType"])


def test_a_named_pipeline_takes_no_options(calls):
    with pytest.raises(PipelineError) as caught:
        build_pipeline("InferType, standard{x=1}")
    error = caught.value
    assert (error.line, error.column, error.source_name) == (1, 12, "<pipeline>")
    assert error.message == "'standard' is a named pipeline and takes no options"
    assert error.element == "standard"


def test_a_pipeline_that_refers_to_itself_is_an_error(calls):
    with pytest.raises(PipelineError) as caught:
        build_pipeline("self-loop")
    error = caught.value
    assert error.message == "pipeline 'self-loop' refers to itself: self-loop -> self-loop"
    assert (error.source_name, error.line, error.column) == ("<pipeline self-loop>", 1, 11)
    assert error.__notes__ == ["in pipeline 'self-loop' used at <pipeline>:1:1"]


def test_an_indirect_cycle_names_the_whole_cycle(calls):
    with pytest.raises(PipelineError) as caught:
        build_pipeline("FoldConstant,\n uses-loop")
    error = caught.value
    assert error.message == (
        "pipeline 'loop-b' refers to itself: loop-b -> loop-c -> loop-a -> loop-b")
    assert (error.source_name, error.line, error.column) == ("<pipeline loop-a>", 1, 11)
    assert error.__notes__ == [
        "in pipeline 'loop-a' used at <pipeline loop-c>:1:1",
        "in pipeline 'loop-c' used at <pipeline loop-b>:1:25",
        "in pipeline 'loop-b' used at <pipeline uses-loop>:1:1",
        "in pipeline 'uses-loop' used at <pipeline>:2:2",
    ]


def test_a_pipeline_used_twice_side_by_side_is_not_a_cycle(calls):
    built = build_pipeline("standard,standard,sequential{standard}")
    assert [_names(p) for p in built.passes] == [
        ("standard", ["InferType", "FoldConstant"]),
        ("standard", ["InferType", "FoldConstant"]),
        ("sequential", [("standard", ["InferType", "FoldConstant"])]),
    ]


def test_unknown_names_list_close_matches_from_both_registries(calls):
    with pytest.raises(PipelineError) as caught:
        build_pipeline("InferType,\n  FoldConstnt")
    error = caught.value
    assert isinstance(error, ParseError)
    assert (error.line, error.column, error.source_name) == (2, 3, "<pipeline>")
    assert error.candidates == ("FoldConstant",)
    assert error.message == "unknown pass or pipeline 'FoldConstnt'; did you mean 'FoldConstant'?"

    with pytest.raises(PipelineError) as caught:
        build_pipeline("sequential{standrd}")
    assert caught.value.candidates == ("standard",)
    assert (caught.value.line, caught.value.column) == (1, 12)

    with pytest.raises(PipelineError, match=r"unknown pass or pipeline 'Zzz'$"):
        build_pipeline("Zzz")


def test_errors_inside_a_named_pipeline_point_into_its_text(calls):
    with pytest.raises(PipelineError) as caught:
        build_pipeline("Tile, uses-bad-ref")
    error = caught.value
    assert (error.source_name, error.line, error.column) == ("<pipeline bad-ref>", 1, 11)
    assert error.candidates == ("FoldConstant",)
    assert error.__notes__ == ["in pipeline 'bad-ref' used at <pipeline uses-bad-ref>:2:3",
                               "in pipeline 'uses-bad-ref' used at <pipeline>:1:7"]

    with pytest.raises(ParseError) as caught:
        build_pipeline("broken")
    error = caught.value
    assert (error.source_name, error.line, error.column) == ("<pipeline broken>", 1, 11)
    assert error.message == "expected a pass or pipeline name, found ','"
    assert error.__notes__ == ["in pipeline 'broken' used at <pipeline>:1:1"]


@pytest.mark.parametrize(("text", "column", "message"), [
    ("InferType,Tile{factr=2}", 11,
     "unknown option 'factr' of pass 'Tile'; did you mean 'factor'?"),
    ("Tile{factor=two}", 1,
     "option of pass 'Tile': 'factor' expects int, found 'two'"),
    ("Tile{factor=1,scale=big}", 1,
     "option of pass 'Tile': 'scale' expects float, found 'big'"),
    ("sequential{InferType{x=1}}", 12, "unknown option 'x' of pass 'InferType'"),
    ("ConvertLayout{desired_layouts=:NHWC}", 1,
     "option of pass 'ConvertLayout': 'desired_layouts' expects map of str to list of str"),
])
def test_option_errors_carry_the_element_position(calls, text, column, message):
    with pytest.raises(PipelineError) as caught:
        build_pipeline(text)
    error = caught.value
    assert (error.line, error.column, error.source_name) == (1, column, "<pipeline>")
    assert error.message.startswith(message)
    assert str(error).startswith(f"<pipeline>:1:{column}: {message}")
    assert error.__cause__ is not None


def test_unknown_option_errors_keep_the_close_matches(calls):
    with pytest.raises(PipelineError) as caught:
        build_pipeline("Tile{labl=x}")
    assert caught.value.candidates == ("label",)


def test_a_pass_name_registered_twice_is_an_error_naming_both(calls, plugin_host):
    plugin_host.register(_Plugin([pass_spec(_recording_pass("Tile", []))]), "other")
    with pytest.raises(PipelineError, match="'test-passes' and 'other'") as caught:
        build_pipeline("InferType,Tile")
    assert caught.value.column == 11


def test_a_failing_pass_factory_keeps_its_error_and_gains_a_note(calls, plugin_host):
    @module_pass(name="Explode")
    class Explode:
        def __init__(self):
            raise RuntimeError("boom")

        def transform_module(self, mod, ctx):
            return mod

    plugin_host.register(_Plugin([pass_spec(Explode)], [PipelineSpec("kaboom", "Explode")]),
                         "exploding")
    with pytest.raises(RuntimeError, match="boom") as caught:
        build_pipeline("kaboom")
    assert caught.value.__notes__ == [
        "while building pass 'Explode' at <pipeline kaboom>:1:1",
        "in pipeline 'kaboom' used at <pipeline>:1:1",
    ]


# -- running --------------------------------------------------------------------------------

class _Before(PassInstrument):
    """Records the name of every pass that runs."""

    def __init__(self):
        self.names = []

    def run_before_pass(self, mod, info):
        self.names.append(info.name)


def test_a_built_pipeline_runs_its_passes_in_order(calls):
    built = build_pipeline("InferType,sequential{Tile{factor=3},FoldConstant},standard,"
                           "ConvertLayout{desired_layouts=nn.conv2d:NHWC:HWIO}")
    mod = IRModule()
    before = _Before()
    with PassContext(opt_level=3, instruments=[before]):
        assert built(mod) is mod
    assert calls == [
        ("InferType", {}),
        ("Tile", {"factor": 3}),
        ("FoldConstant", {}),
        ("InferType", {}),
        ("FoldConstant", {}),
        ("ConvertLayout", {"desired_layouts": {"nn.conv2d": ("NHWC", "HWIO")}}),
    ]
    assert before.names == ["sequential", "InferType", "sequential", "Tile", "FoldConstant",
                            "standard", "InferType", "FoldConstant", "ConvertLayout"]


def test_a_built_pipeline_is_gated_by_the_context(calls):
    built = build_pipeline("InferType,standard,ConvertLayout,Tile")
    with PassContext(opt_level=2, disabled_pass=["FoldConstant"]):
        built(IRModule())
    assert [name for name, _ in calls] == ["InferType", "InferType", "Tile"]
    calls.clear()
    with PassContext(opt_level=1, disabled_pass=["standard"], required_pass=["ConvertLayout"]):
        built(IRModule())
    assert [name for name, _ in calls] == ["InferType", "ConvertLayout", "Tile"]
