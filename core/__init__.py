"""ctxplug: context-window management for LLM agents.

The public API. Names load lazily from their modules on first use, so ``import ctxplug`` stays fast (no
vocabulary, no HTTP client); ``from ctxplug import X`` works as usual.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    # engines and their host
    "ContextEngine": "ctxplug.engine",
    "EngineContext": "ctxplug.engine",
    "CompressionReport": "ctxplug.engine",
    "EngineHost": "ctxplug.host",
    "hookimpl": "ctxplug.hookspecs",
    "hookspec": "ctxplug.hookspecs",
    # resolution
    "load_engine": "ctxplug.registry",
    "register_context_engine": "ctxplug.registry",
    "available_engines": "ctxplug.registry",
    "unregister_context_engine": "ctxplug.registry",
    "EngineInfo": "ctxplug.registry",
    # configuration
    "Config": "ctxplug.config",
    "load_config": "ctxplug.config",
    "Budgets": "ctxplug.budgets",
    "compute_budgets": "ctxplug.budgets",
    # messages and tokens
    "sanitize_tool_pairs": "ctxplug.messages",
    "count_tokens": "ctxplug.tokens",
    "estimate_messages_tokens_rough": "ctxplug.tokens",
    "IncrementalTokenCounter": "ctxplug.tokens",
    "TokenCalibration": "ctxplug.calibration",
    "Usage": "ctxplug.usage",
    "normalize_usage": "ctxplug.usage",
    "context_length_for": "ctxplug.models",
    "lookup_model": "ctxplug.models",
    "ModelInfo": "ctxplug.models",
    # caching and hygiene
    "apply_anthropic_cache_control": "ctxplug.caching",
    "CachePolicy": "ctxplug.cache_policy",
    "resolve_cache_policy": "ctxplug.cache_policy",
    "assess_session": "ctxplug.hygiene",
    "apply_hygiene": "ctxplug.hygiene",
    "SessionHygiene": "ctxplug.hygiene",
    "HygieneDecision": "ctxplug.hygiene",
    "HygieneOutcome": "ctxplug.hygiene",
    # summaries
    "SummaryRequest": "ctxplug.summarizer",
    "SummaryResult": "ctxplug.summarizer",
    "SummaryWriter": "ctxplug.summarizer",
    "make_summary_writer": "ctxplug.summarizer",
    "ExtractiveSummaryWriter": "ctxplug.summarizer.extractive",
    "redact_secrets": "ctxplug.redact",
    # errors
    "CtxplugError": "ctxplug.errors",
    "ConfigError": "ctxplug.errors",
    "ConversationError": "ctxplug.errors",
    "EngineNotFoundError": "ctxplug.errors",
    "PluginLoadError": "ctxplug.errors",
    "DuplicateEngineError": "ctxplug.errors",
    "InvalidEngineNameError": "ctxplug.errors",
    "SummaryError": "ctxplug.errors",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'ctxplug' has no attribute {name!r}")
    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:
    from ctxplug.budgets import Budgets, compute_budgets
    from ctxplug.cache_policy import CachePolicy, resolve_cache_policy
    from ctxplug.caching import apply_anthropic_cache_control
    from ctxplug.calibration import TokenCalibration
    from ctxplug.config import Config, load_config
    from ctxplug.engine import CompressionReport, ContextEngine, EngineContext
    from ctxplug.errors import (
        ConfigError,
        ConversationError,
        CtxplugError,
        DuplicateEngineError,
        EngineNotFoundError,
        InvalidEngineNameError,
        PluginLoadError,
        SummaryError,
    )
    from ctxplug.hookspecs import hookimpl, hookspec
    from ctxplug.host import EngineHost
    from ctxplug.hygiene import HygieneDecision, HygieneOutcome, SessionHygiene, apply_hygiene, assess_session
    from ctxplug.messages import sanitize_tool_pairs
    from ctxplug.models import ModelInfo, context_length_for, lookup_model
    from ctxplug.redact import redact_secrets
    from ctxplug.registry import (
        EngineInfo,
        available_engines,
        load_engine,
        register_context_engine,
        unregister_context_engine,
    )
    from ctxplug.summarizer import SummaryRequest, SummaryResult, SummaryWriter, make_summary_writer
    from ctxplug.summarizer.extractive import ExtractiveSummaryWriter
    from ctxplug.tokens import IncrementalTokenCounter, count_tokens, estimate_messages_tokens_rough
    from ctxplug.usage import Usage, normalize_usage
