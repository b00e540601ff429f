"""The engine actually audited, as the SBOM names it: the ``[project]`` name and version of
upstream's own ``pyproject.toml`` at the pinned commit, where it states them. An engine profile is
a set of defaults (the demo's tinyllm is audited with the vllm profile), so its package name is
only the last resort; a version the project computes at build time (vLLM's setuptools-scm) is the
spec's ``[engine] version``."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass

from packaging.utils import canonicalize_name

from auditor.errors import AuditError
from auditor.gitio import Git

#: a pyproject.toml larger than this is not read for a name (it is someone else's data)
MAX_PYPROJECT_BYTES = 1 << 20


@dataclass(frozen=True)
class EngineIdentity:
    name: str
    version: str
    source: str  # where the name came from: "pyproject.toml", "official wheel", "profile"


def engine_identity(git: Git, commit: str, *, profile_package: str, spec_version: str,
                    wheel_name: str | None = None) -> EngineIdentity:
    """Name and version of the engine at upstream's ``commit``: pyproject's ``[project]`` first,
    then the official wheel's name, then the profile's package; the version is pyproject's static
    one, else the spec's."""
    project = _project_table(git, commit)
    name = project.get("name")
    version = project.get("version")
    if isinstance(version, str) and "version" in _dynamic(project):
        version = None
    good_version = version if isinstance(version, str) and version.strip() else None
    if isinstance(name, str) and _is_name(name):
        return EngineIdentity(name.strip(), good_version or spec_version, "pyproject.toml")
    if wheel_name and _is_name(wheel_name):
        return EngineIdentity(wheel_name, good_version or spec_version, "official wheel")
    return EngineIdentity(profile_package, good_version or spec_version, "profile")


def _is_name(text: str) -> bool:
    text = text.strip()
    return bool(text) and len(text) <= 200 and str(canonicalize_name(text)).replace(
        "-", "").isalnum()


def _dynamic(project: dict[str, object]) -> list[object]:
    dyn = project.get("dynamic")
    return dyn if isinstance(dyn, list) else []


def _project_table(git: Git, commit: str) -> dict[str, object]:
    try:
        res = git.run("cat-file", "-s", f"{commit}:pyproject.toml", check=False)
        if res.returncode != 0 or not res.stdout.strip().isdigit():
            return {}
        if int(res.stdout.strip()) > MAX_PYPROJECT_BYTES:
            return {}
        raw = git.run("cat-file", "blob", f"{commit}:pyproject.toml", text=False).stdout
        doc = tomllib.loads(raw.decode("utf-8"))
    except (AuditError, UnicodeDecodeError, tomllib.TOMLDecodeError, RecursionError):
        return {}
    project = doc.get("project")
    return project if isinstance(project, dict) else {}
