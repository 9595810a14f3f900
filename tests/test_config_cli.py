"""`ctxplug config show | get | set | check` through ctxplug.cli.main, in a temporary working directory."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ctxplug import load_config
from ctxplug.cli import main

COMMENTED = """\
# team settings: keep the comments
context:
  engine: compressor          # or "lcm"
compression:
  enabled: true
  threshold: 0.50             # fraction of the window
  target_ratio: 0.20

# summaries
auxiliary:
  compression:                # the model that writes summaries
    model: null               # null: detect
prompt_caching:
  cache_ttl: "5m"             # "5m" or "1h"
"""


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CTXPLUG_CONFIG", raising=False)
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def comment_lines(text: str) -> list[str]:
    return [line[line.index("#"):] for line in text.splitlines() if "#" in line]


def test_show_prints_the_effective_configuration_as_yaml(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "config.yaml").write_text("compression:\n  threshold: 0.6\n")
    code, out, _ = run(capsys, "config", "show")
    assert code == 0
    shown = yaml.safe_load(out)
    assert shown["compression"]["threshold"] == 0.6
    assert shown["compression"]["protect_last_n"] == 20  # defaults filled in
    assert shown["prompt_caching"]["cache_ttl"] == "5m"
    assert out.startswith("# effective configuration (config.yaml)")


def test_show_without_a_file_shows_defaults_and_masks_secrets(workdir: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "config", "show")
    assert code == 0 and "defaults, no config file" in out
    assert yaml.safe_load(out)["context"]["engine"] == "compressor"
    (workdir / "config.yaml").write_text("auxiliary:\n  compression:\n    api_key: sk-secret-123\n")
    _, out, _ = run(capsys, "config", "show")
    assert "sk-secret-123" not in out and "api_key: '***'" in out


def test_get_prints_one_value(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "config.yaml").write_text(COMMENTED + "models:\n  gpt-5.5: 272000\n")
    assert run(capsys, "config", "get", "compression.threshold")[1] == "0.5\n"
    assert run(capsys, "config", "get", "context.engine")[1] == "compressor\n"
    assert run(capsys, "config", "get", "compression.codex_gpt55_autoraise")[1] == "true\n"
    assert run(capsys, "config", "get", "auxiliary.compression.model")[1] == "null\n"
    assert run(capsys, "config", "get", "models.gpt-5.5")[1] == "272000\n"  # model names keep their dots
    assert yaml.safe_load(run(capsys, "config", "get", "compression")[1])["target_ratio"] == 0.2


@pytest.mark.parametrize(("argv", "fragment"), [
    (["config", "get", "compression.thresold"], "compression.thresold: unknown key (did you mean 'threshold'?)"),
    (["config", "get", "models.not-there"], "models.not-there: not set"),
    (["config", "get", "compression.threshold.x"], "compression.threshold: is a single value and has no key 'x'"),
    (["config", "set", "compression.threshold", "1.5"], "compression.threshold: 1.5 is out of range"),
    (["config", "set", "compression.threshold", "high"], "compression.threshold: expected a number from 0.0 to 1.0"),
    (["config", "set", "compression.protect_last_n", "0"], "compression.protect_last_n: 0 is out of range"),
    (["config", "set", "compression.enabled", "maybe"], "compression.enabled: expected true or false"),
    (["config", "set", "prompt_caching.cache_ttl", "1hr"], "'1hr' is not allowed (did you mean '1h'?)"),
    (["config", "set", "compression", "off"], "compression: is a section; set one of its keys"),
    (["config", "set", "models.big", "-5"], "models.big: -5 is out of range"),
])
def test_errors_are_one_line_on_stderr_with_exit_2(workdir: Path, capsys: pytest.CaptureFixture[str],
                                                    argv: list[str], fragment: str) -> None:
    (workdir / "config.yaml").write_text(COMMENTED)
    code, out, err = run(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("ctxplug: error: ") and err.count("\n") == 1
    assert fragment in err
    assert "Traceback" not in err
    assert (workdir / "config.yaml").read_text() == COMMENTED  # a rejected value never touches the file


def test_set_keeps_every_comment_and_other_line(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = workdir / "config.yaml"
    path.write_text(COMMENTED)
    assert run(capsys, "config", "set", "compression.threshold", "0.7")[0] == 0
    assert run(capsys, "config", "set", "compression.codex_gpt55_autoraise", "false")[0] == 0
    assert run(capsys, "config", "set", "auxiliary.compression.model", "gpt-4o-mini")[0] == 0
    assert run(capsys, "config", "set", "prompt_caching.cache_ttl", "1h")[0] == 0
    assert run(capsys, "config", "set", "models.anthropic/claude-sonnet-4.5", "200000")[0] == 0
    text = path.read_text()
    assert comment_lines(text) == comment_lines(COMMENTED)
    assert "  threshold: 0.7              # fraction of the window\n" in text  # the comment keeps its column
    assert "  target_ratio: 0.20\n" in text  # untouched lines keep their spelling
    config = load_config(path)
    assert config.compression.threshold == 0.7
    assert config.compression.codex_gpt55_autoraise is False
    assert config.auxiliary.compression.model == "gpt-4o-mini"
    assert config.prompt_caching.cache_ttl == "1h"
    assert config.models == {"anthropic/claude-sonnet-4.5": 200_000}
    # the new key went into its section, not to the end of the file
    assert text.index("codex_gpt55_autoraise") < text.index("# summaries")


def test_set_string_keys_take_the_text_as_is(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = workdir / "config.yaml"
    path.write_text(COMMENTED)
    code, out, _ = run(capsys, "config", "set", "context.engine", "no")
    assert code == 0 and "context.engine = 'no'" in out
    assert load_config(path).context.engine == "no"  # quoted in the file, so YAML 1.1 cannot turn it into false
    assert run(capsys, "config", "set", "auxiliary.compression.model", "null")[0] == 0
    assert load_config(path).auxiliary.compression.model is None


def test_set_creates_config_yaml_when_none_exists(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "config", "set", "compression.codex_gpt55_autoraise", "false")
    assert code == 0
    assert (workdir / "config.yaml").read_text() == "compression:\n  codex_gpt55_autoraise: false\n"
    assert "config.yaml: compression.codex_gpt55_autoraise = false" in out


def test_set_honours_the_global_config_option(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = workdir / "elsewhere.yaml"
    assert run(capsys, "--config", str(other), "config", "set", "context.engines.lcm.db", "lcm.sqlite")[0] == 0
    assert load_config(other).engine_options("lcm") == {"db": "lcm.sqlite"}
    assert not (workdir / "config.yaml").exists()
    assert run(capsys, "--config", str(other), "config", "get", "context.engines.lcm.db")[1] == "lcm.sqlite\n"


def test_set_into_a_flow_section_falls_back_to_a_full_rewrite(workdir: Path, capsys: pytest.CaptureFixture[str],
                                                               caplog: pytest.LogCaptureFixture) -> None:
    path = workdir / "config.yaml"
    path.write_text("compression: {threshold: 0.5}  # inline\n")
    assert run(capsys, "config", "set", "compression.threshold", "0.6")[0] == 0
    assert path.read_text() == "compression: {threshold: 0.6}  # inline\n"  # an existing key edits in place
    assert run(capsys, "config", "set", "compression.enabled", "false")[0] == 0
    assert "rewriting it without its comments" in caplog.text
    config = load_config(path)
    assert (config.compression.threshold, config.compression.enabled) == (0.6, False)


def test_check_prints_ok_or_the_error(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "config", "check")
    assert code == 0 and "ok" in out
    (workdir / "config.yaml").write_text(COMMENTED)
    code, out, _ = run(capsys, "config", "check")
    assert (code, out) == (0, "config.yaml: ok\n")
    (workdir / "config.yaml").write_text("compression:\n  threshold: 0.5\n  threshold: 0.6\n")
    code, out, err = run(capsys, "config", "check")
    assert code == 2 and out == ""
    assert "config.yaml:3: compression.threshold: duplicate key (first given on line 2)" in err


def test_an_explicit_missing_config_is_an_error_naming_it(workdir: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--config", "missing.yaml", "config", "show")
    assert code == 2 and "missing.yaml: no such config file" in err


def test_show_output_loads_back_as_the_same_configuration(workdir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (workdir / "config.yaml").write_text(COMMENTED + "models:\n  gpt-5.5: 272000\n")
    _, out, _ = run(capsys, "config", "show")
    (workdir / "shown.yaml").write_text(out)
    assert load_config(workdir / "shown.yaml") == load_config(workdir / "config.yaml")


def test_set_into_a_missing_directory_is_an_error_not_a_traceback(workdir: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "--config", "no/such/dir/config.yaml", "config", "set", "compression.enabled", "false")
    assert code == 2 and err.startswith("ctxplug: error: no/such/dir/config.yaml: cannot write the config file")
