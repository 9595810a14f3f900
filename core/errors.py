"""The exceptions ctxplug raises: one hierarchy, each message says what is wrong and what to do."""

from __future__ import annotations


class CtxplugError(Exception):
    """Base of every error ctxplug raises on purpose; the CLI prints these as one line, no traceback."""


class ConfigError(CtxplugError):
    """A configuration file or value is invalid; the message names the key path and the allowed values."""

    def __init__(self, message: str, *, key_path: str | None = None, source: str | None = None) -> None:
        self.key_path = key_path
        self.source = source
        prefix = f"{source}: " if source else ""
        where = f"{key_path}: " if key_path else ""
        super().__init__(f"{prefix}{where}{message}")


class EngineNotFoundError(CtxplugError):
    """`context.engine` names an engine that no plugin directory, registration or entry point provides."""

    def __init__(self, name: str, available: list[str]) -> None:
        self.name = name
        self.available = available
        choices = ", ".join(sorted(available)) or "(none)"
        super().__init__(f"context engine {name!r} was not recognized; choose one of: {choices}")


class PluginLoadError(CtxplugError):
    """A plugin failed to import or register; the message names its origin (directory or distribution)."""

    def __init__(self, name: str, origin: str, reason: str) -> None:
        self.name = name
        self.origin = origin
        self.reason = reason
        super().__init__(f"engine plugin {name!r} from {origin} failed to load: {reason}")


class DuplicateEngineError(CtxplugError):
    """Two installed distributions provide the same engine name and neither has priority."""


class InvalidEngineNameError(CtxplugError):
    """An engine name is not made of [a-z0-9_-] (rejected before anything is imported)."""


class ConversationError(CtxplugError):
    """A conversation file or message list is malformed; the message names the line and the problem."""

    def __init__(self, message: str, *, source: str | None = None, line: int | None = None) -> None:
        self.source = source
        self.line = line
        where = source or "conversation"
        if line is not None:
            where = f"{where}:{line}"
        super().__init__(f"{where}: {message}")


class SummaryError(CtxplugError):
    """The summary model failed; `kind` says how (auth, context_length, rate_limit, server, timeout, bad_answer)."""

    def __init__(self, message: str, *, kind: str) -> None:
        self.kind = kind
        super().__init__(message)
