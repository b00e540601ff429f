"""auditor.iri (RFC 3987 ``iri`` and ``iri-reference``) and auditor.jsonschemas (jsonschema with
those checks instead of rfc3987_syntax's): the same answers as rfc3987_syntax wherever it follows
the RFC, IPv6 hosts as Python's ipaddress reads them, and jsonschema's and cyclonedx's validators
checking the formats after :func:`auditor.jsonschemas.load` without importing rfc3987_syntax."""

from __future__ import annotations

import ipaddress
import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from auditor import iri

rfc3987_syntax = pytest.importorskip("rfc3987_syntax")  # the oracle (jsonschema's format extra)

# the shapes an SBOM holds, and the edges of each rule
CASES = [
    "https://pypi.org/simple/", "https://files.pythonhosted.org/packages/a/b/vllm-0.32.0.tar.gz",
    "git+https://github.com/vllm-project/vllm@v0.32.0#egg=vllm", "git+ssh://git@host:org/repo",
    "pkg:pypi/vllm@0.32.0", "mailto:dev@upstream.example", "urn:uuid:1234", "file:///tmp/x",
    "http://user:pw@host:8080/p?q=1#f", "http://host:/", "http://256.300.1.1/", "http://1.2.3.4/",
    "http://[v1.fe]/", "http://[v.x]/", "http://[1.2.3.4]/", "http://[]/", "http://host]/",
    "http://a b/", "http://a\tb", "http://%41%zz", "http://%4", "http://x/%e2%82%ac", "a:", ":a",
    "1a:b", "a+b-c.d:e", "-a:b", "", "#", "?", "#frag", "?q#f", "//host", "///", "../a/b", "./a:b",
    "a:b", "a/b:c", "@x", "x@y", "//u@h@x", "http://h/?q?#f/?", "http://h/#f#g", "http://h/\\",
    "http://h/\"", "http://h/<>", "http://h/{}", "http://h/|", "http://h/^", "http://h/`",
    "http://ré.example/ü?ä#ö", "http://h/\u00a0", "http://h/\u009f", "http://h/\ud7ff",
    "http://h/\ufdd0", "http://h/\ufdef", "http://h/\ufff0", "http://h/?\ue000", "http://h/#\ue000",
    "http://h/\ue000", "http://h/\uf8ff", "http://h/?\uf900", "http://h:12a/", "http://h:99999/",
    "HTTP://H/", "http:", "http:/", "http://", "http:///x", "x://h:1:2/",
]
# every character class of the grammar, BMP only (rfc3987_syntax leaves out the planes above it)
ALPHABET = ("aZ09-._~!$&'()*+,;=:@/?#%[]vF." + " \"<>\\^`{|}\t\n" + "\u00a0é\u2028\ud7ff\uf900"
            "\ufdd0\ufdf0\uffef\ufffe\ue000\uf8ff")


def oracle(term: str, value: str) -> bool:
    return bool(rfc3987_syntax.is_valid_syntax(term, value))


@pytest.mark.parametrize("value", CASES)
def test_the_shapes_an_sbom_holds_get_rfc3987_syntaxs_answers(value):
    assert iri.is_iri(value) == oracle("iri", value)
    assert iri.is_iri_reference(value) == oracle("iri_reference", value)


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet=ALPHABET, max_size=18).filter(lambda s: "[" not in s))
def test_generated_strings_get_rfc3987_syntaxs_answers(value):
    assert iri.is_iri(value) == oracle("iri", value)
    assert iri.is_iri_reference(value) == oracle("iri_reference", value)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["http://", "//", "x:"]), st.text(alphabet="0123456789abcdefABCDEF:.v",
                                                        max_size=12))
def test_bracketed_hosts_that_are_not_ipv6_get_rfc3987_syntaxs_answers(head, inside):
    # rfc3987_syntax's IPv6 rule lacks the short forms, so compare only where ipaddress says no
    value = f"{head}[{inside}]/p"
    try:
        ipaddress.IPv6Address(inside)
    except ValueError:
        assert iri.is_iri(value) == oracle("iri", value)
        assert iri.is_iri_reference(value) == oracle("iri_reference", value)


