"""The build stage: the changed CUDA modules from audited source, everything else from the wheel.

Steps (``builds/README.md`` has the details): decide from the verified series what to rebuild; copy
the verified bundle (without the binaries the series brought) into a private tree; build the changed
modules there in a network-less sandbox with a fixed environment; overlay the official wheel
(checked against its sha256 pin and its RECORD) with the audited Python files and the built modules;
map every file of the result to its origin; compare the exported symbols with the official modules;
with ``repro``, do it all twice in different places and compare the bytes.
"""

from __future__ import annotations

import datetime as dt
import os
import posixpath
import shutil
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from auditor.errors import InputError, ToolError, ToolMissing
from auditor.fsutil import relative_path, sha256_file
from auditor.gitio import Git, run
from auditor.model import (
    Action,
    Category,
    Finding,
    Severity,
    StageResult,
    StageStatus,
    Workspace,
    fingerprint_of,
    status_for,
)
from auditor.provenance.bundlefiles import bundle_root
from auditor.rebuild.archs import unsupported
from auditor.rebuild.builders import BuildFailed, BuildRequest, BuiltModule, builder_for
from auditor.rebuild.compare_official import Comparison, compare_files
from auditor.rebuild.elf import (
    ELF_MAGIC,
    cuda_kernel_symbols,
    exported_symbols,
    first_difference,
    imported_symbols,
    section_differences,
)
from auditor.rebuild.overlay import Overlay, build_overlay, verify_origins
from auditor.rebuild.plan import (
    BuildPlan,
    ModuleAction,
    ModuleDecision,
    last_commits,
    make_plan,
    package_folders,
    wheel_path_for,
)
from auditor.rebuild.prepare import check_prepared, stand_ins
from auditor.rebuild.recipe import BuilderKind, ModuleRecipe, Recipe, load_recipe
from auditor.rebuild.sandbox import ISOLATION_DONE, Sandbox, compile_isolation, select_sandbox
from auditor.rebuild.toolchain import Toolchain, compare, detect
from auditor.rebuild.wheel import (
    UnpackedWheel,
    record_problems,
    unpack_wheel,
    with_local_label,
)
from auditor.results.build import (
    KEPT_DIR,
    Abi,
    BuildData,
    BuiltWheel,
    LeftOut,
    ModuleRecord,
    OfficialWheel,
    PythonFiles,
)
from auditor.results.build import Toolchain as ToolchainRecord
from auditor.stage import Context, Stage

if TYPE_CHECKING:
    from auditor.policy import Policy


def _now() -> str:
    return dt.datetime.now(dt.UTC).isoformat(timespec="seconds")


def source_date_epoch(ws: Workspace) -> int:
    """The last series commit's committer time (the head's when the series is empty)."""
    if ws.commits:
        try:
            return int(dt.datetime.fromisoformat(ws.commits[-1].committer_date).timestamp())
        except ValueError:
            pass
    return int(Git(ws.patches_repo).out("show", "-s", "--format=%ct", ws.head_commit))


@dataclass(frozen=True)
class Variant:
    """One build: where, with which umask, in which environment order."""

    label: str
    root: Path
    umask: int
    reverse_env: bool


class BuildStage(Stage):
    name = "build"
    needs = ("verify",)

    def requested(self, spec: Any) -> bool:
        return spec.build is not None

    def run(self, ctx: Context) -> StageResult:
        if ctx.options.build_from is not None:  # built on the CUDA host; checked and taken here
            from auditor.rebuild.imported import import_build

            return import_build(ctx, ctx.options.build_from)
        return _BuildRun(ctx).run()


#: the build's findings whose action the audit's policy decides (the others' action is the
#: stage's own: a build that fails is never a matter of policy); an imported build's findings of
#: these rules are ruled again by the importing audit's policy (auditor.rebuild.imported)
POLICY_RULES = frozenset({"build.toolchain-mismatch", "build.bundle-binary",
                          "build.abi-weak-symbols-missing", "build.abi-kernel-symbols-hidden",
                          "build.differs-from-official"})


def ruled_by_policy(findings: Iterable[Finding], policy: Policy) -> list[Finding]:
    """``findings`` with the action ``policy`` gives each of a rule in :data:`POLICY_RULES`."""
    return [policy.apply([f])[0] if f.rule in POLICY_RULES else f for f in findings]


