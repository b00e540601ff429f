"""Issue 33 items 1-4 and 11: ``--cache`` and ``--version``, the refusal of the spec's own folder as
``--out`` (a demo folder), help texts that show spec tables, one message per spec problem, and the
README's commands table in one piece."""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import typer
from support import simple_case, write_spec
from typer.testing import CliRunner

from auditor import __version__
from auditor.cli import app
from auditor.errors import SpecError
from auditor.outputs import DEMO_SCHEMA, MARKER_NAME, write_marker
from auditor.spec import load_spec

ROOT = Path(__file__).resolve().parents[2]
TABLES = ("engine", "upstream", "patches", "bundle", "scan", "deps", "build", "service", "review")
TABLE_RE = re.compile(r"\\?\[(" + "|".join(TABLES) + r")(\.[a-z_]+)?\]")


def tar_spec(tmp: Path) -> Path:
    """The simple case with its bundle as a tarball (a folder bundle's proof is not cached)."""
    case = simple_case(tmp)
    tarball = tmp / "bundle.tar.gz"
    with tarfile.open(tarball, "w:gz") as tar:
        tar.add(case["bundle"], arcname="engine-1.0.0")
    raw = case["spec"]
    raw["bundle"] = {"path": str(tarball), "strip_components": 1}
    spec: Path = write_spec(tmp / "audit.toml", raw)
    return spec


def run(*args: str, env: dict[str, str] | None = None) -> Any:
    res = CliRunner().invoke(app, list(args), env=env)
    assert "Traceback" not in res.stderr + res.stdout, res.stderr
    return res


# ---------------------------------------------------------------- item 1: --cache, --version


def test_version_prints_auditors_version() -> None:
    res = run("--version")
    assert res.exit_code == 0
    assert res.stdout == f"auditor {__version__}\n"


@pytest.mark.parametrize("where", ["command", "global"])
def test_cache_option_names_the_cache_folder(tmp_path: Path, where: str,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    spec = tar_spec(tmp_path)
    env_cache = tmp_path / "env-cache"
    monkeypatch.setenv("AUDITOR_CACHE", str(env_cache))
    given = tmp_path / "given-cache"
    args = (["verify", str(spec), "--cache", str(given)] if where == "command"
            else ["--cache", str(given), "verify", str(spec)])
    res = run(*args)
    assert res.exit_code == 0, res.stderr
    assert (given / "proof").is_dir()  # the verify stage's proof cache went where --cache says
    assert not env_cache.exists()


def test_command_cache_wins_over_the_global_one(tmp_path: Path) -> None:
    spec = tar_spec(tmp_path)
    res = run("--cache", str(tmp_path / "global"), "verify", str(spec), "--cache",
              str(tmp_path / "own"))
    assert res.exit_code == 0, res.stderr
    assert (tmp_path / "own" / "proof").is_dir() and not (tmp_path / "global").exists()


def test_cache_that_is_a_file_is_a_usage_error(tmp_path: Path) -> None:
    case = simple_case(tmp_path)
    spec = write_spec(tmp_path / "audit.toml", case["spec"])
    (tmp_path / "afile").write_text("x")
    res = run("verify", str(spec), "--cache", str(tmp_path / "afile"),
              env={"COLUMNS": "400", "TERMINAL_WIDTH": "400"})
    assert res.exit_code == 2
    assert "is a file" in res.stderr


def _root() -> Any:
    return typer.main.get_command(app)  # a click group (typer may carry its own click)


def _commands(group: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Any]]:
    for name, cmd in sorted(group.commands.items()):
        yield (*path, name), cmd
        if hasattr(cmd, "commands"):
            yield from _commands(cmd, (*path, name))


def test_every_command_that_runs_a_stage_takes_cache() -> None:
    root = _root()
    found = {" ".join(p): {o for prm in cmd.params for o in getattr(prm, "opts", ())}
             for p, cmd in _commands(root)}
    for name in ("verify", "scan", "deps", "build", "sbom", "unit render", "audit", "gate", "demo",
                 "review plan"):
        assert "--cache" in found[name], name
    assert "--cache" in {o for prm in root.params for o in getattr(prm, "opts", ())}


# ---------------------------------------------------------------- item 2: the spec's own folder


