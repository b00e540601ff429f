"""Packages installed by the docs (issue 29, item 4): a README's shell blocks are read for
``pip install``; what no requirements file declares is listed in the diff as "installed by the
docs". Real trees on disk, read by the real extractor and diffed."""

from __future__ import annotations

from pathlib import Path

from auditor.deps.diff import diff
from auditor.deps.extract import extract_tree
from auditor.deps.extract.docs import GROUP
from auditor.deps.tree import DirTree

UPSTREAM = {
    "requirements/common.txt": "torch==2.7.1\ntransformers>=4.51\n",
    "README.md": "# engine\n\n```bash\npip install engine\n```\n",
}
FORK_README = """\
# engine for sm86

```bash
pip install git+https://github.com/sm86-fan/flashinfer.git@v0.2-sm86
pip install torch==2.7.1 sm86-kernels==0.3
pip install engine==<version>
```

```python
import subprocess
subprocess.run(["pip", "install", "never-read"])
```

Run `pip install inline-prose` to get it.
"""


def _tree(root: Path, files: dict[str, str]) -> DirTree:
    for path, text in files.items():
        p = root / path
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return DirTree(root)


def test_docs_installs_only_the_docs_declare(tmp_path: Path) -> None:
    up = extract_tree(_tree(tmp_path / "up", UPSTREAM))
    fork = extract_tree(_tree(tmp_path / "fork", {**UPSTREAM, "README.md": FORK_README}))
    docs = {d.name: d for d in fork.declarations if d.file == "README.md"}
    # torch is declared by requirements/common.txt: not "installed by the docs"
    assert sorted(docs) == ["flashinfer", "sm86-kernels"], sorted(docs)
    assert all(d.group == GROUP for d in docs.values())
    assert docs["flashinfer"].line == 4 and docs["sm86-kernels"].line == 5
    assert not fork.skipped  # a <placeholder> in a doc is prose, not an unchecked install

    d = diff(up.declarations, fork.declarations, typosquat_distance=0, popular=frozenset())
    added = {a.name: a for a in d.added}
    assert set(added) == {"flashinfer", "sm86-kernels"}
    messages = [i.message for i in d.issues if i.rule == "dependency.added"]
    assert all(GROUP in m for m in messages), messages
    assert any(i.rule == "dependency.direct-url" and i.decl.name == "flashinfer"
               for i in d.issues)


def test_unchanged_docs_add_nothing(tmp_path: Path) -> None:
    up = extract_tree(_tree(tmp_path / "up", UPSTREAM))
    same = extract_tree(_tree(tmp_path / "same", UPSTREAM))
    d = diff(up.declarations, same.declarations, typosquat_distance=0, popular=frozenset())
    assert d.added == () and d.issues == ()
