"""The one-time notice for the Codex gpt-5.5 threshold auto-raise (SPEC §3).

`compute_budgets` raises the threshold to 85% for gpt-5.5 on provider ``openai-codex`` (a 272K window where the
global 50% would compact at about 136K). The user should learn that once, with the command that turns it off, and
not on every engine load of a long-running process.
"""

from __future__ import annotations

import logging
import threading

from ctxplug.budgets import Budgets
from ctxplug.config import Config

logger = logging.getLogger(__name__)

OPT_OUT_COMMAND = "ctxplug config set compression.codex_gpt55_autoraise false"

_announced: set[str] = set()
_lock = threading.Lock()


def announce_codex_autoraise(budgets: Budgets, config: Config, model: str | None) -> bool:
    """Log the auto-raise notice once per process and model; True when this call logged it."""
    if not budgets.autoraised:
        return False
    key = (model or "").strip().lower()
    with _lock:
        if key in _announced:
            return False
        _announced.add(key)
    before = config.compression.threshold
    logger.warning(
        "%s on openai-codex is capped at a %s-token window, so compression starts at %s of it (%s tokens) "
        "instead of %s; to keep %s: %s",
        model, f"{budgets.context_length:,}", f"{budgets.threshold:.0%}", f"{budgets.threshold_tokens:,}",
        f"{before:.0%}", f"{before:.0%}", OPT_OUT_COMMAND,
    )
    return True
