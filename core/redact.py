"""`redact_secrets`: API keys, tokens, passwords and private keys out of text that a summary model reads or writes.

Summaries outlive the turns they replace and may be sent to another provider, so a credential that appeared in a
tool output must not travel with them (SPEC §7). The redactor runs over whole transcripts, so it is built for
speed. Each rule is its own precompiled pattern that starts with a literal or a single character class, because
`re` finds a literal prefix with a fast string search but tries every position of a many-branch alternation;
name-driven rules run on a lower-cased copy because case-insensitive matching is several times slower. Every
repetition is bounded, so the scan stays linear on long base64 or minified lines. Replacements keep the key name
or the vendor prefix, so the reader still knows that a credential was there.
"""

from __future__ import annotations

import re
from collections.abc import Callable

REDACTED = "[REDACTED]"

_Rule = tuple["re.Pattern[str]", Callable[["re.Match[str]", str], str]]


def _keep_prefix(match: re.Match[str], original: str) -> str:
    return original[: len(match.group("keep"))] + REDACTED


def _whole(match: re.Match[str], original: str) -> str:
    return REDACTED


def _private_key(match: re.Match[str], original: str) -> str:
    return "-----BEGIN PRIVATE KEY-----" + REDACTED + "-----END PRIVATE KEY-----"


# Values that name a secret without being one: kept, so redaction does not mangle documentation and code.
_NOT_SECRET_VALUES = frozenset({"null", "none", "true", "false", "undefined", "required", "optional", "string",
                                "bearer", "basic", "password", "secret", "token", "redacted", "xxxx", "****"})
_NOT_SECRET_STARTS = ("$", "<", "[redacted", "%", "{", "os.environ", "process.env", "getenv", "env(", "***")


def _named_value(match: re.Match[str], original: str) -> str:
    if not _is_secret_name(match):
        return original
    value = match.group("value").lower()
    if value.strip(".") in _NOT_SECRET_VALUES or value.startswith(_NOT_SECRET_STARTS):
        return original
    # "KEY=sk-[REDACTED]": the vendor rule already ran
    if match.string[match.end():match.end() + 10].lower() == "[redacted]":
        return original
    return _keep_prefix(match, original)


# "key" alone is every dictionary's key; only these qualifiers make it a credential (API_KEY, secret_key, ...).
_KEY_QUALIFIERS = ("api", "access", "secret", "private", "auth", "signing", "encryption", "master", "client",
                   "license", "app", "service")
# "tokens" and "tokenizer" count things (max_tokens); a session is a secret only as its id, token or key.
_NOT_SECRET_NAMES = ("tokens", "tokeniz", "keys", "keyword", "keyboard")


def _is_secret_name(match: re.Match[str]) -> bool:
    name = match.group("name").lower()
    keep = match.group("keep").lower()
    if keep.startswith(_NOT_SECRET_NAMES):
        return False
    if name == "session":
        return keep[7:].lstrip("_-").startswith(("id", "token", "key", "secret"))
    if name == "key":
        before = match.string[max(0, match.start() - 12):match.start()].lower().rstrip("_- ")
        return before.endswith(_KEY_QUALIFIERS)
    return True