class _BuildRun:
    """One build stage run; its findings and reasons accumulate, the result is made at the end."""

    def __init__(self, ctx: Context) -> None:
        assert ctx.spec.build is not None
        self.ctx = ctx
        self.started = _now()
        self.recipe: Recipe = load_recipe(ctx.spec.build.recipe)
        self.repro = ctx.options.repro if ctx.options.repro is not None else ctx.spec.build.repro
        self.findings: list[Finding] = []
        self.comparisons: dict[str, Comparison] = {}  # wheel path -> rebuilt against official
        self.abis: dict[str, Abi] = {}  # wheel path -> build a's exports against official
        self.isolate_compiles = False  # set where the sandbox is chosen
        #: modules to rebuild that cannot be built here (the recipe cannot, or this machine is too
        #: small): the others are still built and compared, but no wheel is made (it would hold
        #: their official binaries)
        self.not_built_here: frozenset[str] = frozenset()
        self.reasons: list[str] = []
        self.not_checked: list[str] = []
        self.data = BuildData(
            recipe=self.shown(self.recipe.path), target=self.recipe.target,
            archs=self.recipe.archs,
            toolchain=ToolchainRecord(nvcc=None, cc=None,
                                      expected={"nvcc": self.recipe.toolchain.nvcc,
                                                "cc": self.recipe.toolchain.cc_version},
                                      matches=None),
            started=self.started)

    def note(self, **fields: Any) -> None:
        """Record what the run learned (fields of :class:`BuildData`)."""
        self.data = replace(self.data, **fields)

    # ------------------------------------------------------------ result

    def result(self) -> StageResult:
        data = replace(self.data, finished=_now(),
                       wheel=None if self.reasons else self.data.wheel)
        findings = self.apply_policy(self.findings)
        status = status_for(findings, self.not_checked, self.reasons)
        return StageResult("build", status, data, findings=tuple(findings),
                           not_checked=tuple(self.not_checked), reasons=tuple(self.reasons))

    def stop(self, plan: BuildPlan, official: UnpackedWheel,
             built: Mapping[str, BuiltModule] | None = None) -> StageResult:
        """The result of a run that stopped after planning: every module as it stands."""
        built = built or {}
        self.note(modules=tuple(
            self.module_entry(d, official, built.get(d.module.wheel_path),
                              self.abi_of(built[d.module.wheel_path], official)
                              if d.module.wheel_path in built else None)
            for d in plan.decisions))
        return self.result()

    # ------------------------------------------------------------ the run

    def run(self) -> StageResult:
        ctx = self.ctx
        ws = ctx.workspace
        if ws is None:
            self.not_checked.append("no verified workspace")
            return self.result()
        if not ws.proof_ok:
            self.reasons.append("the bundle proof failed: nothing is built from an unverified "
                                "bundle")
            return self.result()
        epoch = source_date_epoch(ws)
        self.note(source_date_epoch=epoch)
        official = self.official_wheel()
        if official is None or self.reasons:
            return self.result()
        plan = make_plan(ws, self.recipe, ctx.spec.profile.native_globs)
        commits: dict[str, str | None] = dict(last_commits(ws))
        self.report_left_out(ws, plan, commits)
        self.report_unclaimed(ws, plan, commits)
        self.reasons += list(plan.unlisted_targets)
        self.show_plan(plan)
        self.not_built_here = self.cannot_build_here(plan)
        if self.reasons or (plan.to_build and all(d.module.name in self.not_built_here
                                                  for d in plan.to_build)):
            return self.stop(plan, official)
        packages = self.recipe.wheel.packages or package_folders(official.members)
        self.note(official_differs_from_upstream=tuple(
            self.official_vs_upstream(official, plan, packages)))
        try:
            tools = self.prepare_build(plan) if plan.to_build else None
        except ToolError as exc:
            self.not_checked.append(f"no module was built: {exc.message}"
                                    + (f" ({exc.hint})" if exc.hint else ""))
            return self.stop(plan, official)
        if (tools is not None and not tools[1].isolates_files
                and not self.recipe.sandbox.accept_host_files):
            self.not_checked.append(
                f"no module was built: the {tools[1].kind} sandbox shows this machine's files to "
                "the build, so an audited source could copy any of them into the module "
                "(.incbin, #embed, #include of an absolute path); install bubblewrap "
                "(apt-get install bubblewrap), or accept it with [sandbox] accept_host_files = "
                "true in the recipe")
            return self.stop(plan, official)
        for d in plan.decisions:
            if d.module.wheel_path not in official.members:
                self.reasons.append(f"module {d.module.name}: the official wheel has no "
                                    f"{d.module.wheel_path}")
        if self.reasons:
            return self.stop(plan, official)
        return self.build_and_overlay(ws, plan, official, packages, tools, commits, epoch)

    def show_plan(self, plan: BuildPlan) -> None:
        """Why each module is rebuilt: one line per reason, with the modules it reaches."""
        reached: dict[str, list[str]] = {}
        for d in plan.to_build:
            for why in d.why:
                reached.setdefault(why, []).append(d.module.name)
        for why, names in reached.items():
            self.ctx.progress(f"build: {why} -> {', '.join(names)}")
        for note in plan.cmake_notes:
            self.ctx.progress(f"build: {note}")

    def cannot_build_here(self, plan: BuildPlan) -> frozenset[str]:
        """The modules to build that cannot be built here (the recipe says it cannot build them
        from the bundle, or this machine is too small): not checked (INCOMPLETE); the other
        modules are still built and compared, and no wheel is made."""
        left = [(d.module, cannot_build(d.module)) for d in plan.to_build]
        for module, why in left:
            if why:
                self.not_checked.append(f"module {module.name} is not built{why}; the build is "
                                        "incomplete (the official binary is not used in its "
                                        "place, and no wheel is made)")
        return frozenset(m.name for m, why in left if why)

    def build_and_overlay(self, ws: Workspace, plan: BuildPlan, official: UnpackedWheel,
                          packages: tuple[str, ...], tools: tuple[Toolchain, Sandbox] | None,
                          commits: Mapping[str, str | None], epoch: int) -> StageResult:
        """Build the changed modules (twice with repro), overlay the official wheel, compare."""
        ctx, recipe = self.ctx, self.recipe
        version = with_local_label(official.name.version, f"audited.{ws.bundle_tree[:12]}")
        variants = [Variant("a", ctx.workdir / "build-a", 0o022, False)]
        if self.repro:
            variants.append(Variant("b", ctx.workdir / "repro" / "second-build-elsewhere",
                                    0o027, True))
        builds: list[dict[str, BuiltModule]] = []
        overlays: list[Overlay] = []
        try:
            for v in variants:
                built = {}
                if tools is not None:
                    count = sum(d.module.name not in self.not_built_here for d in plan.to_build)
                    with ctx.status(f"building {count} module(s), build {v.label}"):
                        built = self.build_variant(v, ws, plan, *tools, epoch)
                builds.append(built)
                if v.label == "a":
                    self.check_abi(built, official)
                    if self.reasons:
                        return self.stop(plan, official, built)
                if self.not_built_here:
                    continue  # no wheel: it would hold the official binary of a changed module
                toolchain = tools[0] if tools is not None else None
                origin_detail = {wp: (m, self.built_origin(m, plan, toolchain))
                                 for wp, m in built.items()}
                overlays.append(build_overlay(
                    official, ws, plan, packages=packages, source_root=recipe.wheel.source_root,
                    version=version, built=origin_detail, out_dir=v.root / "wheel", epoch=epoch,
                    commits=commits))
        except BuildFailed as exc:
            self.reasons.append(exc.message)
            return self.stop(plan, official)
        return self.finish(ws, plan, official, builds, overlays)

    def finish(self, ws: Workspace, plan: BuildPlan, official: UnpackedWheel,
               builds: list[dict[str, BuiltModule]], overlays: list[Overlay]) -> StageResult:
        """Check every file's origin, compare the two builds, and copy the wheel out."""
        ctx = self.ctx
        built_a = builds[0]
        first = overlays[0] if overlays else None
        if first is not None:
            self.reasons += verify_origins(first, official, ws, built_a,
                                           ctx.workdir / "verify-output")
            self.note(origins={p: o.to_json() for p, o in sorted(first.origins.items())},
                      python=PythonFiles(replaced=tuple(first.replaced), added=tuple(first.added),
                                         dropped=tuple(first.dropped),
                                         not_packaged=tuple(first.not_packaged)))
        abis = {wp: self.abi_of(m, official) for wp, m in built_a.items()}
        self.compare_with_official(built_a, official)
        self.note(
            modules=tuple(self.module_entry(d, official, built_a.get(d.module.wheel_path),
                                            abis.get(d.module.wheel_path))
                          for d in plan.decisions))
        if self.repro:
            self.compare_builds(builds, overlays)
        if first is not None and not self.reasons:  # a wheel that failed a check never
            out = ctx.out_dir / first.wheel.name  # reaches the outputs
            ctx.out_dir.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(first.wheel, out)
            self.note(wheel=BuiltWheel(file=out.name, name=first.name.name,
                                       version=first.name.version, sha256=sha256_file(out)))
        return self.result()

    # ------------------------------------------------------------ pieces

    def shown(self, path: Path) -> str:
        """A local file as outputs name it: relative to the spec's folder, never absolute."""
        return relative_path(path, self.ctx.spec.root)

    def official_wheel(self) -> UnpackedWheel | None:
        """The official wheel unpacked, once its pin, RECORD and version were checked; None when
        it is not here (not checked) or a check failed (a reason)."""
        ctx, recipe = self.ctx, self.recipe
        wheel_file = self.official_wheel_file()
        if wheel_file is None:
            return None
        digest = sha256_file(wheel_file)
        record = OfficialWheel(file=wheel_file.name, path=self.shown(wheel_file), name=None,
                               version=None, sha256=digest, expected_sha256=recipe.wheel.sha256)
        self.note(official_wheel=record)
        if digest != recipe.wheel.sha256:
            self.reasons.append(f"official wheel {wheel_file.name}: sha256 {digest} differs from "
                                f"the recipe's pin {recipe.wheel.sha256}")
            return None
        with ctx.status(f"unpacking {wheel_file.name}"):
            official = unpack_wheel(wheel_file, ctx.workdir / "official",
                                    max_files=recipe.wheel.max_files,
                                    max_member_bytes=recipe.wheel.max_member_bytes,
                                    max_bytes=recipe.wheel.max_bytes)
        self.note(official_wheel=replace(record, name=official.name.name,
                                         version=official.name.version))
        lies = record_problems(official)
        if lies:
            self.reasons += [f"official wheel RECORD lies: {p}" for p in lies[:20]]
            if len(lies) > 20:
                self.reasons.append(f"official wheel RECORD lies: {len(lies) - 20} more")
            return None
        self.check_versions(official)
        return official

    def report_unclaimed(self, ws: Workspace, plan: BuildPlan,
                         commits: Mapping[str, str | None]) -> None:
        """A changed native source no module builds: a reason and a blocking finding."""
        for path in plan.unclaimed_native:
            self.reasons.append(f"{path}: a changed native source that no module of the recipe "
                                "builds")
            self.findings.append(Finding(
                rule="build.unclaimed-native-source", category=Category.PROVENANCE,
                severity=Severity.HIGH, action=Action.BLOCK, path=path, line=0,
                commit=commits.get(path), scanner="build",
                message=f"the series changes the native source {path}, which no module of the "
                        f"recipe {self.recipe.path.name} claims: nobody knows how it would be "
                        "built",
                fingerprint=fingerprint_of("build.unclaimed-native-source", path,
                                           ws.manifest[path].sha256 if path in ws.manifest
                                           else "deleted")))

    def official_wheel_file(self) -> Path | None:
        w = self.recipe.wheel
        if w.file is not None:
            return w.file
        assert w.requirement is not None
        cache = self.ctx.cache_dir / "wheels" / w.sha256
        cached = sorted(cache.glob("*.whl")) if cache.is_dir() else []
        if cached:
            return cached[0]
        if not self.ctx.options.online:
            self.not_checked.append(f"the official wheel {w.requirement} is not on this machine "
                                    "(no [wheel] file, not cached); it is downloaded only with "
                                    "--online")
            return None
        tmp = self.ctx.workdir / "download"
        tmp.mkdir(parents=True, exist_ok=True)
        with self.ctx.status(f"downloading {w.requirement}"):
            # name===version, pip's exact match: `==` also admits a local build (1.0+cpu),
            # which pip prefers where a find-links folder holds one
            exact = w.requirement.replace("==", "===", 1)
            run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                 "--dest", str(tmp), exact], timeout=3600)
        got = sorted(tmp.glob("*.whl"))
        if len(got) != 1:
            raise InputError(f"pip download {w.requirement} gave {len(got)} wheels, expected one")
        cache.mkdir(parents=True, exist_ok=True)
        return Path(shutil.move(str(got[0]), cache / got[0].name))

    def check_versions(self, official: UnpackedWheel) -> None:
        """The official wheel, the recipe and the spec must speak of the same release."""
        from packaging.version import InvalidVersion, Version

        def public(v: str) -> str:
            try:
                return Version(v).public
            except InvalidVersion:
                return v

        audited = self.ctx.spec.engine.version
        if public(official.name.version) != public(audited):
            self.reasons.append(f"the official wheel is version {official.name.version}, the spec "
                                f"audits {audited}")
        if public(self.recipe.version) != public(audited):
            self.reasons.append(f"the recipe {self.recipe.path.name} is for version "
                                f"{self.recipe.version}, the spec audits {audited}")

    def official_vs_upstream(self, official: UnpackedWheel, plan: BuildPlan,
                             packages: tuple[str, ...]) -> list[str]:
        """Packaged files the series left alone whose official bytes differ from the upstream tree
        (generated files such as a _version.py are expected here; many more mean a wrong wheel)."""
        ws = self.ctx.workspace
        assert ws is not None
        changed = {c.path for c in plan.changes}
        out: list[str] = []
        for path, bf in ws.manifest.items():
            if path in changed:
                continue
            wp = wheel_path_for(path, self.recipe.wheel.source_root, packages)
            member = official.members.get(wp) if wp else None
            if wp and member is not None and member.sha256 != bf.sha256:
                out.append(wp)
        return sorted(out)

    def prepare_build(self, plan: BuildPlan) -> tuple[Toolchain, Sandbox]:
        """The toolchain (against the recipe's) and a network-less sandbox; ToolError if absent."""
        recipe = self.recipe
        toolchain = detect(recipe.toolchain,
                           need_cmake=any(d.module.builder is BuilderKind.CMAKE
                                          for d in plan.to_build))
        diffs = compare(recipe.toolchain, toolchain)
        if toolchain.nvcc_version:
            problems = unsupported(toolchain.nvcc_version, recipe.archs)
            if problems:
                raise ToolMissing("the toolchain cannot build the recipe's architectures: "
                                  + "; ".join(p.message for p in problems))
        if recipe.toolchain.packages:
            check_prepared(recipe)
            diffs += stand_ins(recipe, toolchain.nvcc_version)
        self.note(toolchain=replace(self.data.toolchain, nvcc=toolchain.nvcc_version,
                                    cc=toolchain.cc_version, matches=not diffs,
                                    differences=tuple(diffs),
                                    programs=toolchain.to_json()["programs"]))
        for diff in diffs:
            self.findings.append(Finding(
                rule="build.toolchain-mismatch", category=Category.PROVENANCE,
                severity=Severity.LOW, action=Action.REVIEW, path=str(recipe.path.name),
                line=0, commit=None, scanner="build",
                message=f"toolchain differs from the recipe: {diff}",
                fingerprint=fingerprint_of("build.toolchain-mismatch", recipe.path.name,
                                           diff)))
        sandbox = select_sandbox(recipe.sandbox.kind, self.ctx.workdir / "sandbox-probe")
        problem = compile_isolation(sandbox, self.ctx.workdir / "sandbox-probe")
        self.isolate_compiles = problem is None
        self.note(sandbox={**sandbox.describe(),
                           # how each nvcc call ran: alone (the same process ids in every
                           # build) or, where the sandbox cannot nest namespaces, why not
                           "compile_isolation": problem or ISOLATION_DONE})
        return toolchain, sandbox

    def apply_policy(self, findings: list[Finding]) -> list[Finding]:
        from auditor.policy import apply_waivers, policy_of, waivers_of

        return apply_waivers(ruled_by_policy(findings, policy_of(self.ctx.spec)),
                             waivers_of(self.ctx.spec))

    def report_left_out(self, ws: Workspace, plan: BuildPlan,
                        commits: Mapping[str, str | None]) -> None:
        for path, reason in plan.not_built:
            bf = ws.manifest.get(path)
            self.note(left_out=(*self.data.left_out, LeftOut(
                path=path, reason=f"not built for this target: {reason}",
                size=bf.size if bf is not None else 0,
                sha256=bf.sha256 if bf is not None else "deleted", commit=commits.get(path))))
            self.ctx.progress(f"build: {path}: not built for this target ({reason}); no module "
                              "source includes it; left out of the build tree")
        for path, why in [(p, "binary") for p in plan.binaries] + \
                         [(p, "symbolic link") for p in plan.links]:
            bf = ws.manifest[path]
            self.note(left_out=(*self.data.left_out,
                                LeftOut(path=path, reason=why, size=bf.size, sha256=bf.sha256,
                                        commit=commits.get(path))))
            if why == "binary":
                self.findings.append(Finding(
                    rule="build.bundle-binary", category=Category.BINARY_ARTIFACT,
                    severity=Severity.HIGH, action=Action.BLOCK, path=path, line=0,
                    commit=commits.get(path), scanner="build",
                    message=f"the series brings the binary {path} ({bf.size} bytes, sha256 "
                            f"{bf.sha256[:16]}…); nothing builds it, so it was left out of the "
                            "build tree and of the wheel",
                    fingerprint=fingerprint_of("build.bundle-binary", path, bf.sha256)))

    def build_variant(self, v: Variant, ws: Workspace, plan: BuildPlan, toolchain: Toolchain,
                      sandbox: Sandbox, epoch: int) -> dict[str, BuiltModule]:
        src = v.root / "src"
        copy_bundle(ws, src, exclude=set(plan.binaries) | set(plan.links)
                    | {p for p, _ in plan.not_built}, epoch=epoch)
        (v.root / "home").mkdir(parents=True, exist_ok=True)
        (v.root / "tmp").mkdir(parents=True, exist_ok=True)
        env = self.fixed_env(v, toolchain, epoch)
        if v.label == "a":
            self.note(environment={k: val.replace(str(v.root), "$ROOT")
                                   for k, val in env.items()})
        readable: list[Path] = list(self.recipe.sandbox.readable)
        if self.recipe.toolchain.dir is not None and self.recipe.toolchain.packages:
            readable.append(self.recipe.toolchain.dir)
        for program in (toolchain.nvcc, toolchain.cc, toolchain.cxx, toolchain.strip,
                        toolchain.cmake):
            real = Path(os.path.realpath(program)) if program else None
            if real is not None and not str(real).startswith("/usr/"):
                readable.append(real.parent.parent)  # a toolchain installed outside /usr
        for d in plan.to_build:
            if d.module.cmake is not None:
                readable += list(d.module.cmake.fetchcontent.values())
            if d.module.nvcc is not None:
                readable += [*d.module.nvcc.extra_include_dirs, *d.module.nvcc.library_dirs]
        built: dict[str, BuiltModule] = {}
        for d in plan.to_build:
            if d.module.name in self.not_built_here:
                continue
            req = BuildRequest(module=d.module, source_root=src,
                               build_dir=v.root / "build" / d.module.name,
                               archs=self.recipe.archs, toolchain=toolchain, env=env,
                               umask=v.umask, jobs=self.ctx.options.jobs,
                               timeout=self.recipe.sandbox.timeout,
                               readable=tuple(dict.fromkeys(readable)), writable=(v.root,),
                               root=v.root, isolate_compiles=self.isolate_compiles)
            self.ctx.progress(f"build {v.label}: {d.module.name} ({d.module.builder.value})")
            built[d.module.wheel_path] = builder_for(d.module.builder).build(req, sandbox)
        return built

    def fixed_env(self, v: Variant, tc: Toolchain, epoch: int) -> dict[str, str]:
        dirs = [str(Path(p).parent) for p in (tc.nvcc, tc.cxx, tc.cc, tc.cmake) if p]
        path = ":".join(dict.fromkeys([*dirs, "/usr/local/bin", "/usr/bin", "/bin"]))
        env = {"PATH": path, "HOME": str(v.root / "home"), "TMPDIR": str(v.root / "tmp"),
               "SOURCE_DATE_EPOCH": str(epoch), "TZ": "UTC", "LC_ALL": "C", "LANG": "C",
               "CUDA_CACHE_DISABLE": "1", **self.recipe.env}
        if v.reverse_env:
            env = dict(reversed(list(env.items())))
        return env

    def built_origin(self, m: BuiltModule, plan: BuildPlan,
                     tc: Toolchain | None) -> dict[str, Any]:
        d = next(x for x in plan.to_build if x.module.name == m.name)
        return {"module": m.name, "recipe_entry": d.module.entry,
                "recipe": self.shown(self.recipe.path), "builder": m.builder.value,
                "toolchain": {"nvcc": tc.nvcc_version if tc else None,
                              "cc": tc.cc_version if tc else None},
                "sources": list(d.changed), "commands": list(m.commands)}

    def abi_of(self, m: BuiltModule, official: UnpackedWheel) -> Abi:
        """Exported dynamic symbols of the rebuilt module (of build a) against the official
        one; read once per module (the ABI check, then the module records)."""
        wp = self.module_by_name(m.name).wheel_path
        if wp in self.abis:
            return self.abis[wp]
        old = exported_symbols(official.local(wp), "official module")
        new = exported_symbols(m.path, "rebuilt module")
        old_weak = exported_symbols(official.local(wp), "official module", weak=True)
        missing = old - new
        # kernels a newer nvcc hides (their host stubs with them) that nothing else imports
        kernels = cuda_kernel_symbols(missing - old_weak, old) - self.imported_elsewhere(
            official, wp)
        self.abis[wp] = Abi(missing=tuple(sorted(missing - old_weak - kernels)),
                            added=tuple(sorted(new - old)),
                            missing_weak=tuple(sorted(missing & old_weak)),
                            missing_kernels=tuple(sorted(kernels)))
        return self.abis[wp]

    def imported_elsewhere(self, official: UnpackedWheel, wp: str) -> frozenset[str]:
        """The symbols the official wheel's other ELF files take from other libraries."""
        out: set[str] = set()
        for path in sorted(official.members):
            local = official.local(path)
            if path == wp or not local.is_file():
                continue
            with local.open("rb") as f:
                if f.read(4) != ELF_MAGIC:
                    continue
            out |= imported_symbols(local, f"official wheel file {path}")
        return frozenset(out)

    def module_by_name(self, name: str) -> Any:
        return next(x for x in self.recipe.modules if x.name == name)

    def check_abi(self, built: Mapping[str, BuiltModule], official: UnpackedWheel) -> None:
        """A strong symbol the official module exports and the rebuilt one lacks fails the build;
        a missing weak one (C++ vague linkage) is a finding to review."""
        for m in built.values():
            abi = self.abi_of(m, official)
            if abi.missing:
                shown = ", ".join(abi.missing[:10])
                more = f" and {len(abi.missing) - 10} more" if len(abi.missing) > 10 else ""
                self.reasons.append(f"module {m.name}: the rebuilt module no longer exports "
                                    f"{len(abi.missing)} symbol(s) of the official one: "
                                    f"{shown}{more}")
            wp = self.module_by_name(m.name).wheel_path
            if abi.missing_kernels:
                self.symbol_review("build.abi-kernel-symbols-hidden", wp, abi.missing_kernels,
                                   f"module {m.name}: {len(abi.missing_kernels)} CUDA kernel "
                                   "symbol(s) (kernels and their host stubs) of the official "
                                   "module are not exported by the rebuilt one, and no other "
                                   "file of the wheel imports them (nvcc's "
                                   "-device-entity-has-hidden-visibility, true by default in "
                                   "CUDA 13, hides __global__ functions)")
            if abi.missing_weak:
                self.symbol_review("build.abi-weak-symbols-missing", wp, abi.missing_weak,
                                   f"module {m.name}: {len(abi.missing_weak)} weak symbol(s) of "
                                   "the official module are not exported by the rebuilt one "
                                   "(inline or template code; check the recipe's flags)")

    def symbol_review(self, rule: str, wp: str, symbols: tuple[str, ...], what: str) -> None:
        """A review finding of the build on ``wp`` naming (the first ten of) ``symbols``."""
        self.findings.append(Finding(
            rule=rule, category=Category.PROVENANCE, severity=Severity.LOW, action=Action.REVIEW,
            path=wp, line=0, commit=None, scanner="build",
            message=f"{what}: " + ", ".join(symbols[:10]),
            fingerprint=fingerprint_of(rule, wp, " ".join(symbols))))

    def module_entry(self, d: ModuleDecision, official: UnpackedWheel, m: BuiltModule | None,
                     abi: Abi | None) -> ModuleRecord:
        member = official.members.get(d.module.wheel_path)
        built = m if d.action is ModuleAction.BUILT else None
        return ModuleRecord(
            name=d.module.name, wheel_path=d.module.wheel_path,
            action=d.action.value if d.action is ModuleAction.OFFICIAL or built else "not-built",
            sha256=built.sha256 if built else (member.sha256 if member else None),
            official_sha256=member.sha256 if member else None,
            builder=d.module.builder.value, recipe_entry=d.module.entry,
            sources=tuple(d.module.sources), changed_sources=tuple(d.changed),
            commands=tuple(built.commands) if built else (), abi=abi,
            official_comparison=(self.comparisons[d.module.wheel_path].to_json()
                                 if built and d.module.wheel_path in self.comparisons else None))

    def compare_with_official(self, built: Mapping[str, BuiltModule],
                              official: UnpackedWheel) -> None:
        """Each rebuilt module against the official one, statically (never loaded): every
        difference in registered ops, exported symbols, needed libraries or GPU archs is a
        finding to review, named in audit.json and the provenance."""
        for wp, m in sorted(built.items()):
            c = compare_files(official.local(wp), m.path)
            self.comparisons[wp] = c
            for diff in c.differences:
                self.findings.append(Finding(
                    rule="build.differs-from-official", category=Category.PROVENANCE,
                    severity=Severity.LOW, action=Action.REVIEW, path=wp, line=0, commit=None,
                    scanner="build",
                    message=f"module {m.name}: the rebuilt module {diff}",
                    fingerprint=fingerprint_of("build.differs-from-official", wp, diff)))

    def compare_builds(self, builds: list[dict[str, BuiltModule]], overlays: list[Overlay]) -> None:
        a, b = builds
        modules = {}
        same = True
        for wp, ma in sorted(a.items()):
            mb = b[wp]
            identical = ma.sha256 == mb.sha256
            same &= identical
            modules[ma.name] = {"first": ma.sha256, "second": mb.sha256, "identical": identical,
                                "sections": [] if identical else section_differences(ma.path,
                                                                                     mb.path)}
            if not identical:
                roots = (str(self.ctx.workdir / "build-a"),
                         str(self.ctx.workdir / "repro" / "second-build-elsewhere"))
                first = first_difference(ma.path, mb.path, roots=roots)
                modules[ma.name]["first_section"] = first.get("section")
                modules[ma.name]["likely_cause"] = first.get("cause")
                modules[ma.name]["kept"] = self.keep_pair(wp, ma, mb)
        wheels = None
        if overlays:
            wa, wb = sha256_file(overlays[0].wheel), sha256_file(overlays[1].wheel)
            same &= wa == wb
            wheels = {"first": wa, "second": wb, "identical": wa == wb}
        self.note(reproducible=same, repro={
            "builds": [{"root": "build-a", "umask": "0022", "env_order": "forward"},
                       {"root": "repro/second-build-elsewhere", "umask": "0027",
                        "env_order": "reversed"}],
            "modules": modules,
            "wheel": wheels,  # None: no wheel was made (a module too big for this machine)
        })
        if not same:
            differing = [f"{n} (sections {', '.join(v['sections']) or '?'}; the first, "
                         f"{v.get('first_section') or '?'}: likely {v.get('likely_cause')})"
                         for n, v in modules.items() if not v["identical"]
                         and isinstance(v["sections"], list)]
            kept = [v for v in modules.values() if v.get("kept")]
            self.reasons.append("not reproducible: two builds differ: "
                                + ("; ".join(differing) if differing else "the wheel bytes")
                                + (f"; both builds of each differing module are kept in "
                                   f"{KEPT_DIR}/ (first/, second/) for a byte comparison"
                                   if kept else ""))

    def keep_pair(self, wheel_path: str, a: BuiltModule, b: BuiltModule) -> dict[str, str]:
        """Both builds of a module that differs, copied next to the stage's outputs (never into
        a wheel), so the difference can be read (``diffoscope first/X second/X``)."""
        kept = {}
        for label, m in (("first", a), ("second", b)):
            name = f"{KEPT_DIR}/{label}/{wheel_path}"
            target = self.ctx.out_dir / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(m.path, target)
            kept[label] = name
        return kept


