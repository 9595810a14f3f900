"""docs/configuration.md documents every schema key and the bundled model table, exactly as generated."""

from __future__ import annotations

from pathlib import Path

import pytest

from ctxplug.config_doc import schema_keys, update_generated_tables
from ctxplug.models import DEFAULT_CONTEXT_LENGTH, model_table

PAGE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


@pytest.fixture(scope="module")
def page() -> str:
    return PAGE.read_text(encoding="utf-8")


def test_every_schema_key_is_documented(page: str) -> None:
    missing = [key.path for key in schema_keys() if f"| `{key.path}` |" not in page]
    assert not missing, f"undocumented keys {missing}; run: python -m ctxplug.config_doc docs/configuration.md"


def test_the_generated_tables_are_current(page: str) -> None:
    assert update_generated_tables(page) == page, \
        "docs/configuration.md is stale; run: python -m ctxplug.config_doc docs/configuration.md"


def test_every_model_key_is_documented(page: str) -> None:
    missing = [key for key in model_table().models if f"| `{key}` |" not in page]
    assert not missing


def test_schema_keys_cover_every_leaf() -> None:
    paths = [key.path for key in schema_keys()]
    assert "compression.codex_gpt55_autoraise" in paths and "auxiliary.compression.model" in paths
    assert "models" in paths and "context.engines" in paths
    assert "compression" not in paths  # sections are walked, not listed
    assert len(paths) == len(set(paths))


def test_the_page_states_the_derived_values_and_the_default_window(page: str) -> None:
    assert "| threshold_tokens | 200,000 × 0.50 | 100,000 |" in page
    assert "| tail_token_budget | 100,000 × 0.20 | 20,000 |" in page
    assert "| max_summary_tokens | min(200,000 × 0.05, 12,000) | 10,000 |" in page
    assert f"{DEFAULT_CONTEXT_LENGTH:,} tokens" in page
    assert "ctxplug config set compression.codex_gpt55_autoraise false" in page


def test_missing_markers_are_reported() -> None:
    with pytest.raises(ValueError, match="config-keys"):
        update_generated_tables("no markers here")
