"""The audit spec (``audit.toml``) and engine profiles, validated on load.

Every key is checked against a declared schema: unknown keys, wrong types and missing files are a
:class:`~auditor.errors.SpecError` naming the file and the key path. Relative paths resolve against
the spec's own folder. Engine profiles are data under ``policies/engines/``.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar, overload

from auditor.errors import SpecError, SpecErrors
from auditor.inputs import read_input_text
from auditor.model import Scope
from auditor.results.review import ReviewArea, parse_areas
from auditor.textsafe import excerpt

# the auditor/policies symlink points at the top-level policies/ in a checkout; a wheel holds a copy
POLICIES_DIR = (Path(__file__).resolve().parent / "policies").resolve()
ENGINES_DIR = POLICIES_DIR / "engines"
SHA_RE = re.compile(r"^[0-9a-f]{40}$")
_T = TypeVar("_T")


@dataclass(frozen=True)
class Target:
    """A deployment of the engine: which dependency declarations reach the server."""

    name: str
    description: str
    deployed: tuple[str, ...]  # tree-path globs, optionally ``#group``
    # files a computed install_requires / dynamic dependencies is known to be read from
    computed_requires_from: tuple[str, ...] = ()


@dataclass(frozen=True)
class EngineProfile:
    """What auditor knows about an engine: its package, key variable, telemetry switches, server."""

    name: str
    package: str
    api_key_env: str | None
    telemetry_env: Mapping[str, str]
    server_argv: tuple[str, ...]  # templates: {model} {host} {port}
    default_port: int
    native_globs: tuple[str, ...]  # sources that only a build recipe may turn into binaries
    request_logging_flags: tuple[str, ...]  # engine flags/env that turn prompt logging on
    extra: Mapping[str, Any] = field(default_factory=dict)
    review_areas: tuple[ReviewArea, ...] = ()  # [review_areas]: how review packets are split
    targets: Mapping[str, Target] = field(default_factory=dict)
    default_target: str = ""


@dataclass(frozen=True)
class EngineSpec:
    profile: EngineProfile
    version: str
    target: str = ""  # a key of profile.targets ("" only for a profile without targets)


@dataclass(frozen=True)
class UpstreamSpec:
    repo: Path
    ref: str
    commit: str | None
    #: other upstream refs the fork may carry (release lines it merged, backports): their commits
    #: and lines are upstream's, never the fork's
    also: tuple[str, ...] = ()
    #: where upstream is published (``[upstream] url``): named in the SBOM and provenance
    #: instead of the local mirror's path
    url: str | None = None


@dataclass(frozen=True)
class PatchesSpec:
    repo: Path
    ref: str
    commits: tuple[str, ...]
    commits_source: str  # "commits" or the commits_file path, for messages
    allow_merges: bool
    #: "rebase": the commits replayed onto upstream give the bundle; "merge": a fork branch that
    #: merges upstream, proven by ancestry and the head's tree (nothing replayed)
    model: str = "rebase"
    #: ``commits = "range"``: the series is whatever ``upstream..ref`` holds (recorded in audit.json)
    commits_range: bool = False
    #: where the fork is published (``[patches] url``): named in the SBOM and provenance
    url: str | None = None


@dataclass(frozen=True)
class BundleSpec:
    path: Path
    strip_components: int
    max_bytes: int
    max_files: int
    max_file_bytes: int


@dataclass(frozen=True)
class ScanSpec:
    scope: Scope
    policy: Path
    waivers: Path | None
    cache: Path
    timeout: int


@dataclass(frozen=True)
class DepsSpec:
    vulns: str  # "osv:<path>" (path resolved), "pip-audit" or "none"
    osv_path: Path | None
    typosquat_distance: int
    osv_url: str | None = None  # pip-audit's --osv-url (an OSV-compatible query endpoint)
    lock: Path | None = None  # the exact deployed set: pinned requirements or pylock.toml
    deployed: tuple[str, ...] | None = None  # overrides the target's deployed globs
    max_age_days: int = 14  # an OSV snapshot older than this is not a check


@dataclass(frozen=True)
class BuildSpec:
    recipe: Path
    repro: bool


@dataclass(frozen=True)
class ServiceSpec:
    name: str
    user: str
    model: str
    host: str
    port: int
    devices: tuple[str, ...]
    extra_args: tuple[str, ...]
    api_key_file: str | None  # path on the target host (root-owned 0600 EnvironmentFile)
    api_key_credential: str | None  # path on the target host for LoadCredential=
    loopback_only: bool
    client_networks: tuple[str, ...]
    exec_path: str
    gpu: str  # nvidia | intel | none


@dataclass(frozen=True)
class ReviewSpec:
    file: Path  # a TOML file of sign-offs, or a folder of them (one file per reviewer)
    required: bool  # unreviewed changed lines are a REVIEW reason
    folder: bool = False  # the file is a folder of <reviewer>.toml files (it ends with "/")


@dataclass(frozen=True)
class AttestSpec:
    key: Path  # the private signing key (PKCS#8 PEM, mode 0600); see auditor.attest.keys


@dataclass(frozen=True)
class Spec:
    path: Path
    root: Path  # folder the relative paths resolve against
    engine: EngineSpec
    upstream: UpstreamSpec
    patches: PatchesSpec
    bundle: BundleSpec
    scan: ScanSpec | None
    deps: DepsSpec | None
    build: BuildSpec | None
    service: ServiceSpec | None
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)
    review: ReviewSpec | None = None
    attest: AttestSpec | None = None

    @property
    def profile(self) -> EngineProfile:
        return self.engine.profile


# ---------------------------------------------------------------- validation helpers


class _Table:
    """Reads one TOML table, recording which keys were consumed, with typed accessors.

    With ``collect`` (a list shared by the whole spec) an accessor that finds a problem records
    it and returns the default, so one run reports every problem; without it, it raises.
    """

    def __init__(self, file: Path, data: Mapping[str, Any], prefix: str,
                 collect: list[SpecError] | None = None) -> None:
        self.file = file
        self.data = data
        self.prefix = prefix
        self.seen: set[str] = set()
        #: keys reported missing: an unknown key that looks like one is the same problem
        self.absent: set[str] = set()
        self.collect = collect
        #: refuse control characters in string values (values that end up in a unit file)
        self.no_controls = False

    def err(self, key: str, msg: str) -> SpecError:
        return SpecError(msg, file=str(self.file), key=f"{self.prefix}.{key}" if key else self.prefix)

    def missing(self, key: str, msg: str) -> SpecError:
        """The error for a key that is required and absent (see :meth:`finish`)."""
        self.absent.add(key)
        return self.err(key, msg)

    @overload
    def problem(self, exc: SpecError) -> None: ...

    @overload
    def problem(self, exc: SpecError, default: _T) -> _T: ...

    def problem(self, exc: SpecError, default: Any = None) -> Any:
        """Record ``exc`` (collecting) and carry on with ``default``; or raise it."""
        if self.collect is None:
            raise exc
        self.collect.append(exc)
        return default

    def _get(self, key: str, kind: type | tuple[type, ...], what: str, required: bool) -> Any:
        self.seen.add(key)
        if key not in self.data:
            if required:
                return self.problem(self.missing(key, f"missing; expected {what}"))
            return None
        value = self.data[key]
        if isinstance(value, bool) and kind is int:
            return self.problem(self.err(key, f"expected {what}, got {value!r}"))
        if not isinstance(value, kind):
            return self.problem(self.err(key, f"expected {what}, got {type(value).__name__} "
                                              f"{_got(value)}"))
        if self.no_controls and isinstance(value, str) and _CONTROL.search(value):
            return self.problem(self.err(key, f"expected {what}, got a value holding a control "
                                              f"character ({_control_name(value)})"))
        return value

    def text(self, key: str, default: str | None = None, *, required: bool = False,
            check: Callable[[str], bool] | None = None, what: str = "a string") -> Any:
        value = self._get(key, str, what, required)
        if value is None:
            return default
        if not value.strip():
            return self.problem(self.err(key, f"expected {what}, got an empty string"), default)
        if check and not check(value):
            return self.problem(self.err(key, f"expected {what}, got {_got(value)}"), default)
        return value

    def integer(self, key: str, default: int, *, minimum: int = 0) -> int:
        value = self._get(key, int, f"an integer >= {minimum}", False)
        if value is None:
            return default
        if value < minimum:
            return self.problem(self.err(key, f"expected an integer >= {minimum}, got {value}"),
                                default)
        return int(value)

    def flag(self, key: str, default: bool) -> bool:
        value = self._get(key, bool, "true or false", False)
        return default if value is None else bool(value)

    def strlist(self, key: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
        value = self._get(key, list, "a list of strings", False)
        if value is None:
            return default
        for i, item in enumerate(value):
            if not isinstance(item, str):
                return self.problem(self.err(f"{key}[{i}]", f"expected a string, got "
                                             f"{_got(item)}"), default)
            if self.no_controls and _CONTROL.search(item):
                return self.problem(self.err(f"{key}[{i}]", "expected a string, got a value "
                                             f"holding a control character ({_control_name(item)})"),
                                    default)
        return tuple(value)

    def path(self, key: str, root: Path, *, required: bool = False, must_exist: bool = True,
             default: Path | None = None) -> Any:
        value = self.text(key, required=required, what="a path")
        if value is None:
            return default
        p = Path(value).expanduser()
        p = p if p.is_absolute() else (root / p)
        p = Path(_normpath(p))
        if must_exist and not p.exists():
            return self.problem(self.err(key, f"{value!r} does not exist (resolved to {p})"),
                                default)
        return p

    def finish(self) -> None:
        """Report the keys nobody read. An unknown key that looks like a missing one (a typo) is
        one problem, reported once, on the unknown key."""
        unknown = sorted(set(self.data) - self.seen)
        if unknown and self.collect is not None:
            for k in unknown:
                meant = _close_key(k, self.absent - set(self.data))
                if meant is None:
                    self.collect.append(self.err(k, "unknown key"))
                    continue
                gone = f"{self.prefix}.{meant}"
                self.collect[:] = [e for e in self.collect if e.key != gone]
                self.absent.discard(meant)
                self.collect.append(self.err(k, f"unknown key; did you mean {meant}? (it is "
                                                 "missing)"))
        elif unknown:
            raise self.err(unknown[0], "unknown key"
                           + (f" (also unknown: {', '.join(unknown[1:])})" if unknown[1:] else ""))


# C0/C1 controls (NUL included), DEL, and the bidi/zero-width format characters: no spec value
# (a path, a host, a unit name, an argument) needs one, and each can end or disguise a line
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")


def _close_key(key: str, candidates: set[str]) -> str | None:
    import difflib

    found = difflib.get_close_matches(key, sorted(candidates), n=1, cutoff=0.75)
    return found[0] if found else None


def _control_name(value: str) -> str:
    m = _CONTROL.search(value)
    return f"U+{ord(m.group()):04X} at offset {m.start()}" if m else ""


def _normpath(p: Path) -> str:
    import os

    return os.path.normpath(str(p))


def _table(file: Path, doc: Mapping[str, Any], name: str, *, required: bool) -> _Table | None:
    if name not in doc:
        if required:
            raise SpecError("missing section", file=str(file), key=name)
        return None
    value = doc[name]
    if not isinstance(value, dict):
        raise SpecError(f"expected a table, got {type(value).__name__}", file=str(file), key=name)
    return _Table(file, value, name)


def _load_toml(path: Path) -> dict[str, Any]:
    try:
        text = read_input_text(path, "file")  # a regular file under a cap, checked first
    except FileNotFoundError:
        raise SpecError("file not found", file=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError(f"cannot be read: {exc}", file=str(path)) from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"malformed TOML: {exc}", file=str(path)) from None
    except RecursionError:
        raise SpecError("malformed TOML: nested too deeply", file=str(path)) from None


# ---------------------------------------------------------------- engine profiles


def available_profiles() -> tuple[str, ...]:
    return tuple(sorted(p.stem for p in ENGINES_DIR.glob("*.toml")))


def load_profile(name: str, *, file: Path | None = None) -> EngineProfile:
    path = ENGINES_DIR / f"{name}.toml"
    if "/" in name or not path.is_file():
        raise SpecError(f"unknown engine profile {name!r}; known: {', '.join(available_profiles())}",
                        file=str(file) if file else None, key="engine.profile")
    doc = _load_toml(path)
    t = _Table(path, doc, "profile")
    telemetry = t._get("telemetry_env", dict, "a table of strings", False) or {}
    extra = t._get("extra", dict, "a table", False) or {}
    areas_raw = t._get("review_areas", dict, "a table of review areas", False) or {}
    profile = EngineProfile(
        name=t.text("name", required=True),
        package=t.text("package", required=True),
        api_key_env=t.text("api_key_env"),
        telemetry_env={str(k): str(v) for k, v in telemetry.items()},
        server_argv=t.strlist("server_argv"),
        default_port=t.integer("default_port", 8000, minimum=1),
        native_globs=t.strlist("native_globs"),
        request_logging_flags=t.strlist("request_logging_flags"),
        extra=extra,
        review_areas=_review_areas(path, areas_raw),
        targets=_targets(t),
        default_target=t.text("default_target", ""),
    )
    t.finish()
    if profile.targets and profile.default_target not in profile.targets:
        raise t.err("default_target", f"expected one of {', '.join(profile.targets)}, got "
                    f"{profile.default_target!r}")
    return profile


def _review_areas(path: Path, raw: Mapping[str, Any]) -> tuple[ReviewArea, ...]:
    return parse_areas(raw, file=path)
def _targets(t: _Table) -> dict[str, Target]:
    raw = t._get("targets", dict, "a table of targets", False) or {}
    out = {}
    for name, value in raw.items():
        if not isinstance(value, dict):
            raise t.err(f"targets.{name}", "expected a table")
        tt = _Table(t.file, value, f"profile.targets.{name}")
        out[name] = Target(name=name, description=tt.text("description", ""),
                           deployed=tt.strlist("deployed"),
                           computed_requires_from=tt.strlist("computed_requires_from"))
        tt.finish()
    return out


# ---------------------------------------------------------------- the spec


def load_spec(path: str | Path, *, writing_series: bool = False) -> Spec:
    """Load and validate an audit spec. Every problem is a SpecError naming file and key; a spec
    with several problems raises one :class:`~auditor.errors.SpecErrors` listing them all.
    ``writing_series``: for ``auditor series``, which writes ``[patches] commits_file``: the file
    need not exist yet and what it holds is not read (it is rewritten; the spec then lists no
    commits)."""
    file = Path(path).resolve()
    if file.is_dir():
        file = file / "audit.toml"
    doc = _load_toml(file)
    root = file.parent
    problems: list[SpecError] = []
    known = {"engine", "upstream", "patches", "bundle", "scan", "deps", "build", "service",
             "review", "attest"}
    for key in doc:
        if key not in known:
            problems.append(SpecError("unknown key", file=str(file), key=key,
                                      hint=f"sections are: {', '.join(sorted(known))}"))

    def section(name: str, parse: Callable[[_Table], Any], *, required: bool = False) -> Any:
        """One section parsed with its problems collected (a problem that stops the section's
        parse is recorded too, and its unknown keys are still reported)."""
        try:
            t = _table(file, doc, name, required=required)
        except SpecError as exc:
            problems.append(exc)
            return None
        if t is None:
            return None
        t.collect = problems
        t.no_controls = name == "service"
        before = len(problems)
        try:
            value = parse(t)
        except SpecError as exc:
            problems.append(exc)
            value = None
        t.finish()
        return value if len(problems) == before else None

    engine: EngineSpec | None = section("engine", lambda t: _engine(t, file), required=True)
    upstream: UpstreamSpec | None = section("upstream", lambda t: UpstreamSpec(
        repo=t.path("repo", root, required=True),
        ref=t.text("ref", required=True),
        commit=t.text("commit", check=lambda s: bool(SHA_RE.match(s)),
                      what="a full 40-hex commit sha"),
        also=_also_refs(t), url=_url(t)), required=True)
    patches: PatchesSpec | None = section(
        "patches", lambda t: _patches(t, root, upstream.repo if upstream else None,
                                      writing_series=writing_series),
        required=True)
    bundle: BundleSpec | None = section("bundle", lambda t: BundleSpec(
        path=t.path("path", root, required=True),
        strip_components=t.integer("strip_components", 0),
        max_bytes=t.integer("max_bytes", 8 * 1024**3, minimum=1),
        max_files=t.integer("max_files", 500_000, minimum=1),
        max_file_bytes=t.integer("max_file_bytes", 2 * 1024**3, minimum=1)), required=True)
    scan = section("scan", lambda t: ScanSpec(
        scope=Scope(t.text("scope", "diff", check=lambda s: s in ("diff", "full"),
                           what='"diff" or "full"')),
        policy=t.path("policy", root, default=POLICIES_DIR / "default.toml"),
        waivers=t.path("waivers", root),
        cache=t.path("cache", root, must_exist=False, default=Path.home() / ".cache" / "auditor"),
        timeout=t.integer("timeout", 600, minimum=1)))
    deps = section("deps", lambda t: _deps(t, root))
    build = section("build", lambda t: BuildSpec(recipe=t.path("recipe", root, required=True),
                                                 repro=t.flag("repro", True)))
    profile = engine.profile if engine else load_profile("generic")
    service = section("service", lambda t: _service(t, profile))
    review = section("review", lambda t: ReviewSpec(
        file=t.path("file", root, must_exist=False, default=root / "reviews.toml"),
        required=t.flag("required", False),
        folder=str(t.data.get("file", "")).endswith("/")))
    attest = section("attest", lambda t: AttestSpec(key=t.path("key", root, required=True)))

    if problems:
        raise problems[0] if len(problems) == 1 else SpecErrors(problems, file=str(file))
    assert engine and upstream and patches and bundle
    return Spec(path=file, root=root, engine=engine, upstream=upstream, patches=patches,
                bundle=bundle, scan=scan, deps=deps, build=build, service=service, raw=doc,
                review=review, attest=attest)


def _engine(t: _Table, file: Path) -> EngineSpec:
    profile = load_profile(t.text("profile", "generic"), file=file)
    target = t.text("target", profile.default_target or None) or ""
    if profile.targets and target not in profile.targets:
        raise t.err("target", f"unknown target {target!r} of engine profile {profile.name!r}; "
                    f"known: {', '.join(sorted(profile.targets))}")
    if not profile.targets and target:
        raise t.err("target", f"engine profile {profile.name!r} defines no targets")
    return EngineSpec(profile=profile, version=t.text("version", required=True), target=target)


def _also_refs(t: _Table) -> tuple[str, ...]:
    refs = t.strlist("also")
    for i, r in enumerate(refs):
        if not r or r.startswith("-") or any(c.isspace() or ord(c) < 32 for c in r) or ".." in r:
            t.problem(t.err(f"also[{i}]", f"expected a ref or commit of upstream, got {_got(r)}"))
    return refs


def _patches(t: _Table, root: Path, upstream_repo: Path | None, *,
             writing_series: bool = False) -> PatchesSpec:
    patches_repo = t.path("repo", root, default=upstream_repo)
    ref = t.text("ref", required=True)
    model = t.text("model", "rebase", check=lambda s: s in ("rebase", "merge"),
                   what='"rebase" or "merge"')
    commits_file = t.path("commits_file", root, must_exist=not writing_series)
    file_given = "commits_file" in t.data  # a file that does not exist is already reported
    commits_range = t.data.get("commits") == "range"
    if commits_range:
        t.seen.add("commits")
    commits_list = (t.strlist("commits") if "commits" in t.data and not commits_range
                    else None)
    if file_given and (commits_list is not None or commits_range):
        raise t.err("commits", "give either commits or commits_file, not both")
    if not file_given and commits_list is None and not commits_range:
        raise t.missing("commits_file", 'missing; give commits_file, commits or commits = "range"')
    if commits_range:
        commits: tuple[str, ...] = ()
        source = 'patches.commits = "range"'
    elif commits_file is not None:
        # `auditor series` rewrites the file: what it holds now (nothing, a bad list) is not read
        commits = () if writing_series else _read_series_file(commits_file, t)
        source = str(commits_file)
    else:
        commits = tuple(c.strip() for c in commits_list or ())
        source = "patches.commits"
        for i, c in enumerate(commits):
            if not _SHA.fullmatch(c):
                t.problem(t.err(f"commits[{i}]", f"expected a commit sha, got {_got(c)}"))
    return PatchesSpec(repo=patches_repo, ref=ref, commits=commits, commits_source=source,
                       allow_merges=t.flag("allow_merges", False), model=model,
                       commits_range=commits_range, url=_url(t))


def _url(t: _Table) -> str | None:
    """``url``: where the repository is published (``scheme://...``, or ``user@host:path``)."""
    value = t.text("url", check=lambda s: bool(_PUBLISHED_URL.match(s)) and not any(
        c.isspace() or ord(c) < 32 for c in s), what="a URL such as https://host/org/repo.git")
    return value if isinstance(value, str) else None


_PUBLISHED_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/\s]|^[\w.-]+@[\w.-]+:")


