"""The client's settings: constructor arguments, environment variables, the user config file, defaults.

The same rules as the TypeScript client and the CLI (docs/client.md), so one config file serves all three.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from typing import List, Mapping, Optional, Tuple
from urllib.parse import urlsplit

from ._errors import ConfigurationError

DEFAULT_BASE_URL = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT = 60.0
DEFAULT_MAX_RETRIES = 2
ENVIRONMENTS = ("production", "sandbox")


@dataclass(frozen=True)
class ConfigEndpoint:
    """One named endpoint of the user config file: where a deployment is and, optionally, its key."""

    name: str
    environment: Optional[str]
    region: Optional[str]
    base_url: str
    api_key: Optional[str]

    def __repr__(self) -> str:  # the key stays out of logs
        return (
            f"ConfigEndpoint(name={self.name!r}, environment={self.environment!r}, "
            f"region={self.region!r}, base_url={self.base_url!r})"
        )


@dataclass(frozen=True)
class ConfigFile:
    path: str
    current: Optional[str]
    endpoints: List[ConfigEndpoint]


@dataclass(frozen=True)
class ResolvedConfig:
    api_key: str
    base_url: str
    environment: Optional[str]
    region: Optional[str]
    endpoint: Optional[ConfigEndpoint]
    config_path: str
    timeout: float
    max_retries: int
    #: Where the key and the base URL came from: option, env, config or default.
    api_key_source: str
    base_url_source: str

    def __repr__(self) -> str:
        return f"ResolvedConfig(base_url={self.base_url!r}, environment={self.environment!r}, region={self.region!r})"


def env_text(env: Mapping[str, str], name: str) -> Optional[str]:
    """A set, non-blank environment variable, stripped; None otherwise."""
    value = (env.get(name) or "").strip()
    return value or None


def config_file_path(env: Mapping[str, str]) -> str:
    """EVALGATE_CONFIG, else $XDG_CONFIG_HOME/evalgate/config.json, else ~/.config/evalgate/config.json."""
    explicit = env_text(env, "EVALGATE_CONFIG")
    if explicit:
        return os.path.abspath(explicit)
    xdg = env_text(env, "XDG_CONFIG_HOME")
    base = xdg if xdg and os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "evalgate", "config.json")


def normalize_base_url(value: str, source: str) -> str:
    """A base URL without trailing slashes or a trailing /v1 (the API's paths carry it), checked as http(s)."""
    text = value.strip()
    try:
        parts = urlsplit(text)
    except ValueError:
        raise ConfigurationError(f"{source} is not a valid URL: '{value}'") from None
    if parts.scheme not in ("http", "https"):
        if not parts.scheme or not parts.netloc:
            raise ConfigurationError(f"{source} is not a valid URL: '{value}'")
        raise ConfigurationError(f"{source} must be an http:// or https:// URL, got '{value}'")
    if not parts.netloc:
        raise ConfigurationError(f"{source} is not a valid URL: '{value}'")
    if parts.query or parts.fragment:
        raise ConfigurationError(f"{source} must not carry a query or fragment, got '{value}'")
    netloc = parts.netloc.lower()
    # As WHATWG URL does: the default port is dropped, so both clients compare base URLs alike.
    if (parts.scheme == "http" and netloc.endswith(":80")) or (parts.scheme == "https" and netloc.endswith(":443")):
        netloc = netloc.rsplit(":", 1)[0]
    url = f"{parts.scheme}://{netloc}{parts.path}"
    url = re.sub(r"/+$", "", url)
    return re.sub(r"/v1$", "", url)


def _optional_text(raw: Mapping[str, object], key: str, where: str) -> Optional[str]:
    value = raw.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or value.strip() == "":
        raise ConfigurationError(f'{where}: "{key}" must be a non-empty string')
    return value.strip()


_KNOWN = ("name", "environment", "region", "base_url", "api_key")


def _parse_endpoint(raw: object, index: int, file: str) -> ConfigEndpoint:
    where = f"{file}: endpoints[{index}]"
    if not isinstance(raw, dict):
        raise ConfigurationError(f"{where} must be an object")
    unknown = [k for k in raw if k not in _KNOWN]
    if unknown:
        raise ConfigurationError(f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(_KNOWN)}")
    name = _optional_text(raw, "name", where)
    if name is None:
        raise ConfigurationError(f'{where}: "name" is required')
    environment = _optional_text(raw, "environment", where)
    if environment is not None and environment not in ENVIRONMENTS:
        raise ConfigurationError(
            f"{where}: \"environment\" must be one of {', '.join(ENVIRONMENTS)}, got '{environment}'"
        )
    base_url = _optional_text(raw, "base_url", where)
    if base_url is None:
        raise ConfigurationError(f'{where}: "base_url" is required')
    return ConfigEndpoint(
        name=name,
        environment=environment,
        region=_optional_text(raw, "region", where),
        base_url=normalize_base_url(base_url, f"{where}.base_url"),
        api_key=_optional_text(raw, "api_key", where),
    )


def read_config_file(file: str) -> Optional[ConfigFile]:
    """The config file at ``file``, checked; None when there is none."""
    try:
        with open(file, encoding="utf-8") as f:
            text = f.read()
    except FileNotFoundError:
        return None
    except OSError as err:
        raise ConfigurationError(f"Cannot read the Evalgate config file {file}: {err}") from None
    try:
        raw = json.loads(text)
    except ValueError as err:
        raise ConfigurationError(f"The Evalgate config file {file} is not valid JSON: {err}") from None
    if not isinstance(raw, dict):
        raise ConfigurationError(f"The Evalgate config file {file} must hold a JSON object")
    endpoints = raw.get("endpoints", [])
    if endpoints is None:
        endpoints = []
    if not isinstance(endpoints, list):
        raise ConfigurationError(f'{file}: "endpoints" must be an array')
    parsed = [_parse_endpoint(e, i, file) for i, e in enumerate(endpoints)]
    names = set()
    for e in parsed:
        if e.name in names:
            raise ConfigurationError(f"{file}: two endpoints are named '{e.name}'")
        names.add(e.name)
    current = _optional_text(raw, "current", file)
    if current is not None and current not in names:
        raise ConfigurationError(f"{file}: \"current\" names '{current}', which is not among the endpoints")
    return ConfigFile(path=file, current=current, endpoints=parsed)


Criteria = Tuple[Optional[str], Optional[str], Optional[str]]  # name, environment, region


def _describe(criteria: Criteria) -> str:
    name, environment, region = criteria
    parts = [
        f"name '{name}'" if name is not None else None,
        f"environment '{environment}'" if environment is not None else None,
        f"region '{region}'" if region is not None else None,
    ]
    return ", ".join(p for p in parts if p)


def match_endpoint(file: ConfigFile, criteria: Criteria, base_url: Optional[str] = None) -> Optional[ConfigEndpoint]:
    """The endpoint matching every given criterion; among several, the ``current`` one."""
    name, environment, region = criteria
    found = [
        e
        for e in file.endpoints
        if (base_url is None or e.base_url == base_url)
        and (name is None or e.name == name)
        and (environment is None or e.environment == environment)
        and (region is None or e.region == region)
    ]
    if len(found) <= 1:
        return found[0] if found else None
    for e in found:
        if e.name == file.current:
            return e
    what = ", ".join(p for p in (_describe(criteria), f"base_url {base_url}" if base_url else None) if p)
    raise ConfigurationError(
        f"Several endpoints of {file.path} match {what or 'the request'}: {', '.join(e.name for e in found)}; "
        'set EVALGATE_ENDPOINT (or the endpoint argument) to one of them, or make one of them "current"'
    )


def _pick(option: Optional[str], env_value: Optional[str]) -> Tuple[Optional[str], str]:
    if option is not None:
        return option, "option"
    if env_value is not None:
        return env_value, "env"
    return None, "default"


def _timeout(option: Optional[float], env: Mapping[str, str]) -> float:
    if option is not None:
        if isinstance(option, bool) or not isinstance(option, (int, float)) or not option > 0 or option == float("inf"):
            raise ConfigurationError(f"The timeout argument must be a positive number of seconds, got {option!r}")
        return float(option)
    raw = env_text(env, "EVALGATE_TIMEOUT")
    if raw is None:
        return DEFAULT_TIMEOUT
    seconds = float(raw) if re.fullmatch(r"\d+(\.\d+)?", raw) else float("nan")
    if not seconds > 0:
        raise ConfigurationError(f"EVALGATE_TIMEOUT must be a positive number of seconds, got '{raw}'")
    return seconds


def _max_retries(option: Optional[int], env: Mapping[str, str]) -> int:
    if option is not None:
        if isinstance(option, bool) or not isinstance(option, int) or not 0 <= option <= 100:
            raise ConfigurationError(f"The max_retries argument must be a whole number from 0 to 100, got '{option}'")
        return option
    raw = env_text(env, "EVALGATE_MAX_RETRIES")
    if raw is None:
        return DEFAULT_MAX_RETRIES
    if not re.fullmatch(r"\d+", raw) or int(raw) > 100:
        raise ConfigurationError(f"EVALGATE_MAX_RETRIES must be a whole number from 0 to 100, got '{raw}'")
    return int(raw)


def _strip(value: Optional[str]) -> Optional[str]:
    return value.strip() or None if isinstance(value, str) else None


def resolve_config(
    *,
    api_key: Optional[str] = None,
    base_url: Optional[str] = None,
    environment: Optional[str] = None,
    region: Optional[str] = None,
    endpoint: Optional[str] = None,
    timeout: Optional[float] = None,
    max_retries: Optional[int] = None,
    config_path: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
) -> ResolvedConfig:
    """Each setting from, in order: the argument, the environment variable, the config-file endpoint, the
    default. An explicit base URL always wins over endpoint selection; the file then only supplies the key
    of an endpoint with that very base URL. Selecting an endpoint that is not there is an error, never a
    silent fall-back to localhost."""
    env = os.environ if env is None else env
    env_value, env_source = _pick(environment, env_text(env, "EVALGATE_ENVIRONMENT"))
    if env_value is not None:
        env_value = env_value.strip()
        if env_value not in ENVIRONMENTS:
            name = "The environment argument" if env_source == "option" else "EVALGATE_ENVIRONMENT"
            raise ConfigurationError(f"{name} must be one of {', '.join(ENVIRONMENTS)}, got '{env_value}'")
    region_value, _ = _pick(_strip(region), env_text(env, "EVALGATE_REGION"))
    name_value, _ = _pick(_strip(endpoint), env_text(env, "EVALGATE_ENDPOINT"))
    criteria: Criteria = (name_value, env_value, region_value)
    selecting = any(c is not None for c in criteria)
    timeout_value = _timeout(timeout, env)
    retries = _max_retries(max_retries, env)

    raw_base, base_source = _pick(base_url, env_text(env, "EVALGATE_BASE_URL"))
    explicit_base = (
        None
        if raw_base is None
        else normalize_base_url(raw_base, "The base_url argument" if base_source == "option" else "EVALGATE_BASE_URL")
    )
    explicit_key, key_source = _pick(_strip(api_key), env_text(env, "EVALGATE_API_KEY"))

    path = config_path or config_file_path(env)
    # The file is read only when it can contribute, so a broken file never breaks a fully explicit setup.
    file = read_config_file(path) if explicit_base is None or explicit_key is None else None

    chosen: Optional[ConfigEndpoint] = None
    if explicit_base is None and file is not None:
        if selecting:
            chosen = match_endpoint(file, criteria)
        else:
            chosen = next((e for e in file.endpoints if e.name == file.current), None)
    elif explicit_base is not None and explicit_key is None and file is not None:
        chosen = match_endpoint(file, criteria, explicit_base)
    if explicit_base is None and selecting and chosen is None:
        where = f"there is no config file at {path}" if file is None else f"no endpoint of {path} matches"
        raise ConfigurationError(
            f"Cannot select an Evalgate endpoint by {_describe(criteria)}: {where}. "
            "Add one (see docs/client.md) or set EVALGATE_BASE_URL."
        )
    key = explicit_key if explicit_key is not None else (chosen.api_key if chosen else None)
    if key is None:
        from_file = (
            f", or add \"api_key\" to the endpoint '{chosen.name}' in {path}"
            if chosen
            else f" or in an endpoint of {path}"
        )
        raise ConfigurationError(
            f"Missing API key: set the EVALGATE_API_KEY environment variable, pass api_key= to Evalgate(){from_file}"
        )
    return ResolvedConfig(
        api_key=key,
        base_url=explicit_base or (chosen.base_url if chosen else DEFAULT_BASE_URL),
        environment=env_value or (chosen.environment if chosen else None),
        region=region_value or (chosen.region if chosen else None),
        endpoint=chosen,
        config_path=path,
        timeout=timeout_value,
        max_retries=retries,
        api_key_source=key_source if explicit_key is not None else "config",
        base_url_source=base_source if explicit_base is not None else ("config" if chosen else "default"),
    )
