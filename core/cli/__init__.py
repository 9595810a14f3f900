"""The ``ctxplug`` command: argparse, one module per command group, ``main(argv) -> int``.

Each command module exposes ``add_parser(subparsers)``, which adds its sub-command and sets ``handler`` (a function
``(args) -> int``) as a default. A `CtxplugError` becomes one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence

from ctxplug.config import Config, discover_config_path, load_config
from ctxplug.errors import CtxplugError

COMMAND_MODULES: tuple[str, ...] = (
    "ctxplug.cli.compress_cmd",
    "ctxplug.cli.engines_cmd",
    "ctxplug.cli.config_cmd",
    "ctxplug.cli.tokens_cmd",
    "ctxplug.cli.cache_cmd",
    "ctxplug.cli.status_cmd",
    "ctxplug.cli.lcm_cmd",
)

USAGE_ERROR = 2


def config_from_args(args: argparse.Namespace) -> Config:
    """The configuration a command runs with: ``--config``, else $CTXPLUG_CONFIG, else ./config.yaml, else defaults."""
    return load_config(discover_config_path(args.config))


def build_parser() -> argparse.ArgumentParser:
    """The full parser, with every command group's sub-commands."""
    parser = argparse.ArgumentParser(prog="ctxplug", description="Context-window management for LLM agents.")
    parser.add_argument("--config", metavar="PATH", help="config.yaml to use (default: ./config.yaml if present)")
    parser.add_argument("-v", "--verbose", action="store_true", help="log debug details to stderr")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for module_name in COMMAND_MODULES:
        importlib.import_module(module_name).add_parser(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``ctxplug`` command and return its exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="ctxplug: %(message)s")
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return USAGE_ERROR
    try:
        return int(handler(args))
    except CtxplugError as exc:
        print(f"ctxplug: error: {exc}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print("ctxplug: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
