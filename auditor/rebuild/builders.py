"""Module builders: one :class:`ModuleBuilder` interface, an ``nvcc`` and a ``cmake`` implementation.

A builder turns a :class:`BuildRequest` (a source tree, a scratch folder, archs, toolchain, the fixed
environment) into the exact commands it runs and the file they produce. :meth:`ModuleBuilder.build`
runs them inside a :class:`~auditor.rebuild.sandbox.Sandbox`, then strips the output (two bytes of
``.strtab`` differ between nvcc runs otherwise) and hashes it.

Paths are mapped for reproducibility: the compilers get ``-ffile-prefix-map`` for the source tree and
the build folder, CMake builds without a build RPATH. The commands are recorded with ``$SRC`` and
``$BUILD`` in place of those folders, so two builds in different places record the same commands.

:func:`compile_nvcc` is the plain entry point for a source folder (the demo's official build).
"""

from __future__ import annotations

import os
import re
import shlex
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, TypeVar

from auditor.errors import EXIT_POLICY, AuditError
from auditor.fsutil import sha256_file
from auditor.rebuild.globs import matches
from auditor.rebuild.recipe import BuilderKind, CMakeRecipe, ModuleRecipe, NvccRecipe
from auditor.rebuild.sandbox import LAUNCHER, Sandbox, Unsandboxed, write_compile_launcher
from auditor.rebuild.toolchain import Toolchain
from auditor.redaction import last_lines

_T = TypeVar("_T")


class BuildFailed(AuditError):
    """A module did not build: the audited source, the recipe or the sandbox said no."""

    exit_code = EXIT_POLICY


@dataclass(frozen=True)
class Command:
    argv: tuple[str, ...]
    cwd: Path

    def display(self, subst: Mapping[str, str]) -> str:
        """The command line with host folders replaced by placeholders, shell-quoted."""
        return f"(cd {_subst(str(self.cwd), subst)} && {shlex.join(_subst(a, subst) for a in self.argv)})"


def _subst(text: str, subst: Mapping[str, str]) -> str:
    for real, placeholder in sorted(subst.items(), key=lambda kv: -len(kv[0])):
        text = text.replace(real, placeholder)
    return text


@dataclass(frozen=True)
class BuildRequest:
    module: ModuleRecipe
    source_root: Path  # the tree holding the sources (a private copy of the bundle)
    build_dir: Path  # this module's scratch folder (created by the builder)
    archs: tuple[str, ...]
    toolchain: Toolchain
    env: Mapping[str, str] = field(default_factory=dict)
    umask: int = 0o022
    jobs: int = 1
    timeout: float | None = 3600
    readable: tuple[Path, ...] = ()  # extra host folders the commands may read
    writable: tuple[Path, ...] = ()  # folders the commands may write besides build_dir
    # the folder holding source_root and build_dir; a sandbox with a fixed_root mounts it there
    # and the commands name every path under it by that fixed path (the same for every build)
    root: Path | None = None
    # each nvcc call through the sandbox's compile launcher (its own PID and mount namespaces,
    # an empty /tmp): nvcc's process-id-derived names are then the same in every build
    isolate_compiles: bool = False

    @property
    def launcher(self) -> Path:
        """Where :meth:`ModuleBuilder.build` writes the compile launcher."""
        return self.build_dir / LAUNCHER

    @property
    def placeholders(self) -> dict[str, str]:
        return {str(self.source_root): "$SRC", str(self.build_dir): "$BUILD"}

    @property
    def prefix_maps(self) -> tuple[str, ...]:
        return (f"-ffile-prefix-map={self.source_root}=.", f"-ffile-prefix-map={self.build_dir}=.")

    @property
    def module_file(self) -> str:
        """The file name of the module in the wheel (the last part of its wheel path)."""
        return self.module.wheel_path.rsplit("/", 1)[-1]

    def table(self, value: _T | None, name: str) -> _T:
        """The module's ``[name]`` recipe table ``value``; a ValueError when it has none."""
        if value is None:
            raise ValueError(f"module {self.module.name} has no [{name}] table")
        return value


