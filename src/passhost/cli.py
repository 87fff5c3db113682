"""The ``passhost`` command: plugin and registry listings, ``opt``, ``compile`` and ``run``
(in :mod:`passhost.cli_compile`), the model zoo.

Only argument parsing lives at module level, so ``passhost --version`` imports no plugin
machinery; each command imports what it needs. The tables and JSON documents are made by
:mod:`passhost.cli_listing`.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from passhost._version import __version__
from passhost.errors import PasshostError


def _zoo_list(_args: argparse.Namespace) -> int:
    from passhost.relay.testing.zoo import list_models

    for name, desc in list_models():
        print(f"{name:<14} {desc}")
    return 0


def _zoo_show(args: argparse.Namespace) -> int:
    from passhost.relay.testing.zoo import get_model

    mod, _params = get_model(args.model)
    print(mod.astext(show_meta_data=False))
    return 0


def _zoo_run(args: argparse.Namespace) -> int:
    import numpy as np

    from passhost.relay.interpreter import Interpreter
    from passhost.relay.testing.op_examples import random_arrays
    from passhost.relay.testing.zoo import get_model

    mod, params = get_model(args.model)
    main = mod["main"]
    data_params = [p for p in main.params if p.name_hint not in params]
    arrays = random_arrays([p.checked_type for p in data_params], seed=args.seed)
    inputs = {p.name_hint: a for p, a in zip(data_params, arrays)}
    inputs.update(params)
    print(f"model {args.model}: {len(main.params)} parameters, inputs "
          + ", ".join(f"%{p.name_hint}: {p.checked_type}" for p in data_params))
    start = time.perf_counter()
    out = Interpreter(mod).run("main", inputs)
    elapsed = time.perf_counter() - start
    print(f"reference interpreter: {elapsed * 1e3:.1f} ms")
    flat = np.asarray(out).reshape(-1)
    top = np.argsort(flat)[::-1][: args.top]
    print(f"output {np.asarray(out).shape} {np.asarray(out).dtype}; top {len(top)}:")
    for i in top:
        print(f"  [{i}] {flat[i]:.6f}")
    return 0


def _plugins_list(args: argparse.Namespace) -> int:
    import json

    from passhost import cli_listing
    from passhost.plugins.manager import get_host

    host = get_host()
    if args.json:
        print(json.dumps(cli_listing.plugins_document(host, verbose=args.verbose), indent=2))
    else:
        print(cli_listing.plugins_table(host, show_all=args.all, verbose=args.verbose), end="")
    if not args.check:
        return 0
    problems = cli_listing.check_problems(host)
    for problem in problems:
        print(f"passhost: check failed: {problem}", file=sys.stderr)
    return 1 if problems else 0


def _registry_list(args: argparse.Namespace) -> int:
    import json

    from passhost import cli_listing
    from passhost.plugins.manager import get_host

    host = get_host()
    if args.json:
        print(json.dumps(cli_listing.registry_document(host, args.registry), indent=2))
    else:
        print(cli_listing.registry_table(host, args.registry), end="")
    return 0


class CommandError(PasshostError):
    """A command-line value that is wrong: a file that cannot be read, a malformed setting."""


def make_instruments(specs: Sequence[str]) -> list[Any]:
    """The instruments named by ``specs``, each ``NAME`` or ``NAME{key=value,...}`` in the
    textual pipeline syntax, created from the instrument registry with text options."""
    from passhost.plugins.manager import get_host
    from passhost.transform.pipeline import PassElement, parse_pipeline

    registry = get_host().registries.instruments
    instruments = []
    for text in specs:
        elements = parse_pipeline(text, source_name="<instrument>").elements
        if len(elements) != 1 or not isinstance(elements[0], PassElement):
            raise CommandError(f"an instrument is one NAME or NAME{{key=value,...}}, "
                               f"found {text!r}")
        element = elements[0]
        instruments.append(registry.get(element.name).create(dict(element.options),
                                                             from_text=True))
    return instruments


def render_instruments(instruments: Sequence[Any], stream: TextIO | None = None) -> None:
    """Write the text of every instrument that has a callable ``render()`` (the timing
    profile, for one) to ``stream`` (default: stderr)."""
    stream = sys.stderr if stream is None else stream
    for inst in instruments:
        render = getattr(inst, "render", None)
        if callable(render):
            text = render()
            if text:
                stream.write(text if text.endswith("\n") else text + "\n")


def parse_config(items: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` texts as PassContext config, each value read by the registered option's
    type; unknown keys and bad values raise errors naming the key."""
    from passhost.plugins.manager import get_host

    registry = get_host().registries.config_options
    config = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip()
        if not sep or not key:
            raise CommandError(f"--config takes KEY=VALUE, found {item!r}")
        config[key] = registry.get(key).parse(value, "config option")
    return config


