"""The released versions of a package, as its index lists them: the index the user configured (uv's or pip's), else
PyPI's JSON API, or a local folder of wheels (what the tests serve through UV_FIND_LINKS). Final releases only (no
pre-, dev- or yanked releases), oldest first."""

from __future__ import annotations

import configparser
import html
import json
import os
import re
import urllib.request
from pathlib import Path

from packaging.utils import (
    InvalidSdistFilename,
    InvalidWheelFilename,
    canonicalize_name,
    parse_sdist_filename,
    parse_wheel_filename,
)
from packaging.version import InvalidVersion, Version

from bench.base.errors import BenchError

PYPI_JSON = "https://pypi.org/pypi/{name}/json"


def local_versions(package: str, folder: Path) -> list[str]:
    found = set()
    for wheel in folder.glob("*.whl"):
        try:
            name, version, _, _ = parse_wheel_filename(wheel.name)
        except InvalidWheelFilename:
            continue
        if name == canonicalize_name(package):
            found.add(str(version))
    return sorted(found, key=Version)


def pypi_versions(package: str, url: str = PYPI_JSON, timeout_s: float = 30) -> list[str]:
    try:
        with urllib.request.urlopen(url.format(name=canonicalize_name(package)), timeout=timeout_s) as answer:
            releases = json.load(answer)["releases"]
    except (OSError, ValueError, KeyError) as e:
        raise BenchError(f"cannot list {package}'s releases from {url.format(name=package)}: {e}") from None
    kept = []
    for text, files in releases.items():
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if files and not version.is_prerelease and not all(f.get("yanked") for f in files):
            kept.append(text)
    return sorted(kept, key=Version)


INDEX_VARIABLES = ("UV_DEFAULT_INDEX", "UV_INDEX_URL", "PIP_INDEX_URL")  # uv's, then pip's, as uv reads them
PIP_CONFIG_FILES = ("/etc/pip.conf", "~/.config/pip/pip.conf", "~/.pip/pip.conf")


def configured_index() -> str | None:
    """The package index the user configured, as the env builds use it: uv's or pip's variable, else pip.conf's
    global index-url (PIP_CONFIG_FILE, then the user's, then the system's); None: PyPI."""
    for variable in INDEX_VARIABLES:
        if os.environ.get(variable):
            return os.environ[variable]
    files = [os.environ.get("PIP_CONFIG_FILE") or "", *reversed(PIP_CONFIG_FILES)]
    for name in files:
        path = Path(name).expanduser()
        if not name or not path.is_file():
            continue
        config = configparser.ConfigParser()
        try:
            config.read(path)
        except configparser.Error:
            continue
        if config.get("global", "index-url", fallback=None):
            return config.get("global", "index-url")
    return None


def use_configured_index() -> None:
    """uv, which derives and builds a sweep's envs, reads its own variables but not pip's (PIP_INDEX_URL, pip.conf):
    an index configured for pip only is handed to it as UV_DEFAULT_INDEX, for this process and what it starts."""
    index = configured_index()
    if index and not any(os.environ.get(v) for v in INDEX_VARIABLES[:2]):
        os.environ["UV_DEFAULT_INDEX"] = index


SIMPLE_JSON = "application/vnd.pypi.simple.v1+json"


def version_of_file(filename: str) -> Version | None:
    try:
        if filename.endswith(".whl"):
            return parse_wheel_filename(filename)[1]
        return parse_sdist_filename(filename)[1]
    except (InvalidWheelFilename, InvalidSdistFilename, InvalidVersion):
        return None


def simple_index_versions(package: str, index: str, timeout_s: float = 30) -> list[str]:
    """A package's final, unyanked releases from a PEP 503 / 691 ("simple") index: its JSON form where the index
    serves it, else its HTML page of links."""
    url = f"{index.rstrip('/')}/{canonicalize_name(package)}/"
    request = urllib.request.Request(url, headers={"Accept": f"{SIMPLE_JSON}, text/html;q=0.1"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            body, kind = answer.read().decode(), answer.headers.get("Content-Type", "")
    except OSError as e:
        raise BenchError(f"cannot list {package}'s releases from the configured index {url}: {e}") from None
    if SIMPLE_JSON in kind or body.lstrip().startswith("{"):
        try:
            files = [(f["filename"], bool(f.get("yanked"))) for f in json.loads(body)["files"]]
        except (ValueError, KeyError, TypeError) as e:
            raise BenchError(f"cannot read {package}'s releases from {url}: {e}") from None
    else:
        files = [(html.unescape(name), "data-yanked" in attributes)
                 for attributes, name in re.findall(r"<a\b([^>]*)>([^<]+)</a>", body)]
    found: dict[Version, bool] = {}  # a version: whether every file of it is yanked
    for filename, yanked in files:
        version = version_of_file(filename)
        if version is not None and not version.is_prerelease and not version.is_devrelease:
            found[version] = found.get(version, True) and yanked
    return [str(v) for v in sorted(v for v, all_yanked in found.items() if not all_yanked)]


def released_versions(package: str) -> list[str]:
    """From the local folder UV_FIND_LINKS names when uv is told to use no index (UV_NO_INDEX), else from the index
    the user configured (a bisect once asked PyPI where only a configured index could be reached), else PyPI."""
    links = os.environ.get("UV_FIND_LINKS")
    if links and os.environ.get("UV_NO_INDEX"):
        return local_versions(package, Path(links))
    index = configured_index()
    return simple_index_versions(package, index) if index else pypi_versions(package)


def between(versions: list[str], good: str, bad: str) -> list[str]:
    """good, the releases after it and bad, in order; refused where either is not a listed release or bad is earlier."""
    for name, version in (("GOOD", good), ("BAD", bad)):
        if version not in versions:
            raise BenchError(f"{name}={version} is not a release the index lists ({', '.join(versions[-8:])} ...)")
    low, high = versions.index(good), versions.index(bad)
    if high <= low:
        raise BenchError(f"BAD={bad} must be a later release than GOOD={good}")
    return versions[low : high + 1]
