"""The semgrep rule set of ``policies/semgrep/rules``: where it is, its hash, and each rule's metadata.

Rule files are ``<category>/<language>.yaml``; every rule carries ``metadata.category`` (one of
:class:`~auditor.model.Category`), ``metadata.severity`` (one of :class:`~auditor.model.Severity`) and
``metadata.help`` (what a reviewer should check or do). Rule ids are namespaced
``<category>.<language>.<name>``, for example ``network.python.requests``.

Semgrep reports a rule as ``check_id`` prefixed with the rule file's folder relative to its working
directory (``policies.semgrep.rules.network.network.python.requests``); :func:`canonical_rule_id` maps
it back to the id written in the file. Fixtures for ``semgrep --test`` live apart, in
``policies/semgrep/fixtures`` (mirroring the rule files), so ``--config RULES_DIR`` loads rules only.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

import yaml

from auditor.errors import SpecError
from auditor.model import Category, Severity
from auditor.spec import POLICIES_DIR

SEMGREP_DIR = POLICIES_DIR / "semgrep"
RULES_DIR = SEMGREP_DIR / "rules"
FIXTURES_DIR = SEMGREP_DIR / "fixtures"
RULE_SUFFIXES = (".yaml", ".yml")
# libyaml's safe loader when PyYAML was built with it: the same safe constructors, ~10x faster
# than the pure-Python parser (22 rule files took ~0.3 s of every run)
_SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_ID_RE = re.compile(r"^[a-z][a-z0-9-]*(\.[a-z0-9][a-z0-9_-]*){2,}$")


@dataclass(frozen=True)
class RuleMeta:
    """What the scan needs to know about one rule, read from its YAML."""

    id: str
    category: Category
    severity: Severity
    message: str
    help: str
    languages: tuple[str, ...]
    file: str  # the rule file, relative to the rules folder
    paths_include: tuple[str, ...] = ()  # the rule's ``paths: include`` globs, if any
    # metadata.prefilter: what a file must contain for the rule to match at all (see
    # auditor.scan.prefilter); empty: every file of its languages
    prefilter: tuple[tuple[str, ...], ...] = ()
    taint: bool = False  # ``mode: taint``
    # metadata.prefilter-sink-group (1-based in the YAML): the prefilter group every sink match
    # spells, a taint rule's (see auditor.scan.taintviews); None: not named
    sink_group: int | None = None


def rule_files(rules_dir: Path = RULES_DIR) -> tuple[Path, ...]:
    """Every rule file under ``rules_dir``, in a stable order (posix relative path)."""
    if not rules_dir.is_dir():
        raise SpecError("the semgrep rules folder does not exist", file=str(rules_dir))
    files = [p for p in rules_dir.rglob("*") if p.is_file() and p.suffix in RULE_SUFFIXES]
    return tuple(sorted(files, key=lambda p: p.relative_to(rules_dir).as_posix()))


def ruleset_hash(rules_dir: Path = RULES_DIR) -> str:
    """sha256 over the rule files' relative paths and bytes: changes whenever any rule changes."""
    digest = hashlib.sha256()
    for path in rule_files(rules_dir):
        rel = path.relative_to(rules_dir).as_posix().encode()
        data = path.read_bytes()
        digest.update(len(rel).to_bytes(8, "big") + rel)
        digest.update(len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()


def load_rule_meta(rules_dir: Path = RULES_DIR) -> Mapping[str, RuleMeta]:
    """Rule id -> metadata for every rule; a rule file with bad metadata is a SpecError naming it."""
    return _load_cached(rules_dir.resolve(), ruleset_hash(rules_dir))


@lru_cache(maxsize=8)
def _load_cached(rules_dir: Path, _hash: str) -> Mapping[str, RuleMeta]:
    out: dict[str, RuleMeta] = {}
    for path in rule_files(rules_dir):
        rel = path.relative_to(rules_dir).as_posix()
        for meta in _parse_file(path, rel):
            if meta.id in out:
                raise SpecError(f"rule id {meta.id!r} is also defined in {out[meta.id].file}",
                                file=str(path))
            out[meta.id] = meta
    if not out:
        raise SpecError("the semgrep rules folder holds no rules", file=str(rules_dir))
    ids = sorted(out)
    for a in ids:
        for b in ids:
            if a != b and b.endswith("." + a):
                raise SpecError(f"rule id {a!r} is a suffix of {b!r}; semgrep ids would be "
                                "ambiguous", file=str(rules_dir / out[a].file))
    return MappingProxyType(out)


def _parse_file(path: Path, rel: str) -> list[RuleMeta]:
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_SafeLoader)  # noqa: S506
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise SpecError(f"cannot read the rule file: {exc}", file=str(path)) from exc
    if not isinstance(doc, dict) or not isinstance(doc.get("rules"), list) or not doc["rules"]:
        raise SpecError("a rule file must be a mapping with a non-empty 'rules' list",
                        file=str(path))
    return [_parse_rule(raw, path, rel, n) for n, raw in enumerate(doc["rules"])]