def read_module(source: str, bind_params: bool = False) -> Any:
    """The module ``source`` names: ``zoo:MODEL``, a file in the IR text format, or ``-``
    for standard input. ``bind_params`` binds a zoo model's weights as constants."""
    if source.startswith("zoo:"):
        from passhost.relay.testing.zoo import get_model

        mod, params = get_model(source[len("zoo:"):])
        if bind_params:
            from passhost.relay.transform import bind_params_by_name

            mod = mod.with_function("main", bind_params_by_name(mod["main"], params))
        return mod
    from passhost.text import parse_module

    if source == "-":
        return parse_module(sys.stdin.read(), source_name="<stdin>")
    try:
        with open(source, encoding="utf-8") as file:
            text = file.read()
    except (OSError, UnicodeDecodeError) as err:
        raise CommandError(f"cannot read {source}: {getattr(err, 'strerror', None) or err}"
                           ) from None
    return parse_module(text, source_name=source)


def _opt(args: argparse.Namespace) -> int:
    from passhost.cli_debug import debug_config, reproduce_command
    from passhost.transform import PassContext, build_pipeline

    if args.reproduce is not None:
        if args.input is not None or args.passes is not None:
            raise CommandError("--reproduce FILE replays the file's module and passes: give "
                               "no INPUT and no --passes")
        return reproduce_command(args)
    if args.local:
        raise CommandError("--local applies to --reproduce FILE only")
    if args.input is None or args.passes is None:
        raise CommandError("opt needs INPUT and --passes PIPELINE (or --reproduce FILE)")
    config = debug_config(args)
    specs = args.instrument + (["print-after-change"] if args.print_after_change else [])
    instruments = make_instruments(specs)
    passes = build_pipeline(args.passes)
    if args.bind_params and not args.input.startswith("zoo:"):
        raise CommandError("--bind-params applies to zoo models (zoo:MODEL) only")
    mod = read_module(args.input, args.bind_params)
    with PassContext(opt_level=args.opt_level, required_pass=args.required_pass,
                     disabled_pass=args.disabled_pass, instruments=instruments, config=config):
        try:
            out = passes(mod)
        finally:
            render_instruments(instruments)
    write_output(out.astext(show_meta_data=not args.hide_meta_data), args.output)
    return 0


def write_output(text: str, output: str | None, announce: bool = False) -> None:
    """Write ``text`` to the file ``output``, or to standard output when it is None or
    ``-``; ``announce`` prints ``wrote FILE`` on standard error after writing a file."""
    if output in (None, "-"):
        sys.stdout.write(text)
        return
    try:
        with open(output, "w", encoding="utf-8") as file:
            file.write(text)
    except OSError as err:
        raise CommandError(f"cannot write {output}: {err.strerror or err}") from None
    if announce:
        print(f"wrote {output}", file=sys.stderr)


def _opt_level(text: str) -> int:
    try:
        level = int(text)
    except ValueError:
        level = -1
    if level < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, found {text!r}")
    return level


