"""The `lcm` engine's options (``context.engines.lcm.*``), validated like the rest of the configuration."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxplug.config import Config
from ctxplug.config_validate import Origin, build_section

OPTIONS_PREFIX = "context.engines.lcm."


def _opt(default: Any, doc: str, **allowed: Any) -> Any:
    return field(default=default, metadata={"doc": doc, **allowed})


@dataclass(frozen=True)
class LcmOptions:
    """What ``context.engines.lcm`` may set; every key is optional."""

    database: str | None = _opt(None, "SQLite store file; null: $XDG_DATA_HOME/ctxplug/lcm.db "
                                      "(relative paths are relative to the config file)")
    session_id: str | None = _opt(None, "the conversation's id in the store; null: derived from its first messages")
    leaf_chunk_tokens: int = _opt(20_000, "most tokens of raw messages one leaf summary covers", range=(256, None))
    leaf_summary_tokens: int = _opt(1_200, "budget of one leaf summary", range=(64, None))
    condensed_summary_tokens: int = _opt(2_000, "budget of one condensed summary", range=(64, None))
    condense_fanin: int = _opt(4, "roots of one depth that are condensed into one node", range=(2, 64))
    synchronous: str = _opt("normal", "SQLite durability: normal survives process crashes, full also power loss",
                            choices=("normal", "full"))
    busy_timeout: float = _opt(30.0, "seconds a write waits for another process's lock before failing",
                               range=(0.1, 3600.0))
    regex_timeout: float = _opt(2.0, "seconds an lcm_grep regular expression may run", range=(0.1, 60.0))


def parse_options(config: Config, options: Any) -> LcmOptions:
    """`LcmOptions` from the engine's option mapping; an unknown key or a bad value names its key path."""
    source = str(config.source) if config.source else None
    return build_section(LcmOptions, options or {}, OPTIONS_PREFIX, Origin(source))


def default_database_path() -> Path:
    """Where the store lives when no path is configured: the user's data directory."""
    base = os.environ.get("XDG_DATA_HOME") or os.path.join(os.path.expanduser("~"), ".local", "share")
    return Path(base) / "ctxplug" / "lcm.db"


def database_path(config: Config, options: LcmOptions) -> Path:
    """The store file: the configured path (relative to the config file) or the default in the data directory."""
    if not options.database:
        return default_database_path()
    path = Path(os.path.expanduser(options.database))
    if not path.is_absolute() and config.source is not None:
        path = Path(config.source).parent / path
    return path
