"""``ctxplug engines [--json]``: every context engine the configuration can reach, where from, which one is used.

Nothing is imported to draw the list, so a broken plugin cannot break the command; ``--check`` imports each one
and marks the ones that fail as broken. The ``selected`` row is the one `ctxplug.load_engine` would try first.
"""

from __future__ import annotations

import argparse
import json
from dataclasses import asdict
from typing import Any

from ctxplug.cli import config_from_args
from ctxplug.discovery import plugin_dirs
from ctxplug.registry import EngineInfo, available_engines


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``engines`` command."""
    parser = subparsers.add_parser(
        "engines", help="list the context engines found, their origin, which is selected and what is shadowed",
        description="List every context engine the configuration can reach: directory plugins, in-process "
                    "registrations, installed entry points (group ctxplug.engines) and the builtins, with the "
                    "one context.engine selects and the ones a higher-priority source shadows.")
    parser.add_argument("--check", action="store_true",
                        help="import every plugin listed and mark the ones that fail as broken (exit 1 if any)")
    parser.add_argument("--json", action="store_true", help="print a JSON object")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    """Print the engine list for the configuration in use."""
    config = config_from_args(args)
    engines = available_engines(config, check=args.check)
    facts: dict[str, Any] = {
        "config": str(config.source) if config.source else None,
        "engine": config.context.engine,
        "plugin_dirs": [str(directory) for directory in plugin_dirs(config)],
        "engines": [asdict(info) for info in engines],
    }
    if args.json:
        print(json.dumps(facts, indent=2))
    else:
        print("\n".join(engine_lines(facts, engines)))
    return 1 if any(info.error for info in engines) else 0


def engine_lines(facts: dict[str, Any], engines: list[EngineInfo]) -> list[str]:
    """The human table: a marker on the selected engine, status, origin and location, then any note."""
    where = facts["config"] or "defaults, no config file"
    lines = [f"context.engine: {facts['engine']} ({where})",
             "plugin directories: " + (", ".join(facts["plugin_dirs"]) or "(none)")]
    rows = [("", "NAME", "STATUS", "ORIGIN", "LOCATION")]
    for info in engines:
        status = "broken" if info.error else "selected" if info.selected else "shadowed" if info.shadowed \
            else "available"
        rows.append(("*" if info.selected else "", info.name, status, info.origin, info.location))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    notes = [None, *("; ".join(filter(None, (info.error, info.note))) for info in engines)]  # none for the header
    for row, note in zip(rows, notes, strict=True):
        head = "  ".join(cell.ljust(width) for cell, width in zip(row[:4], widths, strict=True))
        lines.append(f"{head}  {row[4]}")
        if note:
            lines.append(" " * (len(head) + 2) + f"({note})")
    return lines
