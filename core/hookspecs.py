"""The hooks of a context engine. These docstrings are the reference; docs/hooks.md is checked against them.

A context engine is one plugin (a `ContextEngine` instance) registered in a pluggy manager for the project
``ctxplug``. Exactly one engine is registered at a time; observer plugins (metrics, logging) may sit beside it and
implement the broadcast hooks `tools` and `track_usage`. Hosts never call ``pm.hook`` themselves: they hold an
`EngineHost`, which calls these hooks with keyword arguments and isolates failures.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pluggy

if TYPE_CHECKING:
    from ctxplug.usage import Usage

PROJECT_NAME = "ctxplug"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec(firstresult=True)
def should_compress(prompt_tokens: int | None) -> bool | None:
    """Decide whether the conversation must be compressed before the next request.

    ``prompt_tokens`` is the size of the prompt about to be sent, or ``None`` to use the last prompt size the API
    reported through `track_usage`. Return ``True`` to compress, ``False`` not to; ``None`` means no opinion and lets
    the next plugin answer. First result wins; the selected engine answers.

    Example::

        @hookimpl
        def should_compress(prompt_tokens):
            return prompt_tokens is not None and prompt_tokens > 90_000
    """


@hookspec(firstresult=True)
def compress(
    messages: list[dict[str, Any]], current_tokens: int | None, focus_topic: str | None, force: bool
) -> list[dict[str, Any]] | None:
    """Return a smaller, valid OpenAI-format conversation that stands for ``messages``.

    ``current_tokens`` is the prompt size that triggered the call (``None``: unknown), ``focus_topic`` asks the
    summary to keep more detail on one subject, and ``force`` bypasses cooldowns and anti-thrash back-off (a user's
    explicit request). The hook must never mutate ``messages``; returning ``None`` leaves the conversation as it is.
    Every tool call in the result has exactly one result right after it. First result wins.

    Example::

        @hookimpl
        def compress(messages, current_tokens, focus_topic, force):
            return messages[:1] + messages[-10:]   # a crude sliding window; sanitize tool pairs in real code
    """


@hookspec
def tools() -> list[dict[str, Any]]:  # type: ignore[empty-body]
    """Return OpenAI tool schemas (``{"type": "function", "function": {...}}``) that the agent may call.

    Every plugin is asked and the lists are concatenated: the engine's own tools (such as ``lcm_grep``) first, then
    the observers'; when two plugins offer the same function name, the first keeps it. A call to one of these tools
    reaches the plugin that offered it through `call_tool`.

    Example::

        @hookimpl
        def tools():
            return [{"type": "function", "function": {"name": "recall", "parameters": {"type": "object"}}}]
    """


@hookspec(firstresult=True)
def call_tool(name: str, arguments: dict[str, Any], messages: list[dict[str, Any]] | None) -> str | None:
    """Answer a call to one of the tools this plugin returned from `tools`, as a JSON string.

    The host routes the call: only the plugin whose `tools` listed ``name`` is asked, so a failing observer never
    blocks the engine's tools. Return ``None`` for a tool name that is not yours. ``arguments`` is already parsed
    from the model's JSON; ``messages`` is the live conversation (read-only) for tools that need it.

    Example::

        @hookimpl
        def call_tool(name, arguments, messages):
            if name != "recall":
                return None
            return json.dumps({"messages": len(messages or [])})
    """


@hookspec
def track_usage(usage: Usage) -> None:
    """Record the token usage that one API response reported, normalized from OpenAI or Anthropic shapes.

    Called on every plugin after every model response; the engine uses ``usage.prompt_tokens`` as the real prompt
    size for its trigger and to judge whether its last compression was effective, observers record metrics.

    Example::

        @hookimpl
        def track_usage(usage):
            metrics.observe(usage.prompt_tokens, usage.cache_read_tokens)
    """
