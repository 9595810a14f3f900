"""`EngineHost`: what an agent holds — the selected engine behind its pluggy manager, with observers beside it.

The host calls the hooks with keyword arguments and isolates failures: an exception inside the engine or an
observer is logged with the plugin's name and never costs the caller its messages.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

import pluggy

from ctxplug import hookspecs
from ctxplug.engine import CompressionReport, ContextEngine, Message
from ctxplug.usage import normalize_usage

log = logging.getLogger("ctxplug")


def make_plugin_manager() -> pluggy.PluginManager:
    """A fresh manager with ctxplug's hookspecs and no plugins."""
    pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
    pm.add_hookspecs(hookspecs)
    return pm


class EngineHost:
    """The selected `ContextEngine` behind a plugin manager; the object `ctxplug.load_engine` returns."""

    def __init__(self, engine: ContextEngine, observers: tuple[object, ...] = ()) -> None:
        self.engine = engine
        self.pm = make_plugin_manager()
        self.pm.register(engine, name=f"engine:{engine.name}")
        for observer in observers:
            self.add_observer(observer)
        self.pm.check_pending()
        self.last_error: str | None = None

    def add_observer(self, plugin: object, name: str | None = None) -> None:
        """Register a metrics or logging plugin that implements `track_usage` and/or `tools`."""
        if isinstance(plugin, type):  # its hookimpls would be unbound and fail on every call
            raise TypeError(f"observers are plugin instances: pass {plugin.__name__}(), not the class")
        self.pm.register(plugin, name=name)
        self.pm.check_pending()

    # facts the agent reads
    @property
    def name(self) -> str:
        return self.engine.name

    @property
    def context_length(self) -> int:
        return self.engine.context_length

    @property
    def threshold_tokens(self) -> int:
        return self.engine.threshold_tokens

    @property
    def compression_count(self) -> int:
        return self.engine.compression_count

    @property
    def last_report(self) -> CompressionReport | None:
        """The report of the last `compress` call (outcome, tokens and messages before/after, summary)."""
        return self.engine.last_report

    # the hooks
    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """Ask the engine whether to compress now; an engine that raises answers False (and is logged)."""
        try:
            answer = self.pm.hook.should_compress(prompt_tokens=prompt_tokens)
        except Exception as exc:  # a plugin's bug must not stop the agent
            self._record_failure("should_compress", exc)
            return False
        return bool(answer)

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
    ) -> list[Message]:
        """Compress through the engine; on any exception return ``messages`` unchanged and report the failure."""
        # the engine gets its own list: one that pops or appends before raising cannot shorten the caller's
        given = list(messages)
        try:
            result = self.pm.hook.compress(
                messages=given, current_tokens=current_tokens, focus_topic=focus_topic, force=force
            )
        except Exception as exc:  # nothing is lost: the caller keeps its conversation
            return self._failed(messages, self._record_failure("compress", exc))
        if result is None or (result is given and result == messages):
            return messages  # "nothing changed" keeps the caller's object, as callers test with `is`
        if not isinstance(result, list):
            wrong = TypeError(f"compress returned {type(result).__name__}, expected a list of messages")
            return self._failed(messages, self._record_failure("compress", wrong))
        return result

    def _failed(self, messages: list[Message], error: str) -> list[Message]:
        """Report a failed compression and hand the caller's conversation back untouched."""
        self.engine.last_report = CompressionReport(
            engine=self.name, outcome="failed", messages_before=len(messages), messages_after=len(messages),
            error=error, reason="the engine failed; the conversation was returned unchanged",
        )
        return messages

    def track_usage(self, usage: Any) -> None:
        """Hand a response's usage (OpenAI or Anthropic, object or dict) to the engine and every observer."""
        arguments = {"usage": normalize_usage(usage)}
        for impl in self._impls("track_usage"):  # each on its own, so one failing observer spares the rest
            self._call_isolated(impl, arguments)

    def tools(self) -> list[dict[str, Any]]:
        """Tool schemas from the engine, then the observers, deduplicated by function name (the engine's win)."""
        return [schema for schema, _ in self._tool_owners().values()]

    def call_tool(
        self, name: str, arguments: Mapping[str, Any] | str | None = None, messages: list[Message] | None = None
    ) -> str:
        """Dispatch a tool call to the plugin whose `tools` lists it; always answers a JSON string, errors included."""
        owners = self._tool_owners()
        if name not in owners:
            return json.dumps({"error": f"unknown context engine tool: {name}", "available": sorted(owners)})
        try:
            parsed = _parse_arguments(arguments)
        except ValueError as exc:
            return json.dumps({"error": f"invalid arguments for {name}: {exc}"})
        owner = owners[name][1]
        impl = next((impl for impl in self._impls("call_tool") if impl.plugin is owner), None)
        try:
            answer = None if impl is None else impl.function(name=name, arguments=parsed, messages=messages)
        except Exception as exc:  # the agent gets the error as the tool's result and carries on
            return json.dumps({"error": self._record_failure(f"call_tool({name})", exc)})
        if answer is None:
            return json.dumps({"error": f"{name}: the plugin that lists this tool did not answer the call"})
        return str(answer)

    def _tool_owners(self) -> dict[str, tuple[dict[str, Any], object]]:
        """Each tool name with its schema and the plugin that offers it; the first offer of a name wins."""
        owners: dict[str, tuple[dict[str, Any], object]] = {}
        for impl in self._impls("tools"):
            for schema in self._call_isolated(impl, {}) or []:
                name = str(schema.get("function", {}).get("name", schema.get("name", "")))
                owners.setdefault(name, (schema, impl.plugin))
        return owners

    def _impls(self, hook_name: str) -> list[pluggy.HookImpl]:
        """A hook's implementations in pluggy's call order, the engine's first."""
        impls = reversed(getattr(self.pm.hook, hook_name).get_hookimpls())
        return sorted(impls, key=lambda impl: impl.plugin is not self.engine)

    def _call_isolated(self, impl: pluggy.HookImpl, kwargs: dict[str, Any]) -> Any:
        """One implementation's answer, or None (logged with the plugin's name) when it raises."""
        try:
            return impl.function(*[kwargs[arg] for arg in impl.argnames])
        except Exception as exc:
            self._record_failure(f"{impl.function.__name__} in {impl.plugin_name}", exc)
            return None

    def _record_failure(self, where: str, exc: BaseException) -> str:
        error = f"engine {self.name!r}: {where} raised {type(exc).__name__}: {exc}"
        self.last_error = error
        log.warning("%s", error, exc_info=log.isEnabledFor(logging.DEBUG))
        return error


def _parse_arguments(arguments: Mapping[str, Any] | str | None) -> dict[str, Any]:
    if arguments is None:
        return {}
    if isinstance(arguments, str):
        value = json.loads(arguments) if arguments.strip() else {}
        if not isinstance(value, dict):
            raise ValueError("arguments must be a JSON object")
        return value
    return dict(arguments)