def _parse_rule(raw: Any, path: Path, rel: str, n: int) -> RuleMeta:
    def bad(what: str, rule_id: str | None = None) -> SpecError:
        return SpecError(what, file=str(path), key=rule_id or f"rules[{n}]")

    if not isinstance(raw, dict):
        raise bad("a rule must be a mapping")
    rule_id = raw.get("id")
    if not isinstance(rule_id, str) or not _ID_RE.match(rule_id):
        raise bad(f"rule id {rule_id!r} is not namespaced like 'network.python.requests'")
    meta = raw.get("metadata")
    if not isinstance(meta, dict):
        raise bad("the rule has no metadata", rule_id)
    try:
        category = Category(str(meta.get("category")))
    except ValueError:
        raise bad(f"metadata.category {meta.get('category')!r} is not one of "
                  + ", ".join(c.value for c in Category), rule_id) from None
    try:
        severity = Severity(str(meta.get("severity")))
    except ValueError:
        raise bad(f"metadata.severity {meta.get('severity')!r} is not one of "
                  + ", ".join(s.value for s in Severity), rule_id) from None
    if not rule_id.startswith(category.value + "."):
        raise bad(f"rule id must start with its category {category.value!r}", rule_id)
    help_text = meta.get("help")
    if not isinstance(help_text, str) or len(help_text.strip()) < 20:
        raise bad("metadata.help must tell a reviewer what to check (20 characters or more)",
                  rule_id)
    message = raw.get("message")
    if not isinstance(message, str) or not message.strip():
        raise bad("the rule has no message", rule_id)
    languages = raw.get("languages")
    if (not isinstance(languages, list) or not languages
            or not all(isinstance(lang, str) and lang for lang in languages)):
        raise bad("the rule has no languages list", rule_id)
    paths = raw.get("paths")
    include = paths.get("include") if isinstance(paths, dict) else None
    globs = tuple(g for g in include if isinstance(g, str)) if isinstance(include, list) else ()
    prefilter: tuple[tuple[str, ...], ...] = ()
    if "prefilter" in meta:
        from auditor.scan.prefilter import parse_groups

        groups = parse_groups(meta["prefilter"])
        if groups is None:
            raise bad("metadata.prefilter must be a list of non-empty lists of identifiers "
                      "(a+b for several) or punctuation", rule_id)
        prefilter = groups
    sink_group = _sink_group(meta, prefilter, taint=raw.get("mode") == "taint",
                             bad=lambda what: bad(what, rule_id))
    return RuleMeta(id=rule_id, category=category, severity=severity,
                    message=" ".join(message.split()), help=" ".join(help_text.split()),
                    languages=tuple(languages), file=rel, paths_include=globs,
                    prefilter=prefilter, taint=raw.get("mode") == "taint",
                    sink_group=sink_group)


def _sink_group(meta: Mapping[str, Any], prefilter: tuple[tuple[str, ...], ...], *,
                taint: bool, bad: Callable[[str], SpecError]) -> int | None:
    """``metadata.prefilter-sink-group`` as a 0-based index into ``prefilter`` (``bad`` makes the
    error that a wrong one raises)."""
    if "prefilter-sink-group" not in meta:
        return None
    n = meta["prefilter-sink-group"]
    if not taint or not prefilter:
        raise bad("metadata.prefilter-sink-group is only for a taint rule with a metadata.prefilter")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(prefilter):
        raise bad(f"metadata.prefilter-sink-group must be the number of one of the "
                  f"{len(prefilter)} prefilter groups (1 for the first)")
    return n - 1


def canonical_rule_id(check_id: str, rules: Mapping[str, RuleMeta] | None = None) -> str | None:
    """The rule id a semgrep ``check_id`` stands for (semgrep prefixes the rule file's folder)."""
    known = load_rule_meta() if rules is None else rules
    if check_id in known:
        return check_id
    best: str | None = None
    for rule_id in known:
        if check_id.endswith("." + rule_id) and (best is None or len(rule_id) > len(best)):
            best = rule_id
    return best


