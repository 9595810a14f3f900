"""docs/cli.md carries the help of every command, generated from the parser; stale or missing means a failure."""

from __future__ import annotations

from pathlib import Path

from ctxplug.cli import COMMAND_MODULES, build_parser
from ctxplug.cli.reference import cli_reference
from ctxplug.config_doc import update_generated_tables

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def test_cli_page_matches_the_parser() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert update_generated_tables(text, {"cli-reference": cli_reference}) == text, (
        "docs/cli.md is stale; run: python -m ctxplug.cli.reference docs/cli.md")


def test_every_command_group_is_in_the_page_and_its_summary_table() -> None:
    text = PAGE.read_text(encoding="utf-8")
    commands = build_parser()._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    assert len(commands) == len(COMMAND_MODULES)
    for name in commands:
        assert f"### `ctxplug {name}`" in text
        assert f"| `ctxplug {name}" in text, f"ctxplug {name} is missing from the summary table of docs/cli.md"
