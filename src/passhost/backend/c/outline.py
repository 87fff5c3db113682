"""Parallel loops as task functions: the body of a ``parallel`` loop is printed into a
function of its own, run over ranges of the loop's iterations by the unit's thread pool.

For a parallel loop ``N`` of function ``f`` the unit gets

* ``struct f_parN``: a :c:type:`ph_range` (first iteration, count, tasks) followed by the
  locals of ``f`` the body uses (its *captures*: parameters, let values, allocations,
  enclosing loop variables) and, when the body can fail, where ``f`` keeps its status;
* ``f_parN_body(captures..., ph_first, ph_last[, status])``: the loop over iterations
  ``[ph_first, ph_last)``, each capture a parameter under the local's own name, so that the
  body prints exactly as it would inline (``restrict`` kept for parameters of ``f`` that no
  other capture points into);
* ``f_parN(ctx, task)``: the task, calling the body over its share of the iterations.

``f`` fills the struct and calls ``ph_parallel_for`` (:func:`.runtime.threads_section`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

__all__ = ["Local", "OutlinedLoop", "captured"]

_INDENT = "    "
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NOT_CODE = re.compile(r'"(?:[^"\\\n]|\\.)*"|/\*.*?\*/', re.S)  # string literals, comments


class Local:
    """A local of a printed function a parallel body may capture: its C type as a
    declaration prefix (``"const float *"``, ``"int64_t "``), whether it may be passed as a
    ``restrict`` pointer, and the local whose memory it points into (its *root*)."""

    __slots__ = ("ctype", "restrict", "root")

    def __init__(self, ctype: str, restrict: bool = False, root: str | None = None) -> None:
        self.ctype = ctype
        self.restrict = restrict
        self.root = root

    def declaration(self, name: str, restrict: bool) -> str:
        """The declaration of ``name`` of this type (``restrict`` when asked and allowed)."""
        keyword = "restrict " if restrict and self.restrict else ""
        return f"{self.ctype}{keyword}{name}"


def captured(body: Iterable[str], outer: Mapping[str, Local]) -> list[str]:
    """The names of ``outer`` that the lines of ``body`` use, in ``outer``'s order."""
    words = set()
    for line in body:
        words.update(_WORD.findall(_NOT_CODE.sub(" ", line)))
    return [name for name in outer if name in words]


class OutlinedLoop:
    """One parallel loop's struct, body function and task function (see the module)."""

    __slots__ = ("body", "captures", "fails", "symbol")

    def __init__(self, symbol: str, captures: dict[str, Local], body: list[str],
                 fails: bool) -> None:
        self.symbol = symbol
        self.captures = captures
        self.body = body  # the body function's statements, indented one level
        self.fails = fails

    def call(self, ind: int, first: str, end: str) -> list[str]:
        """The lines running the loop over ``[first, end)`` from the enclosing function."""
        pad = _INDENT * ind
        fields = [f".ph_range = {{(int64_t)({first}), (int64_t)({end}) - (int64_t)({first}),"
                  " 0}"]
        fields += [f".{name} = {name}" for name in self.captures]
        if self.fails:
            fields += [".ph_status = &ph_status", ".ph_error = &ph_error"]
        return [f"{pad}{{",
                f"{pad}{_INDENT}struct {self.symbol} ph_ctx = {{{', '.join(fields)}}};",
                f"{pad}{_INDENT}ph_parallel_for(&ph_ctx.ph_range, {self.symbol});",
                f"{pad}}}"]

    def text(self) -> str:
        """The struct, the body function and the task function."""
        sym = self.symbol
        fields = ["    struct ph_range ph_range;"]
        fields += [f"    {local.declaration(name, False)};"
                   for name, local in self.captures.items()]
        roots: dict[str, int] = {}
        for name, local in self.captures.items():
            root = local.root or name
            roots[root] = roots.get(root, 0) + 1
        params = [local.declaration(name, roots[local.root or name] == 1)
                  for name, local in self.captures.items()]
        params += ["int64_t ph_first", "int64_t ph_last"]
        args = [f"ph_ctx->{name}" for name in self.captures] + ["ph_first", "ph_last"]
        if self.fails:
            fields += ["    int32_t *ph_status;", "    const char **ph_error;"]
            params += ["int32_t *ph_shared_status", "const char **ph_shared_error"]
            args += ["ph_ctx->ph_status", "ph_ctx->ph_error"]
        body = list(self.body)
        if self.fails:
            body = ["    int32_t ph_status = 0;", "    const char *ph_error = NULL;", *body,
                    "    if (ph_status != 0)",
                    "        ph_fail(ph_shared_status, ph_shared_error, ph_status, ph_error);"]
        return "\n".join([
            f"struct {sym} {{", *fields, "};", "",
            f"static void {sym}_body({', '.join(params)})", "{", *body, "}", "",
            f"static void {sym}(void *ph_arg, int64_t ph_task)", "{",
            f"    const struct {sym} *ph_ctx = (const struct {sym} *)ph_arg;",
            "    int64_t ph_first, ph_last;",
            "    ph_task_range(&ph_ctx->ph_range, ph_task, &ph_first, &ph_last);",
            f"    {sym}_body({', '.join(args)});", "}", ""])