_REGISTRY_COMMANDS = (
    ("passes", "passes", "the registered passes"),
    ("instruments", "instruments", "the registered pass instruments"),
    ("targets", "targets", "the registered target kinds"),
    ("config", "config_options", "the registered PassContext config options"),
    ("pipelines", "pipelines", "the registered named pipelines"),
)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``passhost`` command."""
    parser = argparse.ArgumentParser(
        prog="passhost", description="passhost: pass infrastructure for tensor-program "
                                     "compilers. See docs/cli.md.",
        epilog="The environment variables PASSHOST_LOAD_PLUGINS, PASSHOST_DISABLE_PLUGINS, "
               "PASSHOST_STRICT_PLUGINS and PASSHOST_TRACE_PLUGINS also choose the plugins; "
               "--no-plugins and -p narrow what they select.")
    parser.add_argument("--version", action="version", version=f"passhost {__version__}")
    parser.add_argument("--no-plugins", action="store_true",
                        help="load no installed plugins (like PASSHOST_LOAD_PLUGINS=\"\")")
    parser.add_argument("-p", dest="plugin_flags", action="append", default=[],
                        metavar="no:NAME", help="disable the installed plugin NAME (repeatable)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    plugins = sub.add_parser("plugins", help="the installed plugins")
    plugins_sub = plugins.add_subparsers(dest="plugins_command", metavar="PLUGINS_COMMAND",
                                         required=True)
    plist = plugins_sub.add_parser("list", help="list the plugins, their status and what "
                                                "they provide")
    plist.add_argument("--json", action="store_true", help="print a JSON document")
    plist.add_argument("--all", action="store_true", help="include disabled plugins")
    plist.add_argument("--check", action="store_true",
                       help="exit 1 if a plugin is incompatible, in error or invalid, or two "
                            "plugins conflict")
    plist.add_argument("-v", "--verbose", action="store_true",
                       help="show entry points, paths, hooks and tracebacks")
    plist.set_defaults(func=_plugins_list)

    for command, attr, what in _REGISTRY_COMMANDS:
        group = sub.add_parser(command, help=what)
        group_sub = group.add_subparsers(dest=f"{command}_command", metavar="COMMAND",
                                         required=True)
        listing = group_sub.add_parser("list", help=f"list {what} and the plugin providing "
                                                    f"each")
        listing.add_argument("--json", action="store_true", help="print a JSON document")
        listing.set_defaults(func=_registry_list, registry=attr)

    opt = sub.add_parser("opt", help="run a pipeline of passes on a module")
    opt.add_argument("input", metavar="INPUT", nargs="?",
                     help="a module in the IR text format, zoo:MODEL, or - for stdin")
    opt.add_argument("--passes", metavar="PIPELINE",
                     help="the passes to run, in the textual pipeline syntax (required "
                          "unless --reproduce)")
    opt.add_argument("-o", "--output", metavar="OUT",
                     help="write the resulting module here (default: stdout)")
    opt.add_argument("-O", "--opt-level", type=_opt_level, default=2, metavar="N",
                     help="the PassContext opt level (default 2)")
    opt.add_argument("--required-pass", action="append", default=[], metavar="NAME",
                     help="a pass that always runs (repeatable)")
    opt.add_argument("--disabled-pass", action="append", default=[], metavar="NAME",
                     help="a pass that never runs (repeatable)")
    opt.add_argument("--pass-config", "--config", dest="config", action="append", default=[],
                     metavar="KEY=VALUE",
                     help="a PassContext config option (repeatable)")
    opt.add_argument("--instrument", action="append", default=[], metavar="SPEC",
                     help="a pass instrument: NAME or NAME{key=value,...} (repeatable)")
    opt.add_argument("--print-after-change", action="store_true",
                     help="print the initial module, then a diff after each changing pass")
    opt.add_argument("--bind-params", action="store_true",
                     help="bind a zoo model's weights as constants (so FoldConstant & co. "
                          "can use them)")
    opt.add_argument("--hide-meta-data", action="store_true",
                     help="elide large constants (the output then no longer parses back)")
    opt.add_argument("--reproduce", metavar="FILE",
                     help="replay a reproducer (written by --reproducer DIR) instead")
    opt.add_argument("--local", action="store_true",
                     help="with --reproduce: replay the failing pass alone")
    from passhost import cli_compile, cli_debug

    cli_debug.add_flags(opt)
    opt.set_defaults(func=_opt)

    cli_compile.add_commands(sub, _opt_level)
    cli_debug.add_commands(sub, _opt_level)

    zoo = sub.add_parser("zoo", help="the built-in model zoo")
    zoo_sub = zoo.add_subparsers(dest="zoo_command", metavar="ZOO_COMMAND", required=True)
    zoo_sub.add_parser("list", help="list the zoo's models").set_defaults(func=_zoo_list)
    show = zoo_sub.add_parser("show", help="print a model's IR (constants elided)")
    show.add_argument("model")
    show.set_defaults(func=_zoo_show)
    run = zoo_sub.add_parser("run", help="run a model in the reference interpreter")
    run.add_argument("model")
    run.add_argument("--seed", type=int, default=0, help="seed of the random input")
    run.add_argument("--top", type=int, default=5, help="how many top outputs to print")
    run.set_defaults(func=_zoo_run)
    return parser


def _disabled_names(parser: argparse.ArgumentParser, flags: Sequence[str]) -> list[str]:
    """The NAMEs of ``-p no:NAME`` flags; any other ``-p`` value is a usage error."""
    names = []
    for flag in flags:
        name = flag[len("no:"):].strip() if flag.startswith("no:") else ""
        if not name:
            parser.error(f"argument -p: expected no:NAME (disable plugin NAME), found {flag!r}")
        names.append(name)
    return names


def _install_host(no_plugins: bool, disabled: Sequence[str]) -> Any:
    """Create the plugin host the environment and the global options select and install it;
    returns the previous host."""
    import attrs

    from passhost.plugins.loading import LoadSettings
    from passhost.plugins.manager import create_host, set_host

    settings = LoadSettings.from_env()
    if no_plugins:
        settings = attrs.evolve(settings, only=frozenset())
    if disabled:
        settings = attrs.evolve(settings, disabled=settings.disabled | frozenset(disabled))
    return set_host(create_host(settings))


def _print_error(err: BaseException) -> None:
    print(f"passhost: error: {err}", file=sys.stderr)
    for note in getattr(err, "__notes__", ()):
        print(f"  {note}", file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``passhost`` command; returns the exit status."""
    parser = build_parser()
    args = parser.parse_args(argv)
    disabled = _disabled_names(parser, args.plugin_flags)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    installed, previous = False, None
    try:
        if args.no_plugins or disabled:
            previous, installed = _install_host(args.no_plugins, disabled), True
        return args.func(args)
    except PasshostError as err:
        _print_error(err)
        return 1
    finally:
        if installed:  # in-process callers (tests) get their host back
            from passhost.plugins.manager import set_host

            set_host(previous)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
