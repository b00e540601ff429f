"""The embedded example: an upstream engine, a community fork, a bundle, an official wheel, a spec.

``auditor demo --out DIR`` writes, in a fresh folder::

    DIR/mirrors/upstream.git     upstream tinyllm, tag v1.0.0
    DIR/mirrors/community.git    the fork: branch sm86 = v1.0.0 + the series
    DIR/downloads/tinyllm-community.tar.gz   the bundle (git archive of the fork, one top folder)
    DIR/series.txt               the commits as published
    DIR/wheels/                  the "official" wheel built from upstream (nvcc for the kernels)
    DIR/osv-snapshot/            an offline advisory snapshot (demo records)
    DIR/reviews.toml             sign-offs of some hunks (auditor review status shows coverage)
    DIR/audit.toml               the spec tying them together
    DIR/audit/                   the audit directory

and runs the whole audit. It exits 0 when the audit ran to the end, whatever the verdict.
"""

from __future__ import annotations

import datetime as dt
import json
import shutil
from pathlib import Path

from rich.console import Console

from auditor.demo_files import PROMPT_LOG_LINE, SERIES, UPSTREAM
from auditor.errors import InputError
from auditor.gitio import git_env, run
from auditor.stage import Options

UPSTREAM_AUTHOR = ("tinyllm maintainers", "maintainers@tinyllm.example")
FORK_AUTHOR = ("sm86-fan", "sm86-fan@users.noreply.example")
EPOCH = 1_767_225_600  # 2026-01-01T00:00:00Z: the demo's commits are dated from here


class _Repo:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.clock = EPOCH
        path.mkdir(parents=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, author: tuple[str, str] = UPSTREAM_AUTHOR) -> str:
        env = git_env({
            "GIT_AUTHOR_NAME": author[0], "GIT_AUTHOR_EMAIL": author[1],
            "GIT_COMMITTER_NAME": author[0], "GIT_COMMITTER_EMAIL": author[1],
            "GIT_AUTHOR_DATE": f"@{self.clock} +0000", "GIT_COMMITTER_DATE": f"@{self.clock} +0000",
            "GIT_CONFIG_GLOBAL": "/dev/null",
        })
        return run(["git", "-C", str(self.path), *args], env=env).stdout.strip()

    def write(self, files: dict[str, str | bytes | None]) -> None:
        for rel, content in files.items():
            p = self.path / rel
            if content is None:
                p.unlink()
                continue
            p.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                p.write_bytes(content)
            else:
                p.write_text(content, encoding="utf-8")
            if rel.endswith(".sh"):
                p.chmod(0o755)

    def commit(self, message: str, author: tuple[str, str] = UPSTREAM_AUTHOR) -> str:
        self.clock += 3600
        self.git("add", "-A", author=author)
        self.git("commit", "-q", "-m", message, author=author)
        return self.git("rev-parse", "HEAD")


def make_example(root: Path) -> dict[str, object]:
    """Write the repositories, bundle and series; return what the spec needs."""
    work = _Repo(root / "work" / "tinyllm")
    work.write(dict(UPSTREAM))
    work.commit("tinyllm 1.0.0")
    work.git("tag", "v1.0.0")
    work.git("checkout", "-q", "-b", "sm86")
    commits = []
    for subject, files in SERIES:
        files = dict(files)
        if files.get("tinyllm/server.py", "") is None:  # the prompt-logging commit
            current = (work.path / "tinyllm/server.py").read_text(encoding="utf-8")
            anchor = "    text = engine.generate(request)\n"
            files["tinyllm/server.py"] = current.replace(anchor, anchor + PROMPT_LOG_LINE)
        work.write(files)
        commits.append((work.commit(subject, FORK_AUTHOR), subject))

    mirrors = root / "mirrors"
    mirrors.mkdir()
    run(["git", "clone", "-q", "--bare", "--single-branch", "--branch", "v1.0.0",
         str(work.path), str(mirrors / "upstream.git")], env=git_env())
    run(["git", "clone", "-q", "--bare", str(work.path), str(mirrors / "community.git")],
        env=git_env())

    downloads = root / "downloads"
    downloads.mkdir()
    bundle = downloads / "tinyllm-community.tar.gz"
    work.git("archive", "--format=tar.gz", "--prefix=tinyllm-community/", "-o", str(bundle), "sm86")
    (root / "series.txt").write_text(
        "# the series as published by sm86-fan, oldest first\n"
        + "".join(f"{sha} {subject}\n" for sha, subject in commits), encoding="utf-8")
    return {"commits": [c for c, _ in commits], "work": work.path,
            "upstream_commit": work.git("rev-parse", "v1.0.0")}