def machine_cores() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def machine_memory_gb() -> float:
    try:
        pages, size = os.sysconf("SC_PHYS_PAGES"), os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError):
        return 0.0
    return pages * size / 1024**3


def cannot_build(module: ModuleRecipe) -> str:
    """Why ``module`` is not built here, as the rest of a sentence after "is not built" ("" when
    it can be): the recipe's not_buildable reason, or what this machine lacks."""
    if module.not_buildable:
        return f": {module.not_buildable}"
    lacks = machine_lacks(module)
    return f" on this machine: {lacks}" if lacks else ""


def machine_lacks(module: ModuleRecipe, *, cores: int | None = None,
                  memory_gb: float | None = None) -> str:
    """What this machine lacks to build ``module`` (the recipe's min_cores / min_memory_gb), as
    a sentence; "" when it has enough."""
    cores = machine_cores() if cores is None else cores
    memory = machine_memory_gb() if memory_gb is None else memory_gb
    short = []
    if module.min_cores and cores < module.min_cores:
        short.append(f"the recipe asks for {module.min_cores} cores to build it, this machine has "
                     f"{cores}")
    if module.min_memory_gb and memory < module.min_memory_gb:
        short.append(f"the recipe asks for {module.min_memory_gb} GB of memory, this machine has "
                     f"{memory:.0f} GB")
    return "; ".join(short)