@dataclass(frozen=True)
class BuiltModule:
    name: str
    path: Path  # the stripped module
    sha256: str
    commands: tuple[str, ...]  # as recorded (placeholders for the build folders)
    builder: BuilderKind
    log: str = ""


def arch_number(arch: str) -> str:
    """``8.6`` / ``86`` / ``86+PTX`` -> ``86``."""
    return arch.removesuffix("+PTX").replace(".", "")


def gencode_flags(archs: Sequence[str]) -> list[str]:
    """``86`` / ``8.6`` -> ``-gencode=arch=compute_86,code=sm_86``; ``+PTX`` also embeds PTX."""
    out = []
    for arch in archs:
        ptx = arch.endswith("+PTX")
        num = arch_number(arch)
        code = f"sm_{num}" + (f",compute_{num}" if ptx else "")
        out.append(f"-gencode=arch=compute_{num},code=[{code}]" if ptx
                   else f"-gencode=arch=compute_{num},code=sm_{num}")
    return out


class ModuleBuilder(ABC):
    """Builds one module of a recipe from a source tree."""

    kind: ClassVar[BuilderKind]

    @abstractmethod
    def commands(self, req: BuildRequest) -> tuple[Command, ...]:
        """The exact commands, in order, that produce :meth:`output`."""

    @abstractmethod
    def output(self, req: BuildRequest) -> Path:
        """The file the commands produce (before stripping)."""

    def before(self, req: BuildRequest) -> None:  # noqa: B027 - an optional hook
        """Write what the commands need into the build folder (nothing by default)."""

    def build(self, req: BuildRequest, sandbox: Sandbox) -> BuiltModule:
        req.build_dir.mkdir(parents=True, exist_ok=True)
        final_dir = req.build_dir / "out"
        final_dir.mkdir(exist_ok=True)
        if req.isolate_compiles:
            write_compile_launcher(req.build_dir)
        self.before(req)
        steps = list(self.commands(req))
        log: list[str] = []
        epoch = req.env.get("SOURCE_DATE_EPOCH")
        for cmd in steps:
            self._run(req, sandbox, cmd, log)
            if epoch is not None and epoch.isdigit():  # what a step generated in the tree
                clamp_mtimes(req.source_root, int(epoch))
        built = self.output(req)
        final = final_dir / req.module_file
        strip = Command((req.toolchain.strip, "--strip-unneeded", "-o", str(final), str(built)),
                        req.build_dir)
        self._run(req, sandbox, strip, log)
        steps.append(strip)
        return BuiltModule(name=req.module.name, path=final, sha256=sha256_file(final),
                           commands=tuple(c.display(req.placeholders) for c in steps),
                           builder=self.kind, log="\n".join(log))

    def _run(self, req: BuildRequest, sandbox: Sandbox, cmd: Command, log: list[str]) -> None:
        mount = req.root if req.root is not None and sandbox.fixed_root is not None else None
        seen = in_sandbox(mount, sandbox.fixed_root)
        res = sandbox.run([seen(a) for a in cmd.argv], cwd=Path(seen(str(cmd.cwd))),
                          env={k: seen(v) for k, v in req.env.items()},
                          writable=(req.build_dir, *req.writable), readable=req.readable,
                          umask=req.umask, timeout=req.timeout, mount=mount)
        log.append(f"$ {cmd.display(req.placeholders)}\n{res.stdout}{res.stderr}")
        wanted = download_attempts(res.stdout + "\n" + res.stderr)
        if wanted:
            raise BuildFailed(
                f"module {req.module.name}: the build tried to download "
                + "; ".join(wanted)
                + " (builds are network-less and CMake is fully disconnected: give the "
                  f"dependency as a local folder, [modules.{req.module.name}.cmake.fetchcontent])")
        if res.returncode != 0:
            tail = last_lines(res.stderr.strip() or res.stdout.strip(), 6)  # redacted, then cut
            raise BuildFailed(
                f"module {req.module.name}: `{shlex.join(cmd.argv[:2])} …` failed with exit code "
                f"{res.returncode} inside the {sandbox.kind} sandbox"
                + (": " + " | ".join(line.strip() for line in tail) if tail else ""))


