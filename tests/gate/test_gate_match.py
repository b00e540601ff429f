"""Series matching as git range-diff does it: patch-id first, then subject; pure data."""

from __future__ import annotations

from dataclasses import replace

from typed_results import commit_record, verify_data

from auditor.gate.match import MatchKind, SeriesEntry, counts, entries, match_series


def series(*items: tuple[str, str | None]) -> tuple[SeriesEntry, ...]:
    """(subject, patch_id) pairs; shas derive from the subject and position."""
    return tuple(SeriesEntry(i, f"{subject[:3]}{i}".ljust(40, "0"), subject, pid)
                 for i, (subject, pid) in enumerate(items, 1))


def kinds(matches) -> list[tuple[str, str | None, str | None]]:  # type: ignore[no-untyped-def]
    return [(m.kind.value, m.old.subject if m.old else None, m.new.subject if m.new else None)
            for m in matches]


def test_gate_match_unchanged_rebase() -> None:
    old = series(("a", "p1"), ("b", "p2"), ("c", "p3"))
    new = series(("a", "p1"), ("b", "p2"), ("c", "p3"))
    m = match_series(old, new)
    assert kinds(m) == [("unchanged", "a", "a"), ("unchanged", "b", "b"), ("unchanged", "c", "c")]
    assert counts(m) == {"unchanged": 3, "changed": 0, "added": 0, "dropped": 0}


def test_gate_match_changed_added_dropped() -> None:
    old = series(("a", "p1"), ("b", "p2"), ("gone", "p3"), ("d", "p4"))
    new = series(("a", "p1"), ("b", "p2-new"), ("d", "p4"), ("fresh", "p5"))
    assert kinds(match_series(old, new)) == [
        ("unchanged", "a", "a"), ("changed", "b", "b"), ("dropped", "gone", None),
        ("unchanged", "d", "d"), ("added", None, "fresh")]


def test_gate_match_patch_id_wins_over_subject_and_reorder() -> None:
    # the patch of "b" is now under a new subject, and the order changed
    old = series(("a", "p1"), ("b", "p2"))
    new = series(("b renamed", "p2"), ("a", "p1"))
    m = match_series(old, new)
    assert kinds(m) == [("unchanged", "b", "b renamed"), ("unchanged", "a", "a")]
    assert m[0].subject_changed and not m[1].subject_changed


def test_gate_match_duplicates_pair_in_order() -> None:
    old = series(("fix typo", "p1"), ("fix typo", "p2"))
    new = series(("fix typo", "p2"), ("fix typo", "q"))
    m = match_series(old, new)
    assert [(x.kind, x.old.index if x.old else None) for x in m] == [
        (MatchKind.UNCHANGED, 2), (MatchKind.CHANGED, 1)]


def test_gate_match_without_patch_ids_is_changed_not_unchanged() -> None:
    old = series(("merge", None), ("empty", None))
    new = series(("merge", None))
    assert kinds(match_series(old, new)) == [("changed", "merge", "merge"),
                                             ("dropped", "empty", None)]


def test_gate_match_empty_sides() -> None:
    assert match_series((), ()) == ()
    assert kinds(match_series((), series(("a", "p")))) == [("added", None, "a")]
    assert kinds(match_series(series(("a", "p")), ())) == [("dropped", "a", None)]


def test_gate_match_entries_from_the_verify_result() -> None:
    sha1, sha2 = "1" * 40, "2" * 40
    data = verify_data([commit_record(sha1, " one ", "p1"), commit_record(sha2, "two", None)],
                       patch_ids={sha2: "p2"})
    assert [(e.index, e.sha, e.subject, e.patch_id) for e in entries(data)] == [
        (1, sha1, "one", "p1"), (2, sha2, "two", "p2")]
    assert data.proof is not None
    listed_only = replace(data, proof=replace(data.proof, commits=()))
    assert [(e.sha, e.subject, e.patch_id) for e in entries(listed_only)] == [
        (sha1, "", None), (sha2, "", "p2")]
    assert entries(None) == () and entries(replace(data, proof=None)) == ()
