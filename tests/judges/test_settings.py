"""Settings: flag > environment > luban.toml > default, resolved once; the key never shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from judges.settings import Secret, SettingsError, resolve

KEY = "sk-luban-test-7f3a9c2e5b"


def test_precedence_flag_over_env_over_file_over_default(tmp_path: Path):
    toml = tmp_path / "luban.toml"
    toml.write_text('[luban]\njudge_model = "from-file"\ntarget_model = "file-target"\nmax_concurrency = 3\n')
    env = {"LUBAN_JUDGE_MODEL": "from-env", "LUBAN_MAX_CONCURRENCY": "6"}
    s = resolve({"judge_model": "from-flag"}, env, toml)
    assert s.judge_model == "from-flag" and s.max_concurrency == 6 and s.target_model == "file-target"
    assert s.editor_model == "gpt-4o-mini"  # default
    assert dict(s.sources) == {"judge_model": "flag", "max_concurrency": "$LUBAN_MAX_CONCURRENCY", "target_model": str(toml)}


def test_no_key_and_no_base_url_is_offline(tmp_path: Path):
    assert resolve({}, {}, tmp_path / "none.toml").backend == "offline"
    assert resolve({}, {"OPENAI_BASE_URL": "http://127.0.0.1:8000/v1"}, tmp_path / "n").backend == "openai"
    assert resolve({}, {"OPENAI_API_KEY": KEY}, tmp_path / "n").backend == "openai"


def test_the_key_never_shows(tmp_path: Path):
    s = resolve({}, {"OPENAI_API_KEY": KEY}, tmp_path / "n")
    for shown in (repr(s), str(s), f"{s.api_key}", str(s.describe()), repr(s.api_key)):
        assert KEY not in shown
    assert s.api_key.reveal() == KEY and s.describe()["api_key"] == "set"


def test_key_in_the_file_is_refused(tmp_path: Path):
    toml = tmp_path / "luban.toml"
    toml.write_text(f'[luban]\napi_key = "{KEY}"\n')
    with pytest.raises(SettingsError, match="OPENAI_API_KEY") as caught:
        resolve({}, {}, toml)
    assert KEY not in str(caught.value)


@pytest.mark.parametrize("env, needle", [({"LUBAN_MAX_CONCURRENCY": "zero"}, "$LUBAN_MAX_CONCURRENCY: max_concurrency"),
                                         ({"LUBAN_MAX_LLM_CALLS": "0"}, "at least 1"),
                                         ({"LUBAN_STRUCTURED_OUTPUT": "maybe"}, "auto, json_schema, json_object or off")])
def test_invalid_values_name_where_they_came_from(tmp_path: Path, env, needle):
    with pytest.raises(SettingsError, match="not valid") as caught:
        resolve({}, env, tmp_path / "n")
    assert needle in str(caught.value)


def test_unknown_and_broken_files_are_named(tmp_path: Path):
    toml = tmp_path / "luban.toml"
    toml.write_text("[luban]\njudge = 'x'\n")
    with pytest.raises(SettingsError, match="unknown setting"):
        resolve({}, {}, toml)
    toml.write_text("[luban\n")
    with pytest.raises(SettingsError, match="not valid TOML"):
        resolve({}, {}, toml)


def test_same_source_is_detected(tmp_path: Path):
    assert resolve({"editor_model": "m", "judge_model": "m"}, {}, tmp_path / "n").same_source
    assert not resolve({"editor_model": "e", "judge_model": "j"}, {}, tmp_path / "n").same_source


def test_secret_equality_and_truthiness():
    assert Secret("a") == Secret("a") and Secret("a") != Secret("b") and not Secret("")