def clamp_mtimes(tree: Path, epoch: int) -> int:
    """Set every file of ``tree`` modified after ``epoch`` to ``epoch`` (links themselves, not
    their targets); the number changed. A step that writes sources into the tree (vLLM's
    configure generates the Marlin MoE kernels into csrc/) leaves them with the time of that
    build, and nvcc names each translation unit after its source's mtime when the unit defines
    nothing of its own (explicit instantiations only): the module id, and with it every
    anonymous namespace in ``.rodata`` and ``.nv_fatbin``, then differs from build to build."""
    changed = 0
    for folder, _dirs, files in os.walk(tree):
        for name in files:
            path = os.path.join(folder, name)
            try:
                if os.lstat(path).st_mtime > epoch:
                    os.utime(path, (epoch, epoch), follow_symlinks=False)
                    changed += 1
            except OSError:
                continue  # gone meanwhile, or not ours to change: nvcc reads what is there
    return changed


def in_sandbox(root: Path | None, fixed: str | None) -> Callable[[str], str]:
    """How a command's text reads inside a sandbox that mounts the host folder ``root`` at
    ``fixed``: every path under ``root`` (a whole path component, wherever it stands in the
    argument: ``-I/x``, ``-DVAR=/x``, ``a=/x:/y``) is written under ``fixed``."""
    if root is None or fixed is None:
        return lambda text: text
    pattern = re.compile(re.escape(str(root)) + r"(?=/|$|[^\w.+-])")
    return lambda text: pattern.sub(lambda _m: fixed, text)


class NvccBuilder(ModuleBuilder):
    """One nvcc call compiles and links the listed sources into a shared module."""

    kind = BuilderKind.NVCC

    def _spec(self, req: BuildRequest) -> NvccRecipe:
        return req.table(req.module.nvcc, "nvcc")

    def output(self, req: BuildRequest) -> Path:
        return req.build_dir / req.module_file

    def commands(self, req: BuildRequest) -> tuple[Command, ...]:
        spec = self._spec(req)
        argv = [str(req.launcher)] if req.isolate_compiles else []
        argv += [req.toolchain.nvcc, "-shared", "-Xcompiler", "-fPIC", "-ccbin", req.toolchain.cxx,
                *gencode_flags(req.archs)]
        for pm in req.prefix_maps:
            argv += ["-Xcompiler", pm]
        argv += list(spec.flags)
        argv += [f"-I{d or '.'}" for d in spec.include_dirs]
        argv += [f"-I{d}" for d in spec.extra_include_dirs]
        argv += ["-o", str(self.output(req)), *spec.sources]
        argv += [f"-L{d}" for d in spec.library_dirs]
        argv += [f"-l{lib}" for lib in spec.libraries]
        return (Command(tuple(argv), req.source_root),)