def _deps(t: _Table, root: Path) -> DepsSpec:
    vulns = t.text("vulns", "none", check=lambda s: s in ("pip-audit", "none")
                   or s.startswith("osv:"), what='"osv:<dir|zip>", "pip-audit" or "none"')
    osv_path = None
    if vulns.startswith("osv:"):
        raw = vulns[4:]
        if not raw:
            raise t.err("vulns", "osv: needs a snapshot folder or zip, e.g. osv:osv-snapshot")
        p = Path(raw).expanduser()
        osv_path = Path(_normpath(p if p.is_absolute() else root / p))
        if not osv_path.exists():
            raise t.err("vulns", f"OSV snapshot {raw!r} does not exist (resolved to {osv_path})")
    deps = DepsSpec(vulns=vulns, osv_path=osv_path,
                    typosquat_distance=t.integer("typosquat_distance", 2, minimum=0),
                    osv_url=t.text("osv_url", check=lambda s: s.startswith(
                        ("http://", "https://")), what="an http(s) URL"),
                    lock=t.path("lock", root),
                    deployed=t.strlist("deployed") if "deployed" in t.data else None,
                    max_age_days=t.integer("max_age_days", 14, minimum=1))
    if deps.deployed is not None and not deps.deployed:
        raise t.err("deployed", "an empty list deploys nothing; leave the key out to use "
                    "the engine target's surface")
    return deps