def copy_bundle(ws: Workspace, dest: Path, *, exclude: set[str], epoch: int) -> None:
    """A private copy of the verified bundle: manifest files only, fixed mtimes, no ``exclude``."""
    dest.mkdir(parents=True)
    for path, bf in sorted(ws.manifest.items()):
        if path in exclude:
            continue
        target = dest / path
        target.parent.mkdir(parents=True, exist_ok=True)
        src = bundle_root(ws) / path
        if bf.mode == "120000":
            link = os.readlink(src)
            resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), link))
            if link.startswith("/") or resolved.startswith("../") or resolved == "..":
                continue  # a link out of the tree is not followed into the build
            target.symlink_to(link)
            continue
        shutil.copyfile(src, target)
        target.chmod(0o755 if bf.mode == "100755" else 0o644)
        os.utime(target, (epoch, epoch))


def export_build(result: StageResult, ctx: Context, dest_dir: Path) -> Path | None:
    """Copy the built wheel from the audit directory to ``dest_dir``; None when none was built."""
    data = result.data_as(BuildData)
    wheel = data.wheel if data is not None and result.status is StageStatus.OK else None
    if wheel is None:
        return None
    src = ctx.out_dir / wheel.file
    dest_dir.mkdir(parents=True, exist_ok=True)
    target = dest_dir / src.name
    shutil.copyfile(src, target)
    return target
