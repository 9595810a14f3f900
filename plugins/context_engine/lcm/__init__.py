"""The lossless context engine `lcm`: every message stored, a summary DAG in the context, tools to reopen the past.

Shipped in exactly the form a third party's directory plugin takes; select it with ``context.engine: lcm``.
"""

from __future__ import annotations

from typing import Any

from ctxplug.plugins.context_engine.lcm.engine import LcmEngine

__all__ = ["LcmEngine", "register"]


def register(ctx: Any) -> None:
    """Register the lossless engine under its name (the plugin contract of ARCHITECTURE "Engine plugins")."""
    ctx.register_context_engine("lcm", LcmEngine)