_SHA = re.compile(r"[0-9a-fA-F]{4,40}")
#: bad lines of a commits file named in its error (the rest are counted)
_BAD_LINES_SHOWN = 3


def _got(value: object) -> str:
    """A value from a file, as an error message may show it (:func:`auditor.textsafe.excerpt`)."""
    if isinstance(value, (bool, int, float)):
        return repr(value)
    return excerpt(value if isinstance(value, str) else repr(value))


def _read_series_file(path: Path, t: _Table) -> tuple[str, ...]:
    """The shas of a commits file: ``sha [subject]`` lines, ``#`` comments. A bad line is named by
    its number with a short redacted excerpt (the file may be anything: a key, /proc/self/environ),
    never in full."""
    try:
        text = read_input_text(path, "commits_file")
    except (OSError, UnicodeDecodeError) as exc:
        raise t.err("commits_file", f"cannot be read: {exc}") from None
    if "\x00" in text:
        return t.problem(t.err("commits_file", f"{path} holds NUL bytes: not a commits file (one "
                               "commit sha a line, as `git log --format=%H` prints)"), ())
    out = []
    bad: list[str] = []
    for number, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        sha = line.split()[0]  # "sha subject" lines, as `git log --oneline` prints
        if not _SHA.fullmatch(sha):
            bad.append(f"line {number}: {excerpt(sha)}")
        out.append(sha)
    if bad:
        more = f" and {len(bad) - _BAD_LINES_SHOWN} more" if len(bad) > _BAD_LINES_SHOWN else ""
        return t.problem(t.err("commits_file", f"{path}: expected a commit sha on each line, got "
                               f"{'; '.join(bad[:_BAD_LINES_SHOWN])}{more}"), tuple(out))
    if not out:
        raise t.err("commits_file", f"{path} lists no commits")
    return tuple(out)