def ipv6_texts():
    numbers = st.integers(min_value=0, max_value=2**128 - 1).map(ipaddress.IPv6Address)
    return st.one_of(numbers.map(str), numbers.map(lambda a: a.exploded),
                     numbers.map(lambda a: a.exploded.upper()),
                     st.integers(0, 2**32 - 1).map(lambda n: f"::ffff:{ipaddress.IPv4Address(n)}"),
                     st.text(alphabet="0123456789abcdefABCDEF:.", max_size=45))


@settings(max_examples=800, deadline=None)
@given(ipv6_texts())
def test_ipv6_hosts_are_what_ipaddress_reads_as_ipv6(text):
    try:
        ipaddress.IPv6Address(text)
        expected = True
    except ValueError:
        expected = False
    assert bool(iri.IPV6.fullmatch(text)) == expected
    assert iri.is_iri(f"http://[{text}]:8000/v1") == expected


@pytest.mark.parametrize("value, expected", [
    ("http://h/\U0001f600", True), ("http://h/\U0001fffe", False), ("http://h/\U000e1000", True),
    ("http://h/\U000e0fff", False), ("http://h/?\U000f0000", True), ("http://h/\U000f0000", False),
    ("http://h/?\U0010fffd", True), ("http://h/?\U0010fffe", False), ("http://h/\U000dfffd", True),
])
def test_characters_beyond_the_bmp_are_the_rfcs(value, expected):
    # ucschar and iprivate reach past U+FFFF (RFC 3987 section 2.2); rfc3987_syntax stops there
    assert iri.is_iri(value) is expected


def test_values_that_are_not_strings_pass_as_json_schema_says():
    assert iri.is_iri(5) and iri.is_iri_reference(None)


def test_a_long_value_is_answered_in_linear_time():
    # no catastrophic backtracking (a quadratic answer would not end): a 200 kB user name, with
    # and without the "@" that ends it, and a path of empty segments
    assert iri.is_iri("http://" + "a:" * 100_000 + "@host")
    assert not iri.is_iri("http://" + "a:" * 100_000)
    assert iri.is_iri_reference("/" * 200_000 + "?" * 10)


LOADED = r"""
import json, sys
from auditor import jsonschemas
js = jsonschemas.load()
from cyclonedx.schema import OutputFormat, SchemaVersion
from cyclonedx.validation import make_schemabased_validator
doc = json.loads(sys.argv[1])
checker = js.FormatChecker()
out = {
    "rfc3987_syntax": "rfc3987_syntax" in sys.modules,
    "conforms": [checker.conforms(v, "iri-reference") for v in ("http://a b", "http://[::1]/")],
    "draft7": [not list(js.Draft7Validator({"format": f}, format_checker=js.Draft7Validator.FORMAT_CHECKER).iter_errors("x y")) for f in ("iri", "iri-reference")],
    "cyclonedx": [make_schemabased_validator(OutputFormat.JSON, SchemaVersion.V1_6).validate_str(json.dumps(d)) is None for d in (doc, {**doc, "metadata": {**doc["metadata"], "component": {**doc["metadata"]["component"], "externalReferences": [{"type": "vcs", "url": "http://a b"}]}}})],
}
print(json.dumps(out))
"""


def test_jsonschema_and_cyclonedx_check_iri_formats_without_rfc3987_syntax():
    doc = {"bomFormat": "CycloneDX", "specVersion": "1.6", "version": 1,
           "serialNumber": "urn:uuid:3e671687-395b-41f5-a30f-a58921a69b79",
           "metadata": {"component": {"type": "library", "name": "vllm", "bom-ref": "a",
                                      "externalReferences": [
                                          {"type": "vcs", "url": "https://github.com/x/y"}]}}}
    res = subprocess.run([sys.executable, "-c", LOADED, json.dumps(doc)], capture_output=True,
                         text=True, check=True)
    out = json.loads(res.stdout)
    assert out == {"rfc3987_syntax": False, "conforms": [False, True], "draft7": [False, False],
                   "cyclonedx": [True, False]}


def test_jsonschema_loaded_before_with_rfc3987_syntax_gets_the_same_checks():
    import jsonschema

    from auditor import jsonschemas

    assert jsonschemas.load() is jsonschema
    assert jsonschema.Draft202012Validator.FORMAT_CHECKER.checkers["iri"][0] is iri.is_iri
    assert jsonschema.FormatChecker().checkers["iri-reference"][0] is iri.is_iri_reference
