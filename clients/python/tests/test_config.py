"""Configuration: arguments over environment variables over the user config file over defaults, as the
TypeScript client and the CLI read them."""

from __future__ import annotations

import json
import os
from typing import Any, Dict

import pytest
from live import Server

from evalgate import ConfigurationError, Evalgate, resolve_config


def write_config(tmp_path: Any, config: Dict[str, Any]) -> str:
    path = tmp_path / "evalgate" / "config.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(config))
    return str(path)


FILE = {
    "current": "prod-eu",
    "endpoints": [
        {
            "name": "prod-eu",
            "environment": "production",
            "region": "eu",
            "base_url": "https://eu.example.com/v1",
            "api_key": "eg_eu",
        },
        {
            "name": "prod-us",
            "environment": "production",
            "region": "us",
            "base_url": "https://us.example.com",
            "api_key": "eg_us",
        },
        {"name": "sandbox", "environment": "sandbox", "base_url": "http://127.0.0.1:9999"},
    ],
}


def test_defaults_and_environment_variables(tmp_path: Any) -> None:
    env = {"EVALGATE_API_KEY": "eg_env", "XDG_CONFIG_HOME": str(tmp_path)}
    c = resolve_config(env=env)
    assert (c.base_url, c.timeout, c.max_retries, c.api_key_source, c.base_url_source) == (
        "http://127.0.0.1:8080",
        60.0,
        2,
        "env",
        "default",
    )
    env.update(
        {"EVALGATE_BASE_URL": "http://10.0.0.5:8080/v1/", "EVALGATE_TIMEOUT": "2.5", "EVALGATE_MAX_RETRIES": "0"}
    )
    c = resolve_config(env=env)
    assert (c.base_url, c.timeout, c.max_retries) == ("http://10.0.0.5:8080", 2.5, 0)
    # Arguments win over variables.
    c = resolve_config(api_key="eg_arg", base_url="http://other:1", timeout=9, max_retries=5, env=env)
    assert (c.api_key, c.base_url, c.timeout, c.max_retries, c.api_key_source) == (
        "eg_arg",
        "http://other:1",
        9.0,
        5,
        "option",
    )


@pytest.mark.parametrize(
    "env,needle",
    [
        ({"EVALGATE_TIMEOUT": "soon"}, "EVALGATE_TIMEOUT"),
        ({"EVALGATE_MAX_RETRIES": "-1"}, "EVALGATE_MAX_RETRIES"),
        ({"EVALGATE_ENVIRONMENT": "staging"}, "EVALGATE_ENVIRONMENT"),
        ({"EVALGATE_BASE_URL": "ftp://x"}, "EVALGATE_BASE_URL"),
    ],
)
def test_bad_settings_name_their_variable(env: Dict[str, str], needle: str) -> None:
    with pytest.raises(ConfigurationError, match=needle):
        resolve_config(env={"EVALGATE_API_KEY": "eg_x", "EVALGATE_CONFIG": "/nonexistent", **env})


def test_config_file_selection_and_precedence(tmp_path: Any) -> None:
    path = write_config(tmp_path, FILE)
    env = {"EVALGATE_CONFIG": path}
    current = resolve_config(env=env)
    assert (current.base_url, current.api_key, current.endpoint.name, current.region) == (
        "https://eu.example.com",
        "eg_eu",
        "prod-eu",
        "eu",
    )
    assert current.api_key_source == "config" and current.base_url_source == "config"
    # Variables select an endpoint; the current one among several matches.
    assert resolve_config(env={**env, "EVALGATE_ENVIRONMENT": "production", "EVALGATE_REGION": "us"}).api_key == "eg_us"
    assert resolve_config(env={**env, "EVALGATE_ENVIRONMENT": "production"}).endpoint.name == "prod-eu"
    # An argument wins over the variable, criterion by criterion.
    assert resolve_config(region="us", env={**env, "EVALGATE_REGION": "eu"}).endpoint.name == "prod-us"
    # The key of the environment wins over the endpoint's.
    assert resolve_config(env={**env, "EVALGATE_API_KEY": "eg_env"}).api_key == "eg_env"
    # An endpoint without a key needs one from elsewhere.
    with pytest.raises(ConfigurationError, match="api_key"):
        resolve_config(env={**env, "EVALGATE_ENDPOINT": "sandbox"})
    assert (
        resolve_config(api_key="eg_arg", env={**env, "EVALGATE_ENDPOINT": "sandbox"}).base_url
        == "http://127.0.0.1:9999"
    )
    # Selecting what is not there is an error, never a fall-back to localhost.
    with pytest.raises(ConfigurationError, match="region 'ap'"):
        resolve_config(env={**env, "EVALGATE_REGION": "ap"})


