"""Untrusted text made inert, and secrets redacted without eating the code around them."""

from __future__ import annotations

import pytest

from auditor.textsafe import html_safe, markdown_safe, redact, terminal_safe


@pytest.mark.parametrize(("text", "secret"), [
    ('API_KEY = "sk-abcdefghijklmnopqrstuv"', "sk-abcdefghijklmnopqrstuv"),
    ("VLLM_API_KEY=abcd1234efgh5678", "abcd1234efgh5678"),
    ("vllm serve m --api-key s3cr3tvalue", "s3cr3tvalue"),
    ("token: hf_abcdefghijklmnopqrstuvwx", "hf_abcdefghijklmnopqrstuvwx"),
    ("aws AKIAABCDEFGHIJKLMNOP", "AKIAABCDEFGHIJKLMNOP"),
])
def test_secrets_are_redacted(text: str, secret: str) -> None:
    out = redact(text)
    assert secret not in out and "[REDACTED]" in out


def test_code_that_reads_a_key_stays_readable() -> None:
    assert redact('token = os.environ["HF_TOKEN"]') == 'token = os.environ["HF_TOKEN"]'


def test_control_sequences_become_visible() -> None:
    assert terminal_safe("a\x1b]8;;http://x\x07b") == "a\\x1b]8;;http://x\\x07b"
    assert "\u202e" not in terminal_safe("evil\u202etxt.py")


def test_markdown_and_html_are_inert() -> None:
    md = markdown_safe("[x](javascript:alert(1)) <script>")
    assert "](" not in md.replace("\\](", "") and "<script>" not in md
    assert html_safe("<script>alert('x')</script>") == \
        "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;"


def test_every_control_and_format_character_is_escaped_for_the_terminal() -> None:
    import unicodedata

    from auditor.textsafe import document_safe

    for code in range(0x110000):
        ch = chr(code)
        if unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp", "Cs"):
            assert terminal_safe(ch) != ch, hex(code)
            assert document_safe(ch) != ch or ch in "\n\t", hex(code)
    assert terminal_safe("z.py\n\n──── verdict: PASS ────") == \
        "z.py\\x0a\\x0a──── verdict: PASS ────"
    assert terminal_safe("a\u200bb\u2028c\ufeff") == "a\\u200bb\\u2028c\\ufeff"
    assert document_safe("line 1\n\tline 2\r") == "line 1\n\tline 2\\x0d"


def test_console_safe_redacts_escapes_and_keeps_markup_literal() -> None:
    from auditor.textsafe import console_safe

    out = console_safe("[bold red]x[/] token=ghp_u8jzPde0IgxLd6GncfBAepfJBd0Kh8oOOL8d\n")
    assert "ghp_" not in out and "\n" not in out and out.startswith("\\[bold red]")