def test_demo_folder_as_out_names_the_spec_not_the_marker(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """``cd demo-out && auditor audit audit.toml --out "$PWD"``: the demo folder holds the demo's
    marker and the spec; the refusal says the folder is the spec's."""
    case = simple_case(tmp_path)
    folder = tmp_path / "demo-out"
    folder.mkdir()
    spec = write_spec(folder / "audit.toml", case["spec"])
    write_marker(folder, DEMO_SCHEMA)
    monkeypatch.chdir(folder)
    res = run("audit", "audit.toml", "--out", str(folder))
    assert res.exit_code == 2
    assert "is the spec's folder" in res.stderr
    assert "no .auditor-out marker" not in res.stderr
    assert sorted(p.name for p in folder.iterdir()) == [MARKER_NAME, "audit.toml"]
    assert spec.is_file()


def test_a_folder_with_another_kind_of_marker_says_so(tmp_path: Path) -> None:
    case = simple_case(tmp_path)
    spec = write_spec(tmp_path / "audit.toml", case["spec"])
    other = tmp_path / "other"
    other.mkdir()
    write_marker(other, DEMO_SCHEMA)
    (other / "kept.txt").write_text("x")
    res = run("audit", str(spec), "--out", str(other))
    assert res.exit_code == 2
    assert "another kind of folder" in res.stderr and DEMO_SCHEMA in res.stderr
    assert (other / "kept.txt").is_file()


# ---------------------------------------------------------------- item 3: help shows [scan]


def test_help_of_every_command_shows_the_spec_tables_it_names() -> None:
    root = _root()
    checked = 0
    for path, cmd in [((), root), *_commands(root)]:
        sources = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
        # a group lists its commands with the first paragraph of each one's help
        sources += [(sub.help or "").split("\n\n")[0] for sub in getattr(cmd, "commands", {})
                    .values()]
        named = {m.group(0).lstrip("\\") for text in sources for m in TABLE_RE.finditer(text)}
        if not named:
            continue
        res = run(*path, "--help", env={"COLUMNS": "200", "TERMINAL_WIDTH": "200"})
        assert res.exit_code == 0, res.stderr
        for table in sorted(named):
            assert table in res.stdout, f"`auditor {' '.join(path)} --help` lost {table}"
        assert "\\[" not in res.stdout
        checked += len(named)
    assert checked >= 4  # audit --scope, series, unit render, review plan --scan, --cache


# ---------------------------------------------------------------- item 4: one message a problem


def _problems(exc: SpecError) -> list[str]:
    return [p.key or "" for p in getattr(exc, "problems", (exc,))]


def test_missing_series_file_and_a_typo_key_give_one_message_each(tmp_path: Path) -> None:
    case = simple_case(tmp_path)
    raw = case["spec"]
    raw["patches"] = {"ref": "series", "commits_file": "nope.txt"}
    raw["bundle"] = {"path": raw["bundle"]["path"], "strip_componets": 1}
    spec = write_spec(tmp_path / "audit.toml", raw)
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    keys = _problems(info.value)
    assert keys == ["patches.commits_file", "bundle.strip_componets"]
    text = "\n".join(info.value.diagnostic_lines())
    assert "'nope.txt' does not exist" in text and "missing;" not in text


def test_a_typo_of_a_required_key_is_one_problem(tmp_path: Path) -> None:
    case = simple_case(tmp_path)
    raw = case["spec"]
    raw["patches"] = {"ref": "series", "commit_file": "series.txt"}
    spec = write_spec(tmp_path / "audit.toml", raw)
    res = run("verify", str(spec))
    assert res.exit_code == 2
    assert res.stderr.count("[patches.") == 1, res.stderr
    assert "[patches.commit_file]: unknown key; did you mean commits_file?" in res.stderr


def test_an_unrelated_unknown_key_beside_a_missing_one_is_two_problems(tmp_path: Path) -> None:
    case = simple_case(tmp_path)
    raw = case["spec"]
    raw["patches"] = {"ref": "series", "colour": "red"}
    spec = write_spec(tmp_path / "audit.toml", raw)
    with pytest.raises(SpecError) as info:
        load_spec(spec)
    assert sorted(_problems(info.value)) == ["patches.colour", "patches.commits_file"]


# ---------------------------------------------------------------- item 11: the commands table


def test_readme_commands_table_is_one_piece() -> None:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("\n## Commands\n", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    rows = [i for i, line in enumerate(lines) if line.startswith("| `auditor ")]
    assert rows and rows == list(range(rows[0], rows[-1] + 1)), "the table is split"
    assert lines[rows[0] - 2].startswith("| command |")
    table = "\n".join(lines[i] for i in rows)
    root = _root()
    for path, cmd in _commands(root):
        if not hasattr(cmd, "commands"):
            assert f"`auditor {' '.join(path)}" in table, f"auditor {' '.join(path)} has no row"
