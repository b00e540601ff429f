"""The reviews file: untrusted input (exit 2 naming file and key), safe appends, inert notes."""

from __future__ import annotations

import hashlib
import threading
import tomllib
from pathlib import Path

import pytest

from auditor.errors import SpecError
from auditor.review.signoffs import (
    ReviewVerdict,
    SignOff,
    append_signoffs,
    load_signoffs,
)

DIGEST = hashlib.sha256(b"hunk").hexdigest()
GOOD = f'''# reviewed on the train
[[signoff]]
reviewer = "ann"
hunk = "{DIGEST[:16]}"
digest = "{DIGEST}"
verdict = "ok"
date = "2026-11-30T10:00:00Z"'''  # no newline at the end, on purpose


def _sig(reviewer: str = "ann", note: str = "", digest: str = DIGEST,
         verdict: ReviewVerdict = ReviewVerdict.OK) -> SignOff:
    return SignOff(reviewer=reviewer, hunk=digest[:16], digest=digest, verdict=verdict,
                   date="2026-11-30T11:00:00Z", path="csrc/a.cu", note=note)


def test_append_keeps_existing_bytes(tmp_path: Path) -> None:
    f = tmp_path / "reviews.toml"
    f.write_bytes(GOOD.encode())
    append_signoffs(f, "bo", [_sig("bo", "looks fine")])
    data = f.read_bytes()
    assert data.startswith(GOOD.encode())
    got = load_signoffs(f)
    assert [(s.reviewer, s.note) for s in got] == [("ann", ""), ("bo", "looks fine")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["reviews.toml"]  # the lock is removed


def test_hostile_note_round_trips_as_one_inert_value(tmp_path: Path) -> None:
    hostile = ('"\n[[signoff]]\nreviewer = "mallory"\n\x1b]8;;http://evil\x07click\x1b[2J '
               '<script>alert(1)</script> [x](javascript:alert(1)) \\u0000 \x7f \ud800')
    f = tmp_path / "reviews.toml"
    append_signoffs(f, "ann", [_sig(note=hostile)])
    got = load_signoffs(f)
    assert len(got) == 1 and got[0].reviewer == "ann"
    assert got[0].note == hostile.replace("\ud800", "\ufffd")
    from auditor.report.markdown import md
    from auditor.textsafe import html_safe, terminal_safe

    assert "\x1b" not in terminal_safe(got[0].note)
    assert "<script>" not in html_safe(got[0].note)
    rendered = md(got[0].note)
    assert "\n" not in rendered and "](javascript" not in rendered and "<script>" not in rendered


def test_concurrent_appends_lose_nothing(tmp_path: Path) -> None:
    f = tmp_path / "reviews.toml"
    digests = [hashlib.sha256(str(i).encode()).hexdigest() for i in range(40)]

    def worker(k: int) -> None:
        for d in digests[k::8]:
            append_signoffs(f, "ann", [_sig(digest=d)])

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(s.digest for s in load_signoffs(f)) == sorted(digests)


BAD = [
    ("[[signoff]]\nreviewer = 1\n", "signoff[0].reviewer"),
    (GOOD.replace('"ok"', '"fine"'), "signoff[0].verdict"),
    (GOOD.replace(f'hunk = "{DIGEST[:16]}"', 'hunk = "0000000000000000"'), "signoff[0].hunk"),
    (GOOD.replace(f'digest = "{DIGEST}"', 'digest = "abc"'), "signoff[0].digest"),
    (GOOD + '\ncolour = "red"\n', "signoff[0].colour"),
    (GOOD.replace('"2026-11-30T10:00:00Z"', '"yesterday"'), "signoff[0].date"),
    (GOOD.replace('reviewer = "ann"', 'reviewer = "a b"'), "signoff[0].reviewer"),
    ('title = "x"\n', "title"),
    ("signoff = 3\n", "signoff"),
    ("[[signoff]\n", None),
]


@pytest.mark.parametrize(("text", "key"), BAD)
def test_bad_reviews_file_names_file_and_key(tmp_path: Path, text: str, key: str | None) -> None:
    f = tmp_path / "reviews.toml"
    f.write_text(text)
    with pytest.raises(SpecError) as exc:
        load_signoffs(f)
    assert exc.value.exit_code == 2 and exc.value.file == str(f)
    assert exc.value.key == key
    before = f.read_bytes()
    with pytest.raises(SpecError):
        append_signoffs(f, "ann", [_sig()])  # a bad file is never rewritten
    assert f.read_bytes() == before


def test_folder_of_files_one_per_reviewer(tmp_path: Path) -> None:
    folder = tmp_path / "reviews"
    folder.mkdir()
    append_signoffs(folder, "ann", [_sig("ann")])
    append_signoffs(folder, "bo", [_sig("bo")])
    assert sorted(p.name for p in folder.glob("*.toml")) == ["ann.toml", "bo.toml"]
    assert {s.reviewer for s in load_signoffs(folder)} == {"ann", "bo"}
    (folder / "cy.toml").write_text(GOOD)  # ann's sign-off in cy's file
    with pytest.raises(SpecError) as exc:
        load_signoffs(folder)
    assert exc.value.key == "signoff[0].reviewer" and "cy.toml" in exc.value.message
    assert tomllib.loads((folder / "ann.toml").read_text())["signoff"][0]["reviewer"] == "ann"