class CMakeBuilder(ModuleBuilder):
    """Configure the bundle's CMake project fully disconnected, build one target."""

    kind = BuilderKind.CMAKE

    def _spec(self, req: BuildRequest) -> CMakeRecipe:
        return req.table(req.module.cmake, "cmake")

    def _bdir(self, req: BuildRequest) -> Path:
        return req.build_dir / "cmake"

    def _hook(self, req: BuildRequest) -> Path:
        return req.build_dir / "auditor-fetch-check.cmake"

    def before(self, req: BuildRequest) -> None:
        self._hook(req).write_text(FETCH_CHECK_HOOK)

    def output(self, req: BuildRequest) -> Path:
        spec = self._spec(req)
        bdir = self._bdir(req)
        found = sorted(p for p in bdir.rglob("*") if p.is_file()
                       and matches(p.relative_to(bdir).as_posix(), spec.output))
        if len(found) != 1:
            raise BuildFailed(f"module {req.module.name}: output {spec.output!r} matched "
                              f"{len(found)} files in the CMake build folder, expected one")
        return found[0]

    def commands(self, req: BuildRequest) -> tuple[Command, ...]:
        spec = self._spec(req)
        tc = req.toolchain
        src = req.source_root / spec.source_dir if spec.source_dir else req.source_root
        maps = " ".join(req.prefix_maps)
        archs = ";".join(arch_number(a) for a in req.archs)
        configure = [
            tc.cmake or "cmake", "-S", str(src), "-B", str(self._bdir(req)), "-G", spec.generator,
            "-DCMAKE_BUILD_TYPE=Release",
            "-DFETCHCONTENT_FULLY_DISCONNECTED=ON",
            "-DFETCHCONTENT_UPDATES_DISCONNECTED=ON",
            f"-DCMAKE_C_COMPILER={tc.cc}", f"-DCMAKE_CXX_COMPILER={tc.cxx}",
            f"-DCMAKE_C_FLAGS={maps}", f"-DCMAKE_CXX_FLAGS={maps}",
            "-DCMAKE_SKIP_BUILD_RPATH=ON",
            f"-DCMAKE_CUDA_ARCHITECTURES={archs}",
            f"-DCMAKE_PROJECT_INCLUDE_BEFORE={self._hook(req)}",
        ]
        if tc.nvcc:
            configure += [f"-DCMAKE_CUDA_COMPILER={tc.nvcc}", f"-DCMAKE_CUDA_HOST_COMPILER={tc.cxx}",
                          "-DCMAKE_CUDA_FLAGS=" + " ".join(f"-Xcompiler={m}"
                                                           for m in req.prefix_maps)]
            if req.isolate_compiles:
                configure.append(f"-DCMAKE_CUDA_COMPILER_LAUNCHER={req.launcher}")
        for name, folder in sorted(spec.fetchcontent.items()):
            configure.append(f"-DFETCHCONTENT_SOURCE_DIR_{name.upper()}={folder}")
        configure += list(spec.configure_args)
        build = [tc.cmake or "cmake", "--build", str(self._bdir(req)), "--target", spec.target,
                 "--parallel", str(max(1, req.jobs)), *spec.build_args]
        return (Command(tuple(configure), req.build_dir), Command(tuple(build), req.build_dir))


# Included before the top-level project(): at the end of configuring, every FetchContent
# dependency that CMake marked populated while its source folder is empty (CMake's fully
# disconnected mode does that silently instead of downloading) stops the configure, naming what
# its declaration wanted (the declared GIT_REPOSITORY / URL).
FETCH_CHECK_HOOK = """\
get_property(_auditor_hooked GLOBAL PROPERTY AUDITOR_FETCH_CHECK)
if(NOT _auditor_hooked)
  set_property(GLOBAL PROPERTY AUDITOR_FETCH_CHECK TRUE)
  function(_auditor_fetch_check)
    get_cmake_property(_vars VARIABLES)
    foreach(_v IN LISTS _vars)
      if(_v MATCHES "^(.+)_POPULATED$" AND ${_v})
        set(_n "${CMAKE_MATCH_1}")
        file(GLOB _any "${${_n}_SOURCE_DIR}/*")
        if(NOT _any)
          get_property(_d GLOBAL PROPERTY "_FetchContent_${_n}_savedDetails")
          set(_want "")
          foreach(_k GIT_REPOSITORY GIT_TAG URL URL_HASH)
            list(FIND _d "${_k}" _i)
            if(_i GREATER -1)
              math(EXPR _i "${_i} + 1")
              list(GET _d ${_i} _val)
              string(APPEND _want "|${_k}=${_val}")
            endif()
          endforeach()
          string(REPLACE " " "%20" _want "${_want}")
          message(FATAL_ERROR "AUDITOR-FETCH:${_n}${_want}")
        endif()
      endif()
    endforeach()
  endfunction()
  cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL _auditor_fetch_check)
endif()
"""

