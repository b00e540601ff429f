"""Measure the redaction pass: precision and recall on the labelled set, and false alarms on a
real source tree (which holds no live secret, so every line changed there is a false alarm or a
literal example key).

    python benchmarks/redaction.py [--tree /work/real/vllm-0.10.0] [--show 20]

The labelled set is tests/core/redaction_corpus.py (true secrets in their vendors' shapes, and
look-alikes: token counts, digests, git shas, code that reads a key). Prints the figures and the
changed lines of the tree; results are recorded in benchmarks/redaction.results.md by hand.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE.parent / "tests" / "core")]

from redaction_corpus import LOOKALIKES, SECRETS  # noqa: E402

from auditor.redaction import redact  # noqa: E402


def labelled() -> None:
    found = missed = 0
    for line, secrets in SECRETS:
        out = redact(line)
        for s in secrets:
            if s in out:
                missed += 1
                print(f"  missed: {line!r}")
            else:
                found += 1
    alarms = [line for line in LOOKALIKES if redact(line) != line]
    for line in alarms:
        print(f"  false alarm: {line!r} -> {redact(line)!r}")
    precision = found / (found + len(alarms)) if found + len(alarms) else 1.0
    print(f"labelled set: {found + missed} secrets in {len(SECRETS)} lines, {len(LOOKALIKES)} "
          f"look-alikes; recall {found / (found + missed):.3f}, precision {precision:.3f}")


def tree(root: Path, show: int) -> None:
    files = lines = 0
    changed: list[tuple[str, str]] = []
    size = 0
    start = time.perf_counter()
    for dirpath, _, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            files += 1
            size += len(text)
            lines += text.count("\n")
            out = redact(text)
            if out != text:
                changed += [(str(path.relative_to(root)), a.strip()[:140])
                            for a, b in zip(text.splitlines(), out.splitlines(), strict=False)
                            if a != b]
    took = time.perf_counter() - start
    print(f"{root}: {files} text files, {lines} lines, {size / 1e6:.1f} MB in {took:.1f} s "
          f"({size / 1e6 / took:.1f} MB/s); {len(changed)} lines changed")
    for path, line in changed[:show]:
        print(f"  {path}: {line}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tree", type=Path, default=None)
    ap.add_argument("--show", type=int, default=20)
    args = ap.parse_args()
    labelled()
    if args.tree is not None:
        tree(args.tree, args.show)


if __name__ == "__main__":
    main()