def _service(t: _Table, profile: EngineProfile) -> ServiceSpec:
    # an empty host is legal: the server then binds every interface (render writes 0.0.0.0)
    host = "" if t.data.get("host") == "" else t.text("host", "127.0.0.1")
    t.seen.add("host")
    loopback = t.flag("loopback_only", False)
    gpu = t.text("gpu", "nvidia", check=lambda s: s in ("nvidia", "intel", "none"),
                what='"nvidia", "intel" or "none"')
    return ServiceSpec(
        name=t.text("name", profile.name, check=lambda s: bool(re.fullmatch(r"[A-Za-z0-9_.@-]+", s)),
                   what="a unit name of letters, digits, _ . @ -"),
        user=t.text("user", profile.name.replace(".", "-"),
                   check=lambda s: s != "root" and bool(re.fullmatch(r"[a-z_][a-z0-9_-]*", s)),
                   what="a non-root user name"),
        model=t.text("model", required=True),
        host=host,
        port=t.integer("port", profile.default_port, minimum=1),
        devices=t.strlist("devices"),
        extra_args=t.strlist("extra_args"),
        api_key_file=t.text("api_key_file"),
        api_key_credential=t.text("api_key_credential"),
        loopback_only=loopback,
        client_networks=t.strlist("client_networks"),
        exec_path=t.text("exec", "/opt/" + profile.name + "/bin/" + profile.name),
        gpu=gpu,
    )
