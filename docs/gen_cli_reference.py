"""Write docs/reference/cli.md, the command-line reference, from the argument parser itself
(:func:`toolkit.cli.build_parser`, which each command module of ``toolkit/cli/`` adds its subparser to), so that
the reference cannot drift from the commands.

Usage: python docs/gen_cli_reference.py [--check]   (--check: exit 1 when the committed file is not current)

tests/test_docs.py fails when the committed file differs from what this writes.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from toolkit.cli import build_parser
from toolkit.config import data_dir

OUT = Path(__file__).parent / "reference" / "cli.md"

HEADER = """# Command-line reference

Generated from the argument parser (`python docs/gen_cli_reference.py`); do not edit by hand. Exit codes, output
formats and what a usage error says are in [Command-line conventions](command-line.md). `python -m toolkit` is the
same as `chainops`; `chainops COMMAND --help` prints the same text in a terminal. The options several commands
share (`--warehouse`; the period `--since`/`--until`; the filters `--channel`/`--network`/`--status`; the output
`--format`/`--out`/`--columns`/`--wide`/`--max-rows`; `--quiet`) are declared once (`toolkit/cli/options.py`) and
mean the same wherever they appear.
"""


def _default(action: argparse.Action) -> str:
    """The default as a user sees it: nothing for flags and unset options, paths relative to the project's data/."""
    value = action.default
    if value is None or value is False or value == argparse.SUPPRESS or action.nargs == 0:
        return ""
    text = str(value)
    base = str(data_dir())
    if text.startswith(base):
        text = "data" + text[len(base) :]
    return f"`{text}`"


def _name(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.metavar or action.dest}`"
    names = ", ".join(f"`{s}`" for s in action.option_strings)
    if action.nargs == 0:
        return names
    metavar = action.metavar or (
        "{" + ",".join(map(str, action.choices)) + "}" if action.choices else action.dest.upper()
    )
    return f"{names} `{metavar}`"


def _cell(text: str | None) -> str:
    return (text or "").replace("|", "\\|").replace("\n", " ")


def _table(parser: argparse.ArgumentParser) -> list[str]:
    rows = ["| argument | meaning | default |", "| --- | --- | --- |"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
            continue
        rows.append(f"| {_name(action)} | {_cell(action.help)} | {_default(action)} |")
    return rows


def render() -> str:
    """The whole page."""
    parser = build_parser()
    lines = [HEADER, "## `chainops`", "", _cell(parser.description), "", *_table(parser), ""]
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in sub._choices_actions}
    for name, command in sub.choices.items():
        lines += [f"## `chainops {name}`", "", _cell(helps.get(name)), "", *_table(command), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """Write the page, or with ``--check`` say whether the committed one is current."""
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--check", action="store_true", help="exit 1 when the committed page is not current")
    options = args.parse_args(argv)
    text = render()
    if options.check:
        if not OUT.exists() or OUT.read_text(encoding="utf-8") != text:
            print(f"{OUT} is stale: run python docs/gen_cli_reference.py", file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text, encoding="utf-8")
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
