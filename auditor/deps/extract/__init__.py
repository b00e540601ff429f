"""Static extraction of dependency declarations from a tree, one module per format family."""

from __future__ import annotations

from pathlib import PurePosixPath

from auditor.deps.declaration import Extraction, Skip
from auditor.deps.extract import cmake, docs, pyproject, requirements, setupcfg, setuppy, shell
from auditor.deps.tree import Tree, select

_SINGLE_FILE = (
    (pyproject.is_pyproject, pyproject.extract),
    (setuppy.is_setup_py, setuppy.extract),
    (setupcfg.is_setup_cfg, setupcfg.extract),
    (cmake.is_cmake, cmake.extract),
    (shell.is_script, shell.extract),
    (docs.is_docs, docs.extract),
)


def extract_tree(tree: Tree) -> Extraction:
    """Every declaration of every format in ``tree``, sorted by file and line."""
    all_paths = tree.paths()
    req_paths = select(all_paths, requirements.is_requirements_file)
    singles = select(all_paths, lambda p: any(match(p) for match, _ in _SINGLE_FILE))
    contents = tree.read_many(singles)
    cache: dict[str, str | None] = {}

    def read(path: str) -> str | None:
        if path not in cache:
            cache[path] = tree.read_text(path)
        return cache[path]

    result = Extraction()
    for path in singles:
        data = contents.get(path)
        if data is None:
            result += Extraction(skipped=(Skip(path, 0, "could not be read (too large)"),),
                                 files=(path,))
            continue
        text = data.decode("utf-8", "replace")
        pp = PurePosixPath(path)
        for match, fn in _SINGLE_FILE:
            if match(pp):
                result += fn(path, text)
    # requirements files, with those that setup.cfg / pyproject.toml point at
    known = frozenset(all_paths)
    for target, origin, line in result.references:
        resolved, why = requirements.resolve(origin, target, known)
        if resolved is None:
            result += Extraction(skipped=(Skip(origin, line, f"{target!r}: {why}"),))
        else:
            result += Extraction(includes=((origin, resolved),))
            if resolved not in req_paths:
                req_paths.append(resolved)
    for p, data in tree.read_many(req_paths).items():
        cache[p] = None if data is None else data.decode("utf-8", "replace")
    result += requirements.extract(req_paths, read, known)
    # what the docs install is listed only where no other file declares it
    kept = docs.only_the_docs(result.declarations)
    return Extraction(tuple(sorted(set(kept), key=lambda d: d.sort_key)),
                      tuple(dict.fromkeys(result.skipped)),
                      tuple(sorted(set(result.files))), (),
                      tuple(sorted(set(result.includes))))
