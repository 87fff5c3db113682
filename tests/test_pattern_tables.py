"""Pattern tables, registered through the plugin host like every named extension: plugins
return ``PatternTableSpec(name, factory, summary)``; a table is made for a target
(``factory(target)``), by name or from a target kind's own ``pattern_table``; two plugins
with one name conflict; bad entries are clean errors."""

from __future__ import annotations

import pytest

from passhost.errors import OptionError, PasshostError, UnknownNameError
from passhost.plugins import INT, OptionSpec, PatternTableSpec, get_host, hookimpl
from passhost.relay.dataflow_pattern import get_pattern_table, is_op, wildcard
from passhost.target import Target, TargetKind, TargetKindError
from passhost.testing import registered, use_host


def _relu_table(target):
    return [("cmsis-nn.relu", is_op("nn.relu")(wildcard()))]


class _TablePlugin:
    """A plugin registering the pattern tables it is given (name -> factory)."""

    def __init__(self, **tables):
        self.tables = {name.replace("_", "-"): factory for name, factory in tables.items()}

    @hookimpl
    def passhost_register_pattern_tables(self):
        return [PatternTableSpec(name, factory, "a test table")
                for name, factory in self.tables.items()]


def test_pattern_tables_come_from_plugins_and_are_made_for_a_target():
    entry = ("t.relu", is_op("nn.relu")(wildcard()))
    made_for = []

    def table(target):
        made_for.append(target)
        return [(*entry, bool)]

    with use_host(), registered(_TablePlugin(test_table=table), "tables"):
        assert made_for == []  # registering makes no table
        assert get_pattern_table("test-table") == ((*entry, bool),)
        assert get_pattern_table("test-table", target="the target") == ((*entry, bool),)
        assert made_for == [None, "the target"]
        assert get_host().registries.pattern_tables.entry("test-table").provider == "tables"
        with pytest.raises(UnknownNameError, match=r"did you mean 'test-table'"):
            get_pattern_table("test-tabel")
    with use_host(), pytest.raises(UnknownNameError, match="unknown pattern table"):
        get_pattern_table("test-table")


def test_two_plugins_with_one_table_name_conflict():
    with use_host(), registered(_TablePlugin(twice=lambda target: []), "one"), \
            registered(_TablePlugin(twice=lambda target: []), "two"):
        assert get_host().registries.conflicts() == [("pattern table", "twice", ("one", "two"))]
        with pytest.raises(PasshostError, match="twice"):
            get_pattern_table("twice")


@pytest.mark.parametrize(("entries", "message"), [
    ([("only a name",)], "entry 0 must be"),
    ([("t.x", "nn.relu")], "not a Pattern"),
    ([("t.x", wildcard(), 3)], "not callable"),
])
def test_bad_pattern_table_entries(entries, message):
    with use_host(), registered(_TablePlugin(bad=lambda target: entries), "tables"), \
            pytest.raises(OptionError, match=message):
        get_pattern_table("bad")


def test_a_kind_pattern_table_is_made_for_the_target_built():
    made_for = []
    kind = TargetKind("k", options=(OptionSpec("level", INT, 0),),
                      pattern_table=lambda target: made_for.append(target) or _relu_table(None))
    target = Target.from_kind(kind, {"level": 2})
    assert kind.pattern_entries(target)[0][0] == "cmsis-nn.relu"
    assert made_for == [target]


def test_a_kind_names_a_registered_pattern_table():
    kind = TargetKind("k", pattern_table="example")
    assert [name for name, _, _ in kind.pattern_entries()] == [
        "example.conv2d_bias_relu", "example.dense_add"]
    with pytest.raises(UnknownNameError, match="unknown pattern table 'exampel'"):
        TargetKind("k", pattern_table="exampel").pattern_entries()
    with pytest.raises(TargetKindError, match="is not a pattern table name"):
        TargetKind("k", pattern_table="not a name")
