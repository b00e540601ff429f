"""Benchmark: auditor's Python tree hash against `git init && git add -A && git write-tree`.

Generates a bundle-like folder (2,500 files by default: nested packages, source-sized files, a few
executables and symlinks), checks that both give the same tree, and prints the median of 5 timed
runs of each. The Python side also produces the full SHA-256 manifest in the same pass.

    .venv/bin/python benchmarks/bench_treehash.py [--files 2500] [--runs 5] [--write]

``--write`` records the figures in benchmarks/bench_treehash.results.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from auditor.provenance.treehash import hash_folder  # noqa: E402

GIT_ENV = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": os.devnull,
           "LC_ALL": "C"}


_WORDS = ("def", "return", "self", "import", "torch", "tensor", "for", "in", "if", "else",
          "config", "model", "x", "y", "=", "(", ")", ":", "0", "1", "None", "#", "cuda")


def _source_like(rnd: random.Random, size: int) -> bytes:
    """Text that compresses like source code does (git deflates every blob it stores)."""
    out: list[str] = []
    n = 0
    while n < size:
        line = "    " * rnd.randrange(3) + " ".join(rnd.choices(_WORDS, k=rnd.randrange(3, 12)))
        out.append(line)
        n += len(line) + 1
    return ("\n".join(out) + "\n").encode()[:size]


def generate(root: Path, files: int, seed: int = 1) -> int:
    rnd = random.Random(seed)
    folders = [root]
    total = 0
    for i in range(files):
        if rnd.random() < 0.08 or len(folders) < 4:
            parent = rnd.choice(folders)
            new = parent / f"pkg{i}"
            new.mkdir()
            folders.append(new)
        folder = rnd.choice(folders)
        size = int(rnd.lognormvariate(8, 1.2))  # median ~3 KB, a long tail
        if i % 100 == 0:
            (folder / f"link{i}").symlink_to(f"mod{i - 1}.py")
            continue
        p = folder / f"mod{i}.py"
        p.write_bytes(_source_like(rnd, size))
        total += size
        if i % 37 == 0:
            p.chmod(0o755)
    return total


def git_tree(folder: Path) -> str:
    shutil.rmtree(folder / ".git", ignore_errors=True)
    for args in (["init", "-q"], ["add", "-A"]):
        subprocess.run(["git", "-C", str(folder), *args], env=GIT_ENV, check=True,
                       capture_output=True)
    out = subprocess.run(["git", "-C", str(folder), "write-tree"], env=GIT_ENV, check=True,
                         capture_output=True, text=True).stdout.strip()
    return out


def timed(fn) -> tuple[float, str]:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=2500)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--write", action="store_true")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "bundle"
        root.mkdir()
        size = generate(root, args.files)
        ours: list[float] = []
        git: list[float] = []
        for _ in range(args.runs):
            t_git, g = timed(lambda: git_tree(root))
            shutil.rmtree(root / ".git")
            t_ours, h = timed(lambda: hash_folder(root).tree)
            if g != h:
                print(f"MISMATCH: git {g} vs auditor {h}", file=sys.stderr)
                return 1
            git.append(t_git)
            ours.append(t_ours)
    m_ours, m_git = statistics.median(ours), statistics.median(git)
    lines = [
        f"files: {args.files} ({size / 1e6:.1f} MB), runs: {args.runs}, "
        f"python {platform.python_version()}, {os.cpu_count()} cpus",
        f"auditor hash_folder (tree + sha256 manifest): median {m_ours * 1000:.0f} ms "
        f"(runs: {', '.join(f'{t * 1000:.0f}' for t in ours)})",
        f"git init && git add -A && git write-tree:     median {m_git * 1000:.0f} ms "
        f"(runs: {', '.join(f'{t * 1000:.0f}' for t in git)})",
        f"ratio auditor/git: {m_ours / m_git:.2f} (target <= 2.0); tree {h}",
    ]
    print("\n".join(lines))
    if args.write:
        out = Path(__file__).with_name("bench_treehash.results.md")
        out.write_text("# bench_treehash results\n\n```\n" + "\n".join(lines) + "\n```\n")
    return 0 if m_ours <= 2 * m_git else 2


if __name__ == "__main__":
    raise SystemExit(main())
