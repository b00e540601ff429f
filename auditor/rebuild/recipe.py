"""Build recipes (``builds/<engine>-<version>-<target>.toml``), validated like the audit spec.

Unknown keys and wrong types are a :class:`~auditor.errors.SpecError` naming the recipe file and
the key path. Host paths (the official wheel, FetchContent folders, extra include or library
folders, extra read-only sandbox paths) resolve against the recipe's own folder; paths *inside the
bundle* (module sources, include dirs, the CMake source folder) stay bundle-relative posix paths.
The format is documented in ``builds/README.md``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from auditor.errors import SpecError
from auditor.spec import _load_toml, _Table

SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
REQUIREMENT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*==[A-Za-z0-9.+!_-]+$")
ARCH_RE = re.compile(r"^\d+\.?\d+[af]?(\+PTX)?$")
WHEEL_FILE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*\.(whl|tar\.gz|zip)$")
VERSION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9.+!_-]*$")


class BuilderKind(StrEnum):
    NVCC = "nvcc"
    CMAKE = "cmake"


class SandboxKind(StrEnum):
    AUTO = "auto"
    BWRAP = "bwrap"
    UNSHARE = "unshare"


@dataclass(frozen=True)
class WheelRecipe:
    file: Path | None  # a local wheel
    requirement: str | None  # name==version, downloaded only with --online
    sha256: str
    packages: tuple[str, ...]  # package folders mapped bundle -> wheel; () = the wheel's own
    source_root: str  # bundle folder that holds the package folders ("" = the bundle root)
    max_files: int
    max_member_bytes: int
    max_bytes: int


@dataclass(frozen=True)
class ToolchainPackage:
    """One pinned package of the toolchain folder (a wheel from the Python registry)."""

    name: str
    version: str
    file: str  # the exact file name the registry serves
    sha256: str
    role: str  # what it is for (torch, cuda, cutlass, cccl, build-tool); informational
    #: the pinned dependency of the engine this package stands in for (a review finding)
    stands_in_for: str = ""

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass(frozen=True)
class ToolchainRecipe:
    nvcc: str | None  # expected nvcc release prefix, e.g. "13.0"
    cc_version: str | None  # expected host compiler version prefix, e.g. "12.2"
    nvcc_path: str
    cc: str
    cxx: str
    strip: str
    cmake: str
    #: the toolchain folder ``auditor build prepare`` fills (None: the recipe pins no packages)
    dir: Path | None = None
    packages: tuple[ToolchainPackage, ...] = ()
    #: the interpreter ``prepare`` makes ``<dir>/venv`` from (the packages on its default path)
    python: str | None = None
    #: generate ``<dir>/stubs/libcuda.so`` (a link stub: no registry ships the driver library)
    cuda_driver_stub: bool = False
    #: ``<dir>/placeholders/<name>/``: non-empty folders that stand where the engine's CMake wants
    #: the sources of a dependency this recipe never builds (a module built from one fails: its
    #: output is not there)
    placeholders: tuple[str, ...] = ()
    #: files made inside the placeholders (``"<placeholder>/<path>"``), each holding only a
    #: comment: for CMake code that reads a file of the dependency even when it builds nothing
    #: from it (vLLM 0.30.0's flashmla.cmake reads ``flash_mla/flash_mla_interface.py``)
    placeholder_files: tuple[str, ...] = ()


@dataclass(frozen=True)
class SandboxRecipe:
    kind: SandboxKind
    readable: tuple[Path, ...]  # extra host folders visible read-only (toolchains outside /usr)
    timeout: int  # seconds per command
    #: a sandbox that shows the host's files to the build (unshare) is accepted; without it such a
    #: build is not run (a source could copy a file of this machine into the module)
    accept_host_files: bool = False


@dataclass(frozen=True)
class NvccRecipe:
    sources: tuple[str, ...]  # bundle-relative files compiled and linked into the module
    flags: tuple[str, ...]
    include_dirs: tuple[str, ...]  # bundle-relative
    extra_include_dirs: tuple[Path, ...]  # host folders (recipe-relative)
    libraries: tuple[str, ...]  # -l names
    library_dirs: tuple[Path, ...]  # host folders (recipe-relative)


@dataclass(frozen=True)
class CMakeRecipe:
    source_dir: str  # bundle-relative folder with the CMakeLists.txt
    target: str
    output: str  # glob, relative to the CMake build folder, matching exactly one file
    configure_args: tuple[str, ...]
    build_args: tuple[str, ...]
    generator: str
    fetchcontent: Mapping[str, Path]  # FetchContent name -> local source folder


@dataclass(frozen=True)
class ModuleRecipe:
    name: str
    wheel_path: str  # where the module lives inside the wheel
    sources: tuple[str, ...]  # globs of bundle paths that feed it (a change -> rebuild)
    builder: BuilderKind
    nvcc: NvccRecipe | None = None
    cmake: CMakeRecipe | None = None
    #: globs of bundle paths the ``sources`` globs match that do not feed this module (another
    #: module's own files that a broad glob such as ``csrc/*.cpp`` would claim too)
    exclude: tuple[str, ...] = ()
    #: what a build of this module needs of the machine (0: no minimum); a machine with less
    #: does not build it and the stage is INCOMPLETE for it (never the official binary instead)
    min_cores: int = 0
    min_memory_gb: int = 0
    #: why this recipe cannot build the module from the bundle at all (its sources are not in
    #: it, say); "" when it can. A change that reaches it leaves the stage INCOMPLETE for it
    not_buildable: str = ""

    @property
    def entry(self) -> str:
        return f"modules.{self.name}"


@dataclass(frozen=True)
class Recipe:
    path: Path
    root: Path
    engine: str
    version: str
    target: str
    archs: tuple[str, ...]
    wheel: WheelRecipe
    toolchain: ToolchainRecipe
    sandbox: SandboxRecipe
    env: Mapping[str, str]
    modules: tuple[ModuleRecipe, ...]
    raw: Mapping[str, Any] = field(default_factory=dict, compare=False)
    #: extension targets the engine's CMake defines that this recipe does not build, with why
    targets_not_built: Mapping[str, str] = field(default_factory=dict)
    #: bundle globs of native sources this target never compiles (another device's backend), with
    #: why; a changed one is left out of the build tree, never claimed silently (see plan.py)
    sources_not_built: tuple[tuple[str, str], ...] = ()


def _bundle_rel(t: _Table, key: str, value: str) -> str:
    v = value.replace("\\", "/")
    parts = [p for p in v.split("/") if p not in ("", ".")]
    if v.startswith("/") or ".." in parts:
        raise t.err(key, f"expected a path inside the bundle, got {value!r}")
    return "/".join(parts)


def _bundle_rels(t: _Table, key: str) -> tuple[str, ...]:
    return tuple(_bundle_rel(t, f"{key}", v) for v in t.strlist(key))


def _host_paths(t: _Table, key: str, root: Path, *, must_exist: bool = True) -> tuple[Path, ...]:
    out = []
    for i, v in enumerate(t.strlist(key)):
        p = Path(v).expanduser()
        p = p if p.is_absolute() else root / p
        p = p.resolve()
        if must_exist and not p.exists():
            raise t.err(f"{key}[{i}]", f"{v!r} does not exist (resolved to {p})")
        out.append(p)
    return tuple(out)


def _sub(t: _Table, key: str, *, required: bool = False) -> _Table | None:
    t.seen.add(key)
    if key not in t.data:
        if required:
            raise t.err(key, "missing table")
        return None
    value = t.data[key]
    if not isinstance(value, dict):
        raise t.err(key, f"expected a table, got {type(value).__name__}")
    return _Table(t.file, value, f"{t.prefix}.{key}" if t.prefix else key)


def load_recipe(path: str | Path) -> Recipe:
    """Load and validate a build recipe; every problem is a SpecError naming file and key."""
    file = Path(path).resolve()
    doc = _load_toml(file)
    root = file.parent
    top = _Table(file, doc, "")
    # a top-level key error should read "[engine]", not "[.engine]"
    top.err = lambda key, msg: SpecError(msg, file=str(file), key=key or None)  # type: ignore[method-assign]

    engine = top.text("engine", required=True)
    version = top.text("version", required=True)
    target = top.text("target", required=True)
    archs = top.strlist("archs")
    if not archs:
        raise top.err("archs", 'missing or empty; expected GPU architectures such as ["86"]')
    for i, a in enumerate(archs):
        if not ARCH_RE.match(a):
            raise top.err(f"archs[{i}]", f'expected an architecture such as "86" or "8.6", got {a!r}')
    wheel = _wheel(top, root)
    toolchain = _toolchain(top, root)
    sandbox = _sandbox(top, root)
    env = _env(top)
    modules = _modules(top, root)
    not_built = _not_built(top, modules)
    sources_not_built = _sources_not_built(top)
    top.finish()
    return Recipe(path=file, root=root, engine=engine, version=version, target=target,
                  archs=archs, wheel=wheel, toolchain=toolchain, sandbox=sandbox, env=env,
                  modules=modules, raw=doc, targets_not_built=not_built,
                  sources_not_built=sources_not_built)


def _wheel(top: _Table, root: Path) -> WheelRecipe:
    """``[wheel]``: the official wheel the build overlays."""
    w = _sub(top, "wheel", required=True)
    assert w is not None
    wfile = w.path("file", root)
    requirement = w.text("requirement", check=lambda s: bool(REQUIREMENT_RE.match(s)),
                        what="a pinned requirement name==version")
    if wfile is None and requirement is None:
        raise w.err("file", "missing; give file (a local wheel) or requirement (name==version)")
    sha = w.text("sha256", required=True, check=lambda s: bool(SHA256_RE.match(s)),
                what="64 lowercase hex digits")
    packages = w.strlist("packages")
    for i, p in enumerate(packages):
        if "/" in p or p in ("", ".", "..") or not p.isidentifier():
            raise w.err(f"packages[{i}]", f"expected a top-level package folder name, got {p!r}")
    source_root = _bundle_rel(w, "source_root", w.text("source_root", ".") or ".")
    wheel = WheelRecipe(
        file=wfile, requirement=requirement, sha256=sha, packages=packages,
        source_root=source_root,
        max_files=w.integer("max_files", 200_000, minimum=1),
        max_member_bytes=w.integer("max_member_bytes", 2 * 1024**3, minimum=1),
        max_bytes=w.integer("max_bytes", 8 * 1024**3, minimum=1),
    )
    w.finish()
    return wheel


def _toolchain(top: _Table, root: Path) -> ToolchainRecipe:
    tc = _sub(top, "toolchain") or _Table(top.file, {}, "toolchain")
    packages = _packages(tc)
    folder = tc.path("dir", root, must_exist=False)
    if packages and folder is None:
        raise tc.err("dir", "missing; a recipe that pins toolchain packages names the folder "
                            "`auditor build prepare` puts them in")
    toolchain = ToolchainRecipe(
        nvcc=tc.text("nvcc"), cc_version=tc.text("cc_version"),
        nvcc_path=tc.text("nvcc_path", "nvcc"), cc=tc.text("cc", "gcc"), cxx=tc.text("cxx", "g++"),
        strip=tc.text("strip", "strip"), cmake=tc.text("cmake", "cmake"),
        dir=folder, packages=packages, python=tc.text("python", what="a Python interpreter"),
        cuda_driver_stub=tc.flag("cuda_driver_stub", False),
        placeholders=tc.strlist("placeholders"),
        placeholder_files=_bundle_rels(tc, "placeholder_files"),
    )
    for i, name in enumerate(toolchain.placeholders):
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
            raise tc.err(f"placeholders[{i}]", f"expected a folder name, got {name!r}")
    for i, rel in enumerate(toolchain.placeholder_files):
        folder_name, _, rest = rel.partition("/")
        if folder_name not in toolchain.placeholders or not rest:
            raise tc.err(f"placeholder_files[{i}]",
                         f"expected <placeholder>/<path> with <placeholder> one of "
                         f"placeholders {list(toolchain.placeholders)}, got {rel!r}")
    tc.finish()
    return toolchain


def _packages(tc: _Table) -> tuple[ToolchainPackage, ...]:
    """``[[toolchain.packages]]``: each pinned by exact file name and sha256."""
    tc.seen.add("packages")
    raw = tc.data.get("packages", [])
    if not isinstance(raw, list) or not all(isinstance(p, dict) for p in raw):
        raise tc.err("packages", "expected an array of tables ([[toolchain.packages]])")
    out: list[ToolchainPackage] = []
    files: set[str] = set()
    for i, item in enumerate(raw):
        t = _Table(tc.file, item, f"{tc.prefix}.packages[{i}]")
        name = t.text("name", required=True, check=lambda s: bool(re.fullmatch(
            r"[A-Za-z0-9][A-Za-z0-9._-]*", s)), what="a package name")
        version = t.text("version", required=True, check=lambda s: bool(VERSION_RE.match(s)),
                         what="an exact version")
        wfile = t.text("file", required=True, check=lambda s: bool(WHEEL_FILE_RE.match(s)),
                       what="the exact file name (no folder) of the package")
        sha = t.text("sha256", required=True, check=lambda s: bool(SHA256_RE.match(s)),
                     what="64 lowercase hex digits")
        role = t.text("role", "", what="a short word")
        stands_in = t.text("stands_in_for", "", what="what the package stands in for")
        t.finish()
        if wfile in files:
            raise t.err("file", f"{wfile!r} is pinned twice")
        files.add(wfile)
        out.append(ToolchainPackage(name=name, version=version, file=wfile, sha256=sha,
                                    role=role or "", stands_in_for=stands_in or ""))
    return tuple(out)


def _not_built(top: _Table, modules: tuple[ModuleRecipe, ...]) -> dict[str, str]:
    """``[targets_not_built]``: CMake extension target -> why this recipe leaves it out."""
    out: dict[str, str] = {}
    t = _sub(top, "targets_not_built")
    if t is None:
        return out
    built = {m.cmake.target for m in modules if m.cmake is not None}
    for name, why in t.data.items():
        t.seen.add(name)
        if not isinstance(why, str) or not why.strip():
            raise t.err(name, "expected the reason the target is not built (a string)")
        if name in built:
            raise t.err(name, "this target is also built by a module of the recipe")
        out[name] = why
    return out


def _sources_not_built(top: _Table) -> tuple[tuple[str, str], ...]:
    """``[sources_not_built]``: bundle glob -> why this target never compiles what it matches."""
    t = _sub(top, "sources_not_built")
    if t is None:
        return ()
    out = []
    for glob, why in t.data.items():
        t.seen.add(glob)
        if not isinstance(why, str) or not why.strip():
            raise t.err(glob, "expected the reason these sources are not built (a string)")
        out.append((_bundle_rel(t, glob, glob), why))
    return tuple(out)


def _sandbox(top: _Table, root: Path) -> SandboxRecipe:
    sb = _sub(top, "sandbox") or _Table(top.file, {}, "sandbox")
    kind = sb.text("kind", "auto", check=lambda s: s in {k.value for k in SandboxKind},
                  what='"auto", "bwrap" or "unshare"')
    sandbox = SandboxRecipe(kind=SandboxKind(kind), readable=_host_paths(sb, "readable", root),
                            timeout=sb.integer("timeout", 3600, minimum=1),
                            accept_host_files=sb.flag("accept_host_files", False))
    sb.finish()
    return sandbox


def _env(top: _Table) -> dict[str, str]:
    """``[env]``: variables set for the build."""
    env: dict[str, str] = {}
    e = _sub(top, "env")
    if e is not None:
        for k, v in e.data.items():
            e.seen.add(k)
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", k):
                raise e.err(k, "expected an environment variable name")
            if not isinstance(v, str):
                raise e.err(k, f"expected a string, got {type(v).__name__} {v!r}")
            env[k] = v
    return env


def _modules(top: _Table, root: Path) -> tuple[ModuleRecipe, ...]:
    """``[modules.NAME]``: at least one, each with its own wheel_path."""
    modules = []
    m = _sub(top, "modules", required=True)
    assert m is not None
    if not m.data:
        raise top.err("modules", "no modules; a recipe lists at least one")
    wheel_paths: dict[str, str] = {}
    for name in m.data:
        mt = _sub(m, name)
        assert mt is not None
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
            raise m.err(name, "expected a module name of letters, digits, _ . -")
        modules.append(_module(name, mt, root))
        wp = modules[-1].wheel_path
        if wp in wheel_paths:
            raise mt.err("wheel_path", f"{wp!r} is also the wheel_path of {wheel_paths[wp]}")
        wheel_paths[wp] = name
    return tuple(modules)


def _module(name: str, t: _Table, root: Path) -> ModuleRecipe:
    wheel_path = _bundle_rel(t, "wheel_path", t.text("wheel_path", required=True))
    sources = t.strlist("sources")
    if not sources:
        raise t.err("sources", "missing or empty; expected globs of the bundle sources")
    exclude = t.strlist("exclude")
    min_cores = t.integer("min_cores", 0, minimum=0)
    min_memory_gb = t.integer("min_memory_gb", 0, minimum=0)
    not_buildable = (t.text("not_buildable", "", what="why the recipe cannot build this module")
                     or "").strip()
    builder = t.text("builder", required=True, check=lambda s: s in {b.value for b in BuilderKind},
                    what='"nvcc" or "cmake"')
    kind = BuilderKind(builder)
    nvcc = cmake = None
    other = "cmake" if kind is BuilderKind.NVCC else "nvcc"
    if other in t.data:
        raise t.err(other, f"a module built with {builder} has no [{other}] table")
    sub = _sub(t, kind.value, required=True)
    assert sub is not None
    if kind is BuilderKind.NVCC:
        srcs = _bundle_rels(sub, "sources")
        if not srcs:
            raise sub.err("sources", "missing or empty; expected the .cu/.cpp files to compile")
        nvcc = NvccRecipe(
            sources=srcs, flags=sub.strlist("flags"), include_dirs=_bundle_rels(sub, "include_dirs"),
            extra_include_dirs=_host_paths(sub, "extra_include_dirs", root),
            libraries=sub.strlist("libraries"),
            library_dirs=_host_paths(sub, "library_dirs", root),
        )
    else:
        fc: dict[str, Path] = {}
        f = _sub(sub, "fetchcontent")
        if f is not None:
            for dep in list(f.data):
                if not re.fullmatch(r"[A-Za-z0-9_.-]+", dep):
                    raise f.err(dep, "expected a FetchContent name")
                fc[dep] = f.path(dep, root)
            f.finish()
        cmake = CMakeRecipe(
            source_dir=_bundle_rel(sub, "source_dir", sub.text("source_dir", ".") or "."),
            target=sub.text("target", required=True),
            output=sub.text("output", required=True, what="a glob of the built file"),
            configure_args=sub.strlist("configure_args"),
            build_args=sub.strlist("build_args"),
            generator=sub.text("generator", "Ninja"),
            fetchcontent=fc,
        )
    sub.finish()
    t.finish()
    return ModuleRecipe(name=name, wheel_path=wheel_path, sources=sources, builder=kind,
                        nvcc=nvcc, cmake=cmake, exclude=exclude, min_cores=min_cores,
                        min_memory_gb=min_memory_gb, not_buildable=not_buildable)