# Rules on the text as written (vendor formats are case-sensitive).
_CASED_RULES: tuple[_Rule, ...] = (
    (re.compile(r"(?P<keep>-----BEGIN [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----)"
                r"[\s\S]*?(?:-----END [A-Z0-9 ]{0,40}PRIVATE KEY(?: BLOCK)?-----|\Z)"), _private_key),
    (re.compile(r"eyJ[A-Za-z0-9_-]{8,2000}\.eyJ[A-Za-z0-9_-]{8,4000}\.[A-Za-z0-9_-]{8,2000}"), _whole),
    # Anchored on the separator that ends a vendor prefix and checked by look-behinds (the prefix is kept:
    # "sk-[REDACTED]"); one pattern per separator, because a single literal first character is what `re` finds
    # fastest. A prefix that continues a longer word ("task-management") is not one.
    (re.compile(r"(?P<keep>-)(?:(?<=(?<![A-Za-z0-9_-])sk-)|(?<=(?<![A-Za-z0-9_-])glpat-)|"
                r"(?<=(?<![A-Za-z0-9_-])xox[abposr]-)|(?<=(?<![A-Za-z0-9_-])pypi-))[A-Za-z0-9_-]{16,400}"),
     _keep_prefix),
    (re.compile(r"(?P<keep>_)(?:(?<=(?<![A-Za-z0-9_-])[rsp]k_live_)|(?<=(?<![A-Za-z0-9_-])gh[pousr]_)|"
                r"(?<=(?<![A-Za-z0-9_-])github_pat_)|(?<=(?<![A-Za-z0-9_-])hf_)|(?<=(?<![A-Za-z0-9_-])npm_))"
                r"[A-Za-z0-9_-]{16,400}"), _keep_prefix),
    (re.compile(r"(?P<keep>A(?:Iza|KIA|SIA))[A-Za-z0-9_-]{16,400}"), _keep_prefix),
    # user:password@ after a scheme; database URLs (postgres://, mysql://, mongodb+srv://, redis://) included.
    (re.compile(r"(?P<keep>://[^\s:/@\"'<>]{1,200}:)[^\s/@\"'<>]{1,400}@"), lambda m, o: _keep_prefix(m, o) + "@"),
    # Telegram bot tokens: the numeric bot id stays, the secret after ":AA" goes.
    (re.compile(r"(?P<keep>:)AA[A-Za-z0-9_-]{33}"), _keep_prefix),
)
# Rules on a lower-cased copy: name-driven fields (ENV assignments, JSON/YAML keys, query parameters) and
# Authorization schemes, one pattern per word (a literal prefix is scanned about twice as fast as an alternation
# of words); which matches name a secret is decided in `_is_secret_name`.
_SECRET_NAMES = ("key", "token", "secret", "passw", "pwd", "credential", "session")
_LOWER_RULES: tuple[_Rule, ...] = (
    *((re.compile(rf"(?P<keep>(?P<name>{name})[a-z0-9_-]{{0,40}}[\"']?[ \t]{{0,3}}[:=][ \t]{{0,3}}[\"']?)"
                  r"(?P<value>[^\s\"',;&<>{}\[\]()]{4,4000})"), _named_value) for name in _SECRET_NAMES),
    *((re.compile(rf"(?P<keep>{scheme} {{1,4}})[a-z0-9._~+/=-]{{12,4000}}"), _keep_prefix)
      for scheme in ("bearer", "basic")),
)


# The same rules for the rare text whose lower-casing changes its length (offsets would not line up).
_ANY_CASE_RULES: tuple[_Rule, ...] = tuple((re.compile(p.pattern, re.IGNORECASE), r) for p, r in _LOWER_RULES)


def redact_secrets(text: str) -> str:
    """``text`` with every credential replaced by ``[REDACTED]`` (key names and vendor prefixes kept)."""
    if not text:
        return text
    for pattern, replace in _CASED_RULES:
        text = _apply(pattern, replace, text, text)
    lowered = text.lower()
    if len(lowered) != len(text):
        for pattern, replace in _ANY_CASE_RULES:
            text = _apply(pattern, replace, text, text)
        return text
    for pattern, replace in _LOWER_RULES:
        redacted = _apply(pattern, replace, lowered, text)
        if redacted is not text:
            text, lowered = redacted, redacted.lower()
    return text


def _apply(pattern: re.Pattern[str], replace: Callable[[re.Match[str], str], str], source: str, text: str) -> str:
    """Replace the matches found in ``source`` (``text`` or its lower-cased twin) in ``text``."""
    pieces: list[str] = []
    done = 0
    for match in pattern.finditer(source):
        start, end = match.span()
        pieces.append(text[done:start])
        pieces.append(replace(match, text[start:end]))
        done = end
    if not pieces:
        return text
    pieces.append(text[done:])
    return "".join(pieces)
