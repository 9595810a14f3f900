"""docs/hooks.md documents every hookspec with its exact signature and kind, and its examples run."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.plugin_project import isolate_plugin_sources

import ctxplug
from ctxplug import hookspecs

HOOKS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "hooks.md"
HEADING = re.compile(r"^## (\w+)\((.*)\)$", re.MULTILINE)
CODE_BLOCK = re.compile(r"^```python\n(.*?)^```$", re.MULTILINE | re.DOTALL)


def _hookspecs() -> dict[str, Callable[..., Any]]:
    marker = f"{hookspecs.PROJECT_NAME}_spec"
    return {name: fn for name, fn in vars(hookspecs).items() if callable(fn) and hasattr(fn, marker)}


def _sections(page: str) -> dict[str, tuple[str, str]]:
    """Hook name -> (documented argument list, the section's text up to the next heading)."""
    matches = list(HEADING.finditer(page))
    sections = {}
    for match, following in zip(matches, [*matches[1:], None], strict=True):
        end = following.start() if following else len(page)
        sections[match.group(1)] = (match.group(2), page[match.end():end])
    return sections


def test_the_hookspecs_are_the_five_duties() -> None:
    assert set(_hookspecs()) == {"should_compress", "compress", "tools", "call_tool", "track_usage"}


@pytest.mark.parametrize("name", sorted(_hookspecs()))
def test_every_hook_has_a_section_with_its_exact_signature_and_kind(name: str) -> None:
    spec = _hookspecs()[name]
    expected = ", ".join(inspect.signature(spec).parameters)
    sections = _sections(HOOKS_PAGE.read_text(encoding="utf-8"))

    assert name in sections, f"docs/hooks.md lacks a '## {name}({expected})' section"
    documented, text = sections[name]
    assert documented == expected, f"docs/hooks.md documents {name}({documented}), the hookspec is {name}({expected})"
    firstresult = getattr(spec, f"{hookspecs.PROJECT_NAME}_spec")["firstresult"]
    kind = text.strip().splitlines()[0]
    assert kind.startswith("*First result" if firstresult else "*Broadcast"), kind
    assert "```python" in text, f"the {name} section has no example"
    assert spec.__doc__ and spec.__doc__.strip(), f"hookspec {name} has no docstring"


def test_no_section_documents_a_hook_that_does_not_exist() -> None:
    documented = set(_sections(HOOKS_PAGE.read_text(encoding="utf-8")))

    assert documented <= set(_hookspecs())


def test_every_example_on_the_page_runs(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    isolate_plugin_sources(monkeypatch, tmp_path)
    blocks = CODE_BLOCK.findall(HOOKS_PAGE.read_text(encoding="utf-8"))
    assert len(blocks) >= len(_hookspecs()) + 1

    for number, block in enumerate(blocks, start=1):
        namespace: dict[str, Any] = {"__name__": f"hooks_md_example_{number}"}
        exec(compile(block, f"docs/hooks.md example {number}", "exec"), namespace)
        for value in list(namespace.values()):
            if inspect.isclass(value) and value.__module__ == namespace["__name__"]:
                _exercise(value)


def _exercise(cls: type) -> None:
    """Run an example class through a real host: engines compress, observers register (pluggy checks them)."""
    conversation = [{"role": "system", "content": "s"}] + [
        {"role": "user" if i % 2 else "assistant", "content": f"m{i}"} for i in range(1, 15)]
    if issubclass(cls, ctxplug.ContextEngine):
        ctxplug.register_context_engine("example", cls)
        host = ctxplug.load_engine({"context": {"engine": "example"}}, context_length=10_000)
        result = host.compress(conversation)
        assert isinstance(result, list) and len(result) <= len(conversation)
        assert isinstance(host.should_compress(4_999), bool)
        ctxplug.unregister_context_engine("example")
    else:
        host = ctxplug.load_engine(None, context_length=10_000, observers=[cls()])
    host.track_usage({"prompt_tokens": 10, "completion_tokens": 1})
    for schema in host.tools():
        answer = json.loads(host.call_tool(schema["function"]["name"], {}, messages=conversation))
        assert "error" not in answer, answer
    assert host.last_error is None, host.last_error
