"""``ctxplug lcm grep | describe | expand | stats``: the lossless engine's store, from the shell.

The store file is ``--db PATH``, else ``context.engines.lcm.database`` of the configuration, else the default in
the user's data directory. The commands only read (a search first brings the full-text index up to date). Like
``ctxplug compress``, the core loads the plugin's modules by name when a command runs, never at import.
"""

from __future__ import annotations

import argparse
import importlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from ctxplug.cli import config_from_args
from ctxplug.errors import CtxplugError


def add_parser(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``lcm`` command group."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="PATH", help="the lcm store file (default: from the configuration)")
    common.add_argument("--json", action="store_true", help="print the answer as JSON")
    parser = subparsers.add_parser("lcm", help="search and reopen the lossless engine's store",
                                   description="Search and reopen what the lossless engine `lcm` stored.")
    commands = parser.add_subparsers(dest="lcm_command", metavar="SUBCOMMAND", required=True)
    grep = commands.add_parser("grep", parents=[common], help="full-text search over stored messages")
    grep.add_argument("pattern", nargs="?", metavar="PATTERN", help="FTS5 query: words, \"a phrase\", pre*, OR, NOT")
    grep.add_argument("--regex", metavar="RE", help="keep only hits that also match this regular expression")
    grep.add_argument("--session", metavar="ID", help="search only this session (default: every session)")
    grep.add_argument("--limit", type=int, default=20, metavar="N", help="hits per page (1-50, default 20)")
    grep.add_argument("--offset", type=int, default=0, metavar="N", help="skip this many hits")
    grep.add_argument("--order", choices=("recent", "relevance"), default="recent")
    grep.set_defaults(handler=run_grep)
    describe = commands.add_parser("describe", parents=[common], help="what a summary node covers")
    describe.add_argument("node", metavar="NODE", help="node id, e.g. S12")
    describe.set_defaults(handler=run_describe)
    expand = commands.add_parser("expand", parents=[common], help="the original messages under a node or id range")
    expand.add_argument("node", nargs="?", metavar="NODE", help="node id, e.g. S12 (or use --from-id)")
    expand.add_argument("--from-id", type=int, metavar="ID", help="first message id")
    expand.add_argument("--to-id", type=int, metavar="ID", help="last message id (default: --from-id)")
    expand.add_argument("--offset", type=int, default=0, metavar="N", help="skip this many messages")
    expand.add_argument("--max-tokens", type=int, default=20_000, metavar="N", help="budget (default 20,000)")
    expand.set_defaults(handler=run_expand)
    stats = commands.add_parser("stats", parents=[common], help="sessions, messages, nodes and file size")
    stats.set_defaults(handler=run_stats)


def run_grep(args: argparse.Namespace) -> int:
    """Print the hits of one search page."""
    arguments = {"pattern": args.pattern, "regex": args.regex, "limit": args.limit, "offset": args.offset,
                 "order": args.order, "all_sessions": args.session is None}
    store, options = _open(args)
    answer = _lcm("tools").grep(store, args.session, arguments, regex_timeout=options.regex_timeout)
    if args.json:
        return _print_json(answer)
    for hit in answer["results"]:
        node = hit["node"] or "-"
        print(f"#{hit['id']}  {hit['session']}:{hit['seq']}  {hit['role']:<9} {hit['timestamp']}  {node:<6} "
              f"{hit['snippet']}")
    if not answer["results"]:
        print("no match")
    if answer["next_offset"] is not None:
        print(f"(more: --offset {answer['next_offset']})")
    return 0


def run_describe(args: argparse.Namespace) -> int:
    """Print one node's description as JSON."""
    store, _ = _open(args)
    return _print_json(_lcm("tools").describe(store, {"node": args.node}))


def run_expand(args: argparse.Namespace) -> int:
    """Print the original messages of a node or an id range as JSON."""
    if args.node is None and args.from_id is None:
        raise CtxplugError("lcm expand needs a NODE (e.g. S12) or --from-id ID")
    store, _ = _open(args)
    arguments: dict[str, Any] = {"node": args.node, "from_id": args.from_id, "to_id": args.to_id,
                                 "offset": args.offset, "max_tokens": args.max_tokens}
    return _print_json(_lcm("tools").expand(store, arguments))


def run_stats(args: argparse.Namespace) -> int:
    """Print the store's sizes."""
    store, _ = _open(args)
    stats = store.stats()
    if args.json:
        return _print_json({**asdict(stats), "session_ids": store.sessions()})
    per_message = stats.bytes / stats.messages if stats.messages else 0
    print(f"store: {stats.path} (schema version {stats.schema_version})")
    print(f"sessions: {stats.sessions:,}  messages: {stats.messages:,}  summary nodes: {stats.nodes:,}")
    print(f"size: {stats.bytes:,} bytes ({per_message:,.0f} bytes per message)")
    return 0


def _open(args: argparse.Namespace) -> tuple[Any, Any]:
    """The store named by ``--db`` or the configuration, which must exist already, and the engine's options."""
    config = config_from_args(args)
    lcm_options = _lcm("options")
    options = lcm_options.parse_options(config, config.engine_options("lcm"))
    path = Path(args.db) if args.db else lcm_options.database_path(config, options)
    if not path.is_file():
        raise CtxplugError(f"no lcm store at {path}; pass --db PATH or set context.engines.lcm.database")
    return _lcm("sqlite_store").SQLiteStore(path, busy_timeout=options.busy_timeout), options


def _lcm(module: str) -> Any:
    """A module of the lcm plugin, imported when a command needs it."""
    return importlib.import_module(f"ctxplug.plugins.context_engine.lcm.{module}")


def _print_json(answer: Any) -> int:
    print(json.dumps(answer, ensure_ascii=False, indent=2))
    return 0
