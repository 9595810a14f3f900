"""`redact_secrets`: every credential shape goes, ordinary text stays, and the scan is linear."""

from __future__ import annotations

import time

import pytest
from conftest import corpus_conversations
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxplug.messages import content_text
from ctxplug.redact import redact_secrets

CASES = [
    ("OPENAI_API_KEY=sk-proj-Zq9xLm2Wv8Tn4Rb6Yc1Hd7K", "sk-proj-Zq9x", "OPENAI_API_KEY=sk-[REDACTED]"),
    ("use sk-ant-api03-Zq9xLm2Wv8Tn4Rb6Yc1Hd7Kf3 now", "api03-Zq9x", "use sk-[REDACTED] now"),
    ("ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "AbCdEf", "ghp_[REDACTED]"),
    ("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "11ABCDEFG", "github_pat_[REDACTED]"),
    ("key=AIzaSyA-abcdefghijklmnopqrstuvwxyz12345", "SyA-abc", "AIza[REDACTED]"),
    ("aws AKIAIOSFODNN7EXAMPLE", "IOSFODNN7", "aws AKIA[REDACTED]"),
    ("slack xoxb-123456789012-abcdefghijklmn", "123456789012", "slack xoxb-[REDACTED]"),
    ("glpat-abcdefghijklmnopqrst", "abcdefghij", "glpat-[REDACTED]"),
    ("HF hf_abcdefghijklmnopqrstuvwxyz0123456789", "abcdefghij", "HF hf_[REDACTED]"),
    ("jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N", "dozjgNry", "jwt [REDACTED]"),
    ("Authorization: Bearer abcdef1234567890abcdef", "abcdef1234", "Authorization: Bearer [REDACTED]"),
    ("curl -H 'authorization: basic dXNlcjpwYXNzd29yZA=='", "dXNlcjpw", "authorization: basic [REDACTED]"),
    ("postgres://admin:s3cr3t-pw@db.internal:5432/app", "s3cr3t", "postgres://admin:[REDACTED]@db.internal"),
    ("mongodb+srv://u:p4ssw0rd@cluster0.mongodb.net", "p4ssw0rd", "mongodb+srv://u:[REDACTED]@"),
    ("GET /cb?code=1&access_token=deadbeefcafe1234&x=1", "deadbeef", "access_token=[REDACTED]&x=1"),
    ('{"api_key": "abc123def456", "password": "hunter22"}', "hunter22", '"password": "[REDACTED]"'),
    ("db:\n  password: correct-horse-battery\n", "correct-horse", "password: [REDACTED]"),
    ("export GITHUB_TOKEN=gho_abcdefghijklmnopqrstuvwxyz1234", "abcdefghij", "GITHUB_TOKEN=gho_[REDACTED]"),
    ("SECRET_KEY=django-insecure-q9x", "insecure", "SECRET_KEY=[REDACTED]"),
    ("session_id=abcdef123456", "abcdef123456", "session_id=[REDACTED]"),
    ("bot 123456789:AAHdqTcvCH1vGWJxfSeofSAs0K5PALDsawX", "HdqTcv", "123456789:[REDACTED]"),
    ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----\nnext", "MIIEow",
     "-----BEGIN PRIVATE KEY-----[REDACTED]-----END PRIVATE KEY-----\nnext"),
    ("İstanbul PASSWORD=Zq9xLm2 then Bearer abcdefghijklmnop1", "Zq9xLm2", "PASSWORD=[REDACTED]"),
]

KEPT = [
    "task-management-system-design-doc-abcdefghijkl",
    '{"max_tokens": 4096, "prompt_tokens": 12, "tokenizer": "o200k_base"}',
    "keys: typing.Optional[typing.Union[Field, type]] = None",
    "sort_key=lambda item: item.name",
    "password = os.environ['DB_PASSWORD']",
    "token: ${GITHUB_TOKEN}",
    "See https://github.com/org/repo and git@github.com:org/repo.git",
    "The session: new one started",
]


@pytest.mark.parametrize(("text", "secret_part", "expected"), CASES)
def test_credentials_are_redacted_and_their_kind_stays_visible(text: str, secret_part: str, expected: str) -> None:
    redacted = redact_secrets(text)
    assert secret_part not in redacted
    assert expected in redacted


@pytest.mark.parametrize("text", KEPT)
def test_ordinary_text_is_left_alone(text: str) -> None:
    assert redact_secrets(text) == text


def test_the_corpus_has_nothing_to_redact() -> None:
    # Real transcripts with code, JSON and shell output: a false positive here would mangle summaries.
    for name, messages in corpus_conversations():
        for message in messages:
            text = content_text(message)
            assert redact_secrets(text) == text, name


def test_redaction_is_idempotent() -> None:
    once = redact_secrets(" ".join(text for text, _, _ in CASES))
    assert redact_secrets(once) == once


@pytest.mark.parametrize("unit", ["a", "sk-", "key=", "://a:", "-----BEGIN PRIVATE KEY-----", "eyJ", "_", "Bearer "])
def test_adversarial_input_scans_in_linear_time(unit: str) -> None:
    small, large = unit * 2_000, unit * 40_000
    started = time.process_time()
    redact_secrets(small)
    small_time = time.process_time() - started
    started = time.process_time()
    redact_secrets(large)
    large_time = time.process_time() - started
    assert large_time < max(small_time, 1e-3) * 20 * 3  # 20x the input, at most ~3x noise on top
    assert large_time < 1.0


@settings(max_examples=60, deadline=None)
@given(before=st.text(max_size=80), after=st.text(max_size=80),
       secret=st.sampled_from([c for c in CASES if not c[0].startswith("İ")]))
def test_a_credential_is_redacted_inside_any_text(before: str, after: str, secret: tuple[str, str, str]) -> None:
    text, secret_part, _ = secret
    assert secret_part not in redact_secrets(f"{before} {text} {after}") or secret_part in before + after
