"""A build made on another machine, checked and taken into this audit.

The build stage needs nvcc and the recipe's toolchain; everything else runs on a standard machine.
``auditor build SPEC --out DIR`` (on the CUDA host) writes a self-describing build folder::

    DIR/.auditor-out             the marker (auditor/build/v1)
    DIR/build.json               the build record (below)
    DIR/<the overlay wheel>
    DIR/modules/<wheel path>     each module compiled there, as it lies in the wheel

The record is the build stage's own object, exactly as audit.json ``stages.build`` holds it
(modules, toolchain, sandbox, origins, reproducibility, findings), plus what binds it to its inputs:
the verified bundle (its git tree, and the file digest of ``inputs.bundle``), the upstream tree the
series was diffed against, the recipe's sha256 and every file of the folder by sha256.

``auditor audit SPEC --build-from DIR`` runs every other stage fresh and imports the build stage:
a record for another bundle tree is a usage error (exit 2, naming both trees); another upstream
tree, another recipe (sha256), another set of changed modules than this audit's own plan derives,
a missing file or one whose sha256 differs fails the build stage, naming the field or the file.
Nothing falls back to the official binary and nothing is rebuilt here.
"""

from __future__ import annotations

import hashlib
import json
import re
import shutil
import tempfile
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import Any

from auditor.errors import InputError, SpecError
from auditor.fsutil import relative_path, sha256_file
from auditor.model import Finding, StageResult, StageStatus, Workspace, status_for
from auditor.results.build import KEPT_DIR, BuildData, ImportedBuild
from auditor.stage import Context

BUILD_DIR_SCHEMA = "auditor/build/v1"  # the folder's marker
RECORD_SCHEMA = "auditor/build-record/v1"
RECORD_FILE = "build.json"
MODULES_DIR = "modules"
_HEX40 = re.compile(r"[0-9a-f]{40}")
_HEX64 = re.compile(r"[0-9a-f]{64}")
_MAX_RECORD_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True)
class BuildRecord:
    """``build.json``: the build stage's result and what it was built from."""

    tool: Mapping[str, str]
    bundle_tree: str
    bundle: Mapping[str, Any]  # audit.json ``inputs.bundle`` of the build
    upstream_tree: str
    recipe: str  # spec-relative path, as the build named it
    recipe_sha256: str
    built: tuple[str, ...]  # the modules compiled there, by name
    files: Mapping[str, str]  # path in the folder -> sha256
    stage: StageResult

    def to_json(self) -> dict[str, Any]:
        return {"schema": RECORD_SCHEMA, "tool": dict(self.tool),
                "bundle": {**self.bundle, "tree": self.bundle_tree},
                "upstream_tree": self.upstream_tree,
                "recipe": {"path": self.recipe, "sha256": self.recipe_sha256},
                "built_modules": list(self.built), "files": dict(sorted(self.files.items())),
                "stage": self.stage.to_json()}

    @classmethod
    def from_json(cls, d: Any, where: str) -> BuildRecord:
        """The record, or an InputError naming ``where`` and the field that is wrong."""
        def bad(field: str, what: str) -> InputError:
            return InputError(f"{where}: {field}: {what}",
                              hint="write the folder again with auditor build SPEC --out DIR")

        if not isinstance(d, dict):
            raise bad("(top)", "not a JSON object")
        if d.get("schema") != RECORD_SCHEMA:
            raise bad("schema", f"{d.get('schema')!r}, expected {RECORD_SCHEMA!r}")

        def hexes(field: str, value: Any, pattern: re.Pattern[str]) -> str:
            if not isinstance(value, str) or not pattern.fullmatch(value):
                raise bad(field, f"{value!r} is not a {'sha256' if pattern is _HEX64 else 'git'}"
                                 " digest")
            return value

        bundle, recipe = d.get("bundle"), d.get("recipe")
        if not isinstance(bundle, dict):
            raise bad("bundle", "missing")
        if not isinstance(recipe, dict) or not isinstance(recipe.get("path"), str):
            raise bad("recipe", "missing its path")
        files = d.get("files")
        if not isinstance(files, dict):
            raise bad("files", "missing")
        for name, digest in files.items():
            hexes(f"files[{name!r}]", digest, _HEX64)
            if _unsafe(name):
                raise bad(f"files[{name!r}]", "not a plain relative path inside the folder")
        built = d.get("built_modules")
        if not isinstance(built, list) or not all(isinstance(x, str) for x in built):
            raise bad("built_modules", "expected a list of module names")
        tool = d.get("tool")
        try:
            stage = StageResult.from_json("build", d["stage"])
        except (KeyError, TypeError, ValueError) as exc:
            raise bad("stage", f"not a build stage result ({type(exc).__name__}: {exc})") from None
        if stage.data is not None and not isinstance(stage.data, BuildData):
            raise bad("stage", "the build stage crashed there; nothing to import")
        return cls(tool={str(k): str(v) for k, v in tool.items()} if isinstance(tool, dict)
                   else {},
                   bundle_tree=hexes("bundle.tree", bundle.get("tree"), _HEX40),
                   bundle={k: v for k, v in bundle.items() if k != "tree"},
                   upstream_tree=hexes("upstream_tree", d.get("upstream_tree"), _HEX40),
                   recipe=recipe["path"],
                   recipe_sha256=hexes("recipe.sha256", recipe.get("sha256"), _HEX64),
                   built=tuple(built), files={str(k): str(v) for k, v in files.items()},
                   stage=stage)


