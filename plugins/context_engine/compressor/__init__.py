"""The builtin `compressor` context engine, shipped in exactly the form a third party's directory plugin takes."""

from __future__ import annotations

from typing import Any

from ctxplug.plugins.context_engine.compressor.engine import CompressorEngine

__all__ = ["CompressorEngine", "register"]


def register(ctx: Any) -> None:
    """Register the compressor under its engine name (the plugin contract of ARCHITECTURE "Engine plugins")."""
    ctx.register_context_engine("compressor", CompressorEngine)