_DOWNLOAD_SIGNS = (
    (re.compile(r"AUDITOR-FETCH:([^|\s]+)\|?(\S*)"), "{0} via FetchContent ({1})"),
    (re.compile(r"Performing download step \(([^)]*)\) for '([^']+)'"), "{1} ({0})"),
    (re.compile(r"Cloning into '([^']+)'"), "a git clone into {0}"),
    (re.compile(r"[Cc]ould(?: not|n't) resolve host(?: name)?:?\s*([^\s\"]*)"),
     "from the network (could not resolve host {0})"),
    (re.compile(r"error: downloading '([^']+)' failed"), "{0}"),
)


def download_attempts(output: str) -> list[str]:
    """What the output of a build command shows it tried to fetch from the network."""
    found: list[str] = []
    for pattern, template in _DOWNLOAD_SIGNS:
        for m in pattern.finditer(output):
            groups = [g.strip().replace("|", ", ").replace("%20", " ") for g in m.groups()]
            text = template.format(*(g or "?" for g in groups)).replace(" (?)", "")
            if text not in found:
                found.append(text)
    return found


def builder_for(kind: BuilderKind) -> ModuleBuilder:
    if kind is BuilderKind.NVCC:
        return NvccBuilder()
    if kind is BuilderKind.CMAKE:
        return CMakeBuilder()
    raise AssertionError(f"unknown builder {kind!r}")  # pragma: no cover


def compile_nvcc(source_dir: Path, out_file: Path, sources: Sequence[str], *,
                 archs: Sequence[str] = ("86",), flags: Sequence[str] = (),
                 include_dirs: Sequence[str] = (), libraries: Sequence[str] = (),
                 nvcc: str = "nvcc", cxx: str = "g++", strip: str = "strip",
                 sandbox: Sandbox | None = None, env: Mapping[str, str] | None = None) -> BuiltModule:
    """Compile ``sources`` (relative to ``source_dir``) into the stripped shared module ``out_file``.

    ``sandbox=None`` runs the compiler directly: only for trusted sources such as an upstream tree
    the caller builds an "official wheel" from. ToolMissing when nvcc is absent.
    """
    from auditor.rebuild.toolchain import resolve

    tc = Toolchain(nvcc=resolve(nvcc, "the CUDA compiler nvcc"), cc=resolve("gcc", "gcc"),
                   cxx=resolve(cxx, "the host C++ compiler"), strip=resolve(strip, "strip"),
                   nvcc_version="", cc_version="")
    module = ModuleRecipe(name=out_file.stem.split(".")[0], wheel_path=out_file.name,
                          sources=tuple(sources), builder=BuilderKind.NVCC,
                          nvcc=NvccRecipe(sources=tuple(sources), flags=tuple(flags),
                                          include_dirs=tuple(include_dirs), extra_include_dirs=(),
                                          libraries=tuple(libraries), library_dirs=()))
    import tempfile

    with tempfile.TemporaryDirectory(prefix="auditor-nvcc-") as tmp:
        fixed = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LC_ALL": "C", "TZ": "UTC",
                 "TMPDIR": tmp, "HOME": tmp, **(env or {})}
        req = BuildRequest(module=module, source_root=source_dir.resolve(),
                           build_dir=Path(tmp) / "build", archs=tuple(archs), toolchain=tc,
                           env=fixed)
        built = NvccBuilder().build(req, sandbox or Unsandboxed())
        out_file.parent.mkdir(parents=True, exist_ok=True)
        out_file.write_bytes(built.path.read_bytes())
        out_file.chmod(0o755)
    return BuiltModule(name=built.name, path=out_file, sha256=built.sha256,
                       commands=built.commands, builder=built.builder, log=built.log)