def test_explicit_base_url_takes_only_its_own_endpoints_key(tmp_path: Any) -> None:
    path = write_config(tmp_path, FILE)
    same = resolve_config(env={"EVALGATE_CONFIG": path, "EVALGATE_BASE_URL": "https://us.example.com/"})
    assert (same.api_key, same.endpoint.name) == ("eg_us", "prod-us")
    with pytest.raises(ConfigurationError, match="Missing API key"):
        resolve_config(env={"EVALGATE_CONFIG": path, "EVALGATE_BASE_URL": "https://elsewhere.example.com"})


def test_a_broken_file_is_read_only_when_it_could_contribute(tmp_path: Any) -> None:
    path = tmp_path / "broken.json"
    path.write_text("{not json")
    with pytest.raises(ConfigurationError, match="not valid JSON"):
        resolve_config(env={"EVALGATE_CONFIG": str(path), "EVALGATE_API_KEY": "eg_x"})
    ok = resolve_config(
        env={"EVALGATE_CONFIG": str(path), "EVALGATE_API_KEY": "eg_x", "EVALGATE_BASE_URL": "http://h:1"}
    )
    assert ok.base_url == "http://h:1"
    for bad, needle in (
        ({"endpoints": [{"name": "a", "base_url": "http://a", "colour": "red"}]}, "unknown field"),
        (
            {"endpoints": [{"name": "a", "base_url": "http://a"}, {"name": "a", "base_url": "http://b"}]},
            "two endpoints",
        ),
        ({"current": "b", "endpoints": [{"name": "a", "base_url": "http://a"}]}, "not among the endpoints"),
    ):
        with pytest.raises(ConfigurationError, match=needle):
            resolve_config(env={"EVALGATE_CONFIG": write_config(tmp_path, bad)})


def test_the_same_file_the_typescript_client_reads(tmp_path: Any) -> None:
    """XDG_CONFIG_HOME/evalgate/config.json is found without EVALGATE_CONFIG."""
    write_config(tmp_path, FILE)
    c = resolve_config(env={"XDG_CONFIG_HOME": str(tmp_path)})
    assert c.config_path == os.path.join(str(tmp_path), "evalgate", "config.json") and c.api_key == "eg_eu"


def test_the_key_stays_out_of_reprs(tmp_path: Any) -> None:
    c = Evalgate(api_key="eg_secret_value", base_url="http://h:1", env={})
    assert "eg_secret_value" not in repr(c) and "eg_secret_value" not in repr(c._config)


def test_live_server_from_the_config_file(server: Server, tmp_path: Any) -> None:
    path = write_config(
        tmp_path,
        {
            "current": "elsewhere",
            "endpoints": [
                {"name": "elsewhere", "base_url": "http://127.0.0.1:9", "api_key": "eg_wrong"},
                {"name": "local", "environment": "sandbox", "base_url": server.base_url, "api_key": server.key},
            ],
        },
    )
    # The environment selects the live endpoint; its key comes from the file.
    c = Evalgate(env={"EVALGATE_CONFIG": path, "EVALGATE_ENVIRONMENT": "sandbox"})
    assert c.endpoint is not None and c.endpoint.name == "local" and c.environment == "sandbox"
    assert c.health() == {"ok": True} and c.containers.list().object == "list"
    # An argument beats the variable: the current endpoint by name would fail to connect.
    assert (
        Evalgate(endpoint="local", env={"EVALGATE_CONFIG": path, "EVALGATE_ENDPOINT": "elsewhere"}).base_url
        == server.base_url
    )
    # The real process environment is read when no env= is given.
    saved = dict(os.environ)
    try:
        os.environ["EVALGATE_CONFIG"] = path
        os.environ["EVALGATE_ENDPOINT"] = "local"
        os.environ.pop("EVALGATE_API_KEY", None)
        os.environ.pop("EVALGATE_BASE_URL", None)
        assert Evalgate().containers.list().object == "list"
    finally:
        os.environ.clear()
        os.environ.update(saved)
