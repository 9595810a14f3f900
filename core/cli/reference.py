"""The command reference of docs/cli.md, generated from the parser itself so the page cannot drift from the code.

``python -m ctxplug.cli.reference docs/cli.md`` rewrites the block between ``<!-- generated:cli-reference -->``
and ``<!-- end:cli-reference -->``; tests/test_docs_cli.py fails when the page's copy is stale.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator
from pathlib import Path

from ctxplug.cli import build_parser
from ctxplug.config_doc import update_generated_tables

HELP_WIDTH = "100"


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """The parser and every sub-command parser below it, depth first, in the order they were added."""
    yield parser
    for action in parser._actions:  # argparse offers no public walk over sub-parsers
        if isinstance(action, argparse._SubParsersAction):
            for child in dict.fromkeys(action.choices.values()):
                yield from _parsers(child)


def cli_reference() -> str:
    """Every command's ``--help``, under a heading named after the command line."""
    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = HELP_WIDTH  # argparse wraps help text to the terminal's width
    try:
        sections = []
        for parser in _parsers(build_parser()):
            sections.append(f"### `{parser.prog}`\n\n```text\n{parser.format_help().rstrip()}\n```")
        return "\n\n".join(sections)
    finally:
        if previous is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = previous


if __name__ == "__main__":
    for page in map(Path, sys.argv[1:]):
        text = update_generated_tables(page.read_text(encoding="utf-8"), {"cli-reference": cli_reference})
        page.write_text(text, encoding="utf-8")
