"""Decisions the library makes, not the CLI: the distributed role, the resumed settings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcunas.distributed.role import Role, RoleKind, apply_role, role_from_env
from mcunas.errors import UserError
from mcunas.search.results.store import TrialStore
from mcunas.search.settings.config import WARM_START_ENV, SearchConfig


def test_keras_tuner_variables_give_the_role() -> None:
    assert role_from_env({}) == Role(RoleKind.LOCAL)
    env = {"KERASTUNER_ORACLE_IP": "10.0.0.2", "KERASTUNER_ORACLE_PORT": "8000"}
    chief = role_from_env({**env, "KERASTUNER_TUNER_ID": "chief"})
    assert chief == Role(RoleKind.CHIEF, "10.0.0.2:8000", "chief")
    worker = role_from_env({**env, "KERASTUNER_TUNER_ID": "tuner0"})
    assert worker.kind == RoleKind.WORKER and worker.name == "tuner0"
    with pytest.raises(UserError, match="also set KERASTUNER_ORACLE_PORT"):
        role_from_env({"KERASTUNER_ORACLE_IP": "10.0.0.2"})


def _no_join(*args: object, **kwargs: object) -> None:
    raise AssertionError("only a worker joins a chief")


def test_a_chief_serves_on_keras_tuners_address_unless_serve_names_one() -> None:
    role = Role(RoleKind.CHIEF, "10.0.0.2:8000", "chief")
    config = SearchConfig(board="esp32s3")
    assert apply_role(role, config, join=_no_join) is False and config.serve == "10.0.0.2:8000"
    given = SearchConfig(board="esp32s3", serve="0.0.0.0:9000")
    apply_role(role, given, join=_no_join)
    assert given.serve == "0.0.0.0:9000"
    local = SearchConfig(board="esp32s3")
    assert apply_role(Role(RoleKind.LOCAL), local, join=_no_join) is False
    assert local.serve is None


def test_a_keras_tuner_worker_joins_with_the_doors_token_and_ca(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ca = tmp_path / "chief.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n")
    monkeypatch.setenv("MCUNAS_TOKEN", "s3cret")
    monkeypatch.setenv("MCUNAS_TLS_CA", str(ca))
    joined: list[Any] = []
    role = Role(RoleKind.WORKER, "10.0.0.2:8000", "tuner0")
    assert apply_role(role, SearchConfig(board="esp32s3"), join=lambda s, **_: joined.append(s))
    (settings,) = joined
    assert settings.connect == "10.0.0.2:8000" and settings.name == "tuner0"
    assert settings.token == "s3cret" and settings.tls_ca == ca.read_bytes()


def _stored(tmp_path: Path, config: SearchConfig) -> Path:
    store = TrialStore.open(tmp_path)
    store.set_meta("config", config.to_dict())
    store.close()
    return tmp_path


def test_a_resumed_config_is_the_stored_one_with_the_given_options_over_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(WARM_START_ENV, raising=False)
    first = SearchConfig(board="esp32s3", epochs=7, families=("stages",), warm_start=False)
    out = str(_stored(tmp_path, first))
    again = SearchConfig.resumed(out, {"max_trials": 40})
    assert again.resume and again.out == out and again.max_trials == 40
    assert again.epochs == 7 and again.families == ("stages",) and again.warm_start is False
    monkeypatch.setenv(WARM_START_ENV, "1")  # the environment's switch counts as given
    assert SearchConfig.resumed(out, {}).warm_start is True


def test_nothing_to_resume_is_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="Nothing to resume"):
        SearchConfig.resumed(str(tmp_path / "none"), {})


def test_a_store_from_before_the_warm_start_field_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(WARM_START_ENV, raising=False)
    old = SearchConfig(board="esp32s3").to_dict()
    del old["warm_start"]
    store = TrialStore.open(tmp_path)
    store.set_meta("config", old)
    store.close()
    assert SearchConfig.resumed(str(tmp_path), {}).warm_start is True