def _unsafe(name: str) -> bool:
    p = PurePosixPath(name)
    return (not name or "\\" in name or "\0" in name or p.is_absolute()
            or any(part in ("", ".", "..") for part in name.split("/")))


# ------------------------------------------------------------------ writing (the CUDA host)


def record_for(result: StageResult, ctx: Context, files: Mapping[str, str]) -> BuildRecord:
    """The record of a build stage that ran here (``files``: what the folder holds)."""
    from auditor.bundledigest import bundle_digest
    from auditor.pipeline import tool_info

    ws = ctx.workspace
    assert ws is not None and ctx.spec.build is not None
    data = result.data_as(BuildData)
    return BuildRecord(
        tool={str(k): str(v) for k, v in tool_info().items()},
        bundle_tree=ws.bundle_tree,
        bundle={k: v for k, v in bundle_digest(ctx.spec, ws.bundle_tree).to_json().items()
                if k != "tree"},
        upstream_tree=ws.upstream_tree,
        recipe=relative_path(ctx.spec.build.recipe, ctx.spec.root),
        recipe_sha256=sha256_file(ctx.spec.build.recipe),
        built=tuple(m.name for m in data.built) if data is not None else (),
        files=files, stage=result)


def write_build_dir(result: StageResult, ctx: Context, out: Path) -> Path | None:
    """Write the build folder ``out`` (atomically; only a new, empty or earlier build folder is
    replaced); None, and nothing written, when there is no verified bundle to bind it to."""
    from auditor.pipeline import AuditDirectory, write_json

    if ctx.workspace is None or ctx.spec.build is None:
        return None
    directory = AuditDirectory(out, spec=ctx.spec, schema=BUILD_DIR_SCHEMA)
    try:
        files: dict[str, str] = {}
        data = result.data_as(BuildData)
        if data is not None and data.wheel is not None:
            wheel = ctx.out_dir / data.wheel.file
            shutil.copyfile(wheel, directory.tmp / data.wheel.file)
            files[data.wheel.file] = sha256_file(directory.tmp / data.wheel.file)
            with zipfile.ZipFile(wheel) as zf:
                for m in data.built:
                    target = directory.tmp / MODULES_DIR / m.wheel_path
                    target.parent.mkdir(parents=True, exist_ok=True)
                    with zf.open(m.wheel_path) as src, target.open("wb") as dst:
                        shutil.copyfileobj(src, dst)
                    digest = sha256_file(target)
                    if digest != m.sha256:  # the wheel must hold what the stage recorded
                        raise InputError(f"{m.wheel_path}: the built wheel holds sha256 {digest}, "
                                         f"the build recorded {m.sha256}")
                    files[f"{MODULES_DIR}/{m.wheel_path}"] = digest
        kept = ctx.out_dir / KEPT_DIR  # a failed repro check's two builds: evidence, listed
        if kept.is_dir():
            for each in sorted(p for p in kept.rglob("*") if p.is_file()):
                name = each.relative_to(ctx.out_dir).as_posix()
                (directory.tmp / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(each, directory.tmp / name)
                files[name] = sha256_file(directory.tmp / name)
        write_json(directory.tmp / RECORD_FILE, record_for(result, ctx, files).to_json())
        return directory.commit()
    except OSError as exc:
        directory.abort()
        raise InputError(f"--out {out}: cannot be written: {exc.strerror or exc}") from None
    except BaseException:
        directory.abort()
        raise


# ------------------------------------------------------------------ reading (any machine)


def load_record(folder: Path) -> tuple[BuildRecord, str]:
    """The folder's record and its sha256; InputError (exit 2) when it is missing or unreadable."""
    where = f"--build-from {folder}"
    if not folder.is_dir():
        raise InputError(f"{where}: not a folder", hint="give the folder auditor build SPEC "
                         "--out DIR wrote (the CI artifact of the build job)")
    path = folder / RECORD_FILE
    if path.is_symlink() or not path.is_file():
        raise InputError(f"{where}: has no build record {RECORD_FILE}",
                         hint="give the folder auditor build SPEC --out DIR wrote")
    try:
        raw = path.read_bytes()[:_MAX_RECORD_BYTES + 1]
    except OSError as exc:
        raise InputError(f"{where}: {RECORD_FILE} cannot be read: {exc.strerror}") from None
    if len(raw) > _MAX_RECORD_BYTES:
        raise InputError(f"{where}: {RECORD_FILE} is larger than {_MAX_RECORD_BYTES} bytes")
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{where}: {RECORD_FILE} is not JSON: {exc}") from None
    return BuildRecord.from_json(doc, f"{where}: {RECORD_FILE}"), hashlib.sha256(raw).hexdigest()


def check_build_from(spec: Any, folder: Path) -> None:
    """Before any stage runs: the spec asks for a build and the folder holds a readable record."""
    if spec.build is None:
        raise InputError(f"--build-from {folder}: the spec {spec.path.name} has no [build]: "
                         "there is no build stage to import")
    load_record(folder)


def check_same_bundle(ws: Workspace, folder: Path) -> None:
    """Once verify has read the bundle: a record of another bundle tree is a usage error."""
    record, _ = load_record(folder)
    if record.bundle_tree != ws.bundle_tree:
        raise InputError(
            f"--build-from {folder}: the build record is for the bundle with tree "
            f"{record.bundle_tree} ({record.bundle.get('path', '?')}, sha256 "
            f"{record.bundle.get('sha256') or 'none: a folder'}); this audit's bundle has tree "
            f"{ws.bundle_tree}", hint="build this bundle: auditor build SPEC --out DIR")


def import_build(ctx: Context, folder: Path) -> StageResult:
    """The build stage's result, taken from ``folder`` once everything in it checks out."""
    return _Import(ctx, folder).run()


class _Import:
    def __init__(self, ctx: Context, folder: Path) -> None:
        self.ctx, self.folder = ctx, folder
        self.reasons: list[str] = []

    def run(self) -> StageResult:
        ctx = self.ctx
        ws = ctx.workspace
        record, digest = load_record(self.folder)
        if ws is None:
            return StageResult("build", StageStatus.INCOMPLETE,
                               not_checked=("no verified workspace",))
        check_same_bundle(ws, self.folder)
        ctx.progress(f"build: importing {RECORD_FILE} (sha256 {digest[:16]}…) written by "
                     f"{record.tool.get('name', '?')} {record.tool.get('version', '?')}")
        data = record.stage.data_as(BuildData)
        if not ws.proof_ok:
            self.reasons.append("the bundle proof failed: no build is imported for an unverified "
                                "bundle")
        elif data is None:
            self.reasons.append(f"the build record holds no build result (status "
                                f"{record.stage.status.value} there)")
        else:
            self.check_inputs(record, ws)
            self.check_files(record, data)
            if data.wheel is not None and not self.reasons:
                self.check_plan(record, data, ws)
        shown = relative_path(self.folder, ctx.spec.root)
        imported = ImportedBuild(source=shown, record=RECORD_FILE, record_sha256=digest,
                                 tool=record.tool)
        if data is not None:
            data = replace(data, imported=imported,
                           wheel=None if self.reasons else data.wheel)
            if data.wheel is not None:
                ctx.out_dir.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(self.folder / data.wheel.file, ctx.out_dir / data.wheel.file)
        from auditor.policy import EXPIRED_RULE, policy_of
        from auditor.rebuild.stage import ruled_by_policy

        # this audit's policy and waivers decide, not those of the audit that built it
        findings = tuple(ruled_by_policy((_unwaived(f) for f in record.stage.findings
                                          if f.rule != EXPIRED_RULE), policy_of(ctx.spec)))
        reasons = (*record.stage.reasons, *self.reasons)
        return StageResult("build", status_for(findings, record.stage.not_checked, reasons), data,
                           findings=findings, not_checked=record.stage.not_checked,
                           reasons=reasons)

    def check_inputs(self, record: BuildRecord, ws: Workspace) -> None:
        spec = self.ctx.spec
        assert spec.build is not None
        if record.upstream_tree != ws.upstream_tree:
            self.reasons.append(f"imported build: upstream_tree {record.upstream_tree} in the "
                                f"record, this audit's upstream tree is {ws.upstream_tree}")
        mine = sha256_file(spec.build.recipe)
        if record.recipe_sha256 != mine:
            self.reasons.append(
                f"imported build: recipe.sha256 {record.recipe_sha256} in the record "
                f"({record.recipe}), this audit's recipe "
                f"{relative_path(spec.build.recipe, spec.root)} has sha256 {mine}")

    def check_files(self, record: BuildRecord, data: BuildData) -> None:
        """Every file the record lists, by sha256; the wheel and each built module listed."""
        for name, want in sorted(record.files.items()):
            path = self.folder / name
            if path.is_symlink() or not path.is_file():
                self.reasons.append(f"imported build: {name}: missing from {self.folder.name}/")
                continue
            got = sha256_file(path, follow_symlinks=False)
            if got != want:
                self.reasons.append(f"imported build: {name}: sha256 {got}, the build record "
                                    f"says {want}")
        expected: dict[str, str | None] = {}
        if data.wheel is not None:
            expected[data.wheel.file] = data.wheel.sha256
        for m in data.built:
            expected[f"{MODULES_DIR}/{m.wheel_path}"] = m.sha256
        for name, listed in expected.items():
            if name not in record.files:
                self.reasons.append(f"imported build: {name}: not among the record's files")
            elif record.files[name] != listed:
                self.reasons.append(f"imported build: {name}: the record's files say sha256 "
                                    f"{record.files[name]}, its build result {listed}")
        if set(record.built) != {m.name for m in data.built}:
            self.reasons.append(f"imported build: built_modules {sorted(record.built)} in the "
                                f"record, its build result compiled "
                                f"{sorted(m.name for m in data.built)}")
        if data.wheel is not None and not self.reasons:
            self.check_wheel_members(data)

    def check_wheel_members(self, data: BuildData) -> None:
        """Each built module inside the wheel is the module file listed beside it."""
        assert data.wheel is not None
        try:
            with zipfile.ZipFile(self.folder / data.wheel.file) as zf:
                for m in data.built:
                    h = hashlib.sha256()
                    try:
                        with zf.open(m.wheel_path) as fh:
                            while chunk := fh.read(1 << 20):
                                h.update(chunk)
                    except KeyError:
                        self.reasons.append(f"imported build: {data.wheel.file}: holds no "
                                            f"{m.wheel_path}")
                        continue
                    if h.hexdigest() != m.sha256:
                        self.reasons.append(f"imported build: {data.wheel.file}: "
                                            f"{m.wheel_path} has sha256 {h.hexdigest()}, the "
                                            f"record says {m.sha256}")
        except (zipfile.BadZipFile, OSError) as exc:
            self.reasons.append(f"imported build: {data.wheel.file}: not a readable wheel: {exc}")

    def check_plan(self, record: BuildRecord, data: BuildData, ws: Workspace) -> None:
        """The modules this audit's own plan rebuilds, with the same changed sources."""
        from auditor.rebuild.plan import make_plan

        spec = self.ctx.spec
        assert spec.build is not None
        with tempfile.TemporaryDirectory(prefix="auditor-plan-") as tmp:
            recipe = plan_recipe(spec.build.recipe, Path(tmp))
            plan = make_plan(ws, recipe, spec.profile.native_globs)
        mine = {d.module.name: d.changed for d in plan.to_build}
        theirs = {m.name: m.changed_sources for m in data.built}
        if set(mine) != set(theirs):
            self.reasons.append(f"imported build: the record's build compiled "
                                f"{sorted(theirs) or 'no module'}; this audit's plan rebuilds "
                                f"{sorted(mine) or 'no module'}")
            return
        for name, changed in sorted(mine.items()):
            if tuple(theirs[name]) != tuple(changed):
                self.reasons.append(f"imported build: module {name}: changed_sources "
                                    f"{list(theirs[name])} in the record, this audit's plan "
                                    f"{list(changed)}")


def _unwaived(f: Finding) -> Finding:
    return replace(f, waived=False, waiver=None) if f.waived else f


# ------------------------------------------------------------------ the recipe, for the plan only


_HOST_LISTS = {("sandbox", "readable"), ("nvcc", "extra_include_dirs"), ("nvcc", "library_dirs")}


def plan_recipe(path: Path, tmp: Path) -> Any:
    """The recipe as the plan reads it, on a machine without the build host's folders.

    What to rebuild depends only on the modules' bundle paths (sources, CMake folder and target),
    never on the build machine's folders, which a standard runner does not have and the recipe
    loader requires: a copy of the recipe whose host folders are one empty folder here is loaded
    with the real loader. Its sha256 was compared with the record's on the original file."""
    import tomllib

    from auditor.rebuild.recipe import load_recipe

    try:
        doc = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise SpecError(f"cannot be read: {exc}", file=str(path)) from None
    stand_in = tmp / "host-folder"
    stand_in.mkdir()
    (stand_in / "official.whl").write_bytes(b"")

    def neutral(table: Any, parent: str) -> Any:
        if isinstance(table, dict):
            out: dict[str, Any] = {}
            for key, value in table.items():
                if (parent, key) in _HOST_LISTS and isinstance(value, list):
                    out[key] = [str(stand_in) for _ in value]
                elif parent == "fetchcontent" and isinstance(value, str):
                    out[key] = str(stand_in)
                elif parent == "wheel" and key == "file" and isinstance(value, str):
                    out[key] = str(stand_in / "official.whl")
                else:
                    out[key] = neutral(value, key)
            return out
        if isinstance(table, list):
            return [neutral(v, parent) for v in table]
        return table

    copy = tmp / path.name
    copy.write_text(_toml(neutral(doc, "")), encoding="utf-8")
    return load_recipe(copy)


def _toml(doc: Mapping[str, Any]) -> str:
    """A TOML document of plain values: one ``key = value`` line per top-level key, tables and
    arrays inline (JSON's string escapes are TOML's)."""
    def value(v: Any) -> str:
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (int, float, str)):
            return json.dumps(v)
        if isinstance(v, list):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, dict):
            return "{" + ", ".join(f"{json.dumps(str(k))} = {value(x)}" for k, x in v.items()) \
                + "}"
        return json.dumps(str(v))  # dates and times: as text (no recipe key holds one)

    return "".join(f"{json.dumps(str(k))} = {value(v)}\n" for k, v in doc.items())