def combined_rules_json(rules_dir: Path = RULES_DIR) -> str | None:
    """Every rule of ``rules_dir`` in one JSON document, or None when that cannot be exact.

    Semgrep reads a folder of YAML rule files with a pure-Python YAML 1.2 parser, which costs
    ~2 s of CPU per run on this rule set; the same rules as one JSON file load in a fraction of
    that. PyYAML reads YAML 1.1, so the JSON is written only when it provably holds the data
    semgrep would read: every plain scalar means the same in YAML 1.1 and in 1.2's core schema
    (``yes``, ``0777``, ``1e5``, ``1_000``, ``<<`` and dates differ), no mapping repeats a key
    (1.2 refuses it), nothing is null (semgrep refuses nulls) and everything is plain JSON data
    (no timestamps, tags or binary). Otherwise the caller passes the folder, as before.
    """
    return _combined_cached(rules_dir.resolve(), ruleset_hash(rules_dir))


@lru_cache(maxsize=8)
def _combined_cached(rules_dir: Path, _hash: str) -> str | None:
    import json

    rules: list[Any] = []
    try:
        for path in rule_files(rules_dir):
            loader = _SafeLoader(path.read_text(encoding="utf-8"))
            try:
                node = loader.get_single_node()
                if node is None or not _same_in_yaml12(node):
                    return None
                doc = loader.construct_document(node)
            finally:
                loader.dispose()
            if not isinstance(doc, dict) or set(doc) != {"rules"} or not isinstance(
                    doc["rules"], list) or not _plain(doc):
                return None
            rules.extend(doc["rules"])
        return json.dumps({"rules": rules}, ensure_ascii=False, allow_nan=False)
    except Exception:  # noqa: BLE001 - any doubt (a YAML error, odd types): use the folder
        return None


_STR = "tag:yaml.org,2002:str"
# YAML 1.2 core schema (what semgrep's parser resolves plain scalars to), by tag
_CORE_12 = (
    ("tag:yaml.org,2002:null", re.compile(r"^(?:~|null|Null|NULL|)$")),
    ("tag:yaml.org,2002:bool", re.compile(r"^(?:true|True|TRUE|false|False|FALSE)$")),
    ("tag:yaml.org,2002:int", re.compile(r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$")),
    ("tag:yaml.org,2002:float", re.compile(
        r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
        r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$")),
)
# numbers both versions read to the same value (no leading zeros, underscores or sexagesimal)
_SAME_NUMBER = re.compile(r"^[-+]?(?:0|[1-9][0-9]*)(?:\.[0-9]+(?:[eE][-+][0-9]+)?)?$")


def _tag_12(value: str) -> str:
    return next((tag for tag, pattern in _CORE_12 if pattern.match(value)), _STR)


def _same_in_yaml12(node: yaml.Node) -> bool:
    """Whether YAML 1.2 reads ``node`` as PyYAML (YAML 1.1) did: see :func:`combined_rules_json`."""
    seen: set[int] = set()
    todo = [node]
    while todo:
        n = todo.pop()
        if id(n) in seen:  # an alias: checked once
            continue
        seen.add(id(n))
        if isinstance(n, yaml.ScalarNode):
            if not n.style and (_tag_12(n.value) != n.tag or (  # plain: None, or "" from libyaml
                    n.tag in ("tag:yaml.org,2002:int", "tag:yaml.org,2002:float")
                    and not _SAME_NUMBER.match(n.value))):
                return False
        elif isinstance(n, yaml.MappingNode):
            keys = [(k.tag, k.value) for k, _ in n.value if isinstance(k, yaml.ScalarNode)]
            if len(keys) != len(n.value) or len(set(keys)) != len(keys):
                return False  # a repeated (or non-scalar) key: YAML 1.2 refuses, PyYAML keeps one
            todo += [part for pair in n.value for part in pair]
        elif isinstance(n, yaml.SequenceNode):
            todo += n.value
    return True


def _plain(value: Any) -> bool:
    """JSON data that JSON gives back unchanged: str keys, no null, no other types."""
    if type(value) is dict:
        return all(type(k) is str and _plain(v) for k, v in value.items())
    if type(value) is list:
        return all(_plain(v) for v in value)
    return type(value) in (str, int, float, bool)