def write_osv_snapshot(root: Path) -> Path:
    """A tiny offline advisory snapshot in OSV's format (demo records, clearly marked)."""
    snap = root / "osv-snapshot"
    snap.mkdir()
    record = {
        "schema_version": "1.6.0",
        "id": "DEMO-2026-0001",
        # dated when the demo is made: an older snapshot would be too old to count as a check
        "modified": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT00:00:00Z"),
        "published": "2026-09-15T00:00:00Z",
        "summary": "Demo advisory: request smuggling in uvicorn before 0.30.0 (not a real advisory)",
        "details": "Written for auditor's embedded example.",
        "affected": [{
            "package": {"ecosystem": "PyPI", "name": "uvicorn"},
            "ranges": [{"type": "ECOSYSTEM", "events": [{"introduced": "0"}, {"fixed": "0.30.0"}]}],
        }],
        "database_specific": {"severity": "MODERATE"},
    }
    (snap / "DEMO-2026-0001.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    return snap


def write_spec(root: Path, example: dict[str, object], build_recipe: Path | None) -> Path:
    lines = [
        "# The demo's audit spec: tinyllm 1.0.0 plus the sm86 community series.",
        "[engine]", 'profile = "vllm"', 'version = "1.0.0"', "",
        "[upstream]", 'repo = "mirrors/upstream.git"', 'ref = "v1.0.0"',
        f'commit = "{example["upstream_commit"]}"', "",
        "[patches]", 'repo = "mirrors/community.git"', 'ref = "sm86"',
        'commits_file = "series.txt"', "",
        "[bundle]", 'path = "downloads/tinyllm-community.tar.gz"', "strip_components = 1", "",
        "[scan]", 'scope = "diff"', "",
        "[deps]", 'vulns = "osv:osv-snapshot"', "",
    ]
    if build_recipe is not None:
        lines += ["[build]", f'recipe = "{build_recipe.relative_to(root)}"', "repro = true", ""]
    lines += [
        "[service]", 'name = "tinyllm"', 'user = "tinyllm"', 'model = "/srv/models/llama-3-8b"',
        'exec = "/opt/tinyllm/bin/tinyllm"', 'api_key_file = "/etc/tinyllm/api-key.env"',
        'client_networks = ["10.20.0.0/16"]', "",
        "[review]", 'file = "reviews.toml"', "required = true", "",
    ]
    spec = root / "audit.toml"
    spec.write_text("\n".join(lines), encoding="utf-8")
    return spec


def prepare(root: Path) -> Path:
    """Make the whole example under ``root`` (which must not exist or be empty); the spec path."""
    from auditor.outputs import MARKER_NAME

    if root.exists() and any(p.name != MARKER_NAME for p in root.iterdir()):
        raise InputError(f"{root} exists and is not empty; choose another --out or remove it")
    root.mkdir(parents=True, exist_ok=True)
    example = make_example(root)
    write_osv_snapshot(root)
    from auditor.review.demo import write_demo_reviews

    commits = example["commits"]
    assert isinstance(commits, list)
    write_demo_reviews(root, root / "mirrors" / "community.git", [str(c) for c in commits])
    from auditor.rebuild.demo import make_official_wheel_and_recipe

    recipe = make_official_wheel_and_recipe(root, Path(str(example["work"])))
    return write_spec(root, example, recipe)


def run_demo(out: Path, options: Options, console: Console) -> int:
    from auditor.outputs import DEMO_SCHEMA, check_out_dir, write_marker
    from auditor.pipeline import audit
    from auditor.report.console import print_summary
    from auditor.spec import load_spec
    from auditor.textsafe import console_safe

    # only a new or empty folder, or one an earlier demo wrote (it holds the marker), is replaced
    out = check_out_dir(out, schema=DEMO_SCHEMA)
    if out.exists():
        shutil.rmtree(out)
    console.print(f"making the example in [bold]{console_safe(out)}[/bold] …")
    try:
        out.mkdir(parents=True)
        write_marker(out, DEMO_SCHEMA)
    except OSError as exc:
        raise InputError(f"--out {out}: cannot be created: {exc.strerror or exc}") from None
    spec_path = prepare(out)
    console.print(f"spec: {console_safe(spec_path)}")
    result = audit(load_spec(spec_path), options, out / "audit")
    print_summary(console, result, out / "audit")
    console.print("the demo's audit is meant to fail: the series hides a beacon, a key leak, prompt "
                  "logging, pickle over a socket, a privileged container and a prebuilt binary.")
    return 0
