"""Fuzzing profiles, a tally of cases tried, and Hypothesis strategies for hostile inputs.

``make test`` runs the ``ci`` profile: few examples, derandomized (the same cases every run), a few
seconds per property. ``make fuzz`` sets ``AUDITOR_FUZZ_PROFILE=fuzz``: many random examples
(``AUDITOR_FUZZ_EXAMPLES``, default 2000 per property).
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import tarfile
import zipfile
from collections import Counter
from typing import Any

from hypothesis import HealthCheck, assume, settings
from hypothesis import strategies as st

TRIED: Counter[str] = Counter()

_COMMON: dict[str, Any] = {
    "deadline": None, "database": None, "print_blob": True,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large,
                              HealthCheck.filter_too_much, HealthCheck.large_base_example]}
settings.register_profile("ci", derandomize=True, **_COMMON,
                          max_examples=int(os.environ.get("AUDITOR_FUZZ_CI_EXAMPLES", "40")))
settings.register_profile("fuzz", derandomize=False, **_COMMON,
                          max_examples=int(os.environ.get("AUDITOR_FUZZ_EXAMPLES", "2000")))
#: the settings every property here runs with (a decorator); other tests keep their own
FUZZ = settings.get_profile(os.environ.get("AUDITOR_FUZZ_PROFILE", "ci"))

# ---------------------------------------------------------------- names and links

NAME_PARTS = st.sampled_from([
    "a", "b", "pkg", "x.py", "..", ".", "", ".git", "HEAD", "ü", "a\\b", "C:", "con", "\n",
    "\x1b[31m", "a" * 101, "b" * 160, " ", "-rf", "%s", "\u202e", "\udcff"])
NAMES = st.one_of(
    st.lists(NAME_PARTS, min_size=1, max_size=5).map("/".join),
    st.lists(NAME_PARTS, min_size=1, max_size=4).map(lambda p: "/" + "/".join(p)),
    st.text(max_size=40))
TAR_TYPES = st.sampled_from([tarfile.REGTYPE, tarfile.REGTYPE, tarfile.DIRTYPE, tarfile.SYMTYPE,
                             tarfile.LNKTYPE, tarfile.FIFOTYPE, tarfile.CHRTYPE, tarfile.BLKTYPE,
                             tarfile.CONTTYPE, b"x", b"g", b"Z"])
MEMBERS = st.lists(st.fixed_dictionaries({
    "name": NAMES, "type": TAR_TYPES, "link": NAMES,
    "data": st.binary(max_size=200) | st.just(b"\0" * 4096),
    "mode": st.integers(0, 0o7777)}), max_size=8)


def build_tar(members: list[dict[str, Any]], fmt: int) -> bytes:
    buf = io.BytesIO()
    try:
        with tarfile.open(fileobj=buf, mode="w", format=fmt) as tar:
            for m in members:
                info = tarfile.TarInfo(m["name"])
                info.type, info.mode, info.linkname = m["type"], m["mode"], m["link"]
                regular = m["type"] in (tarfile.REGTYPE, tarfile.CONTTYPE)
                info.size = len(m["data"]) if regular else 0
                tar.addfile(info, io.BytesIO(m["data"]) if regular else None)
    except (ValueError, UnicodeError, tarfile.HeaderError):
        assume(False)  # a name this tar format cannot hold: not a case
    return buf.getvalue()


def build_zip(members: list[dict[str, Any]], method: int, comment: bytes) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as zf:
        for m in members:
            name = m["name"] or "empty"
            info = zipfile.ZipInfo(name)
            info.compress_type = method
            kind = {tarfile.DIRTYPE: 0o040755, tarfile.SYMTYPE: 0o120777,
                    tarfile.FIFOTYPE: 0o010644, tarfile.CHRTYPE: 0o020644}.get(m["type"], 0o100644)
            info.external_attr = ((kind & ~0o7777) | m["mode"]) << 16
            info.create_system = 3
            data = m["link"].encode("utf-8", "surrogateescape") if m["type"] == tarfile.SYMTYPE \
                else m["data"]
            try:
                zf.writestr(info, data)
            except (ValueError, UnicodeError):
                pass
        zf.comment = comment
    return buf.getvalue()


COMPRESS = {"none": lambda b: b, "gz": gzip.compress, "xz": lzma.compress, "bz2": bz2.compress}
MAGICS = [b"\x1f\x8b\x08", b"\xfd7zXZ\x00", b"BZh9", b"\x28\xb5\x2f\xfd", b"PK\x03\x04",
          b"PK\x05\x06", b""]


@st.composite
def archives(draw: st.DrawFn) -> bytes:
    """A tar (compressed or not) or zip built from hostile members, then maybe tampered with:
    something appended or prepended (another archive: a polyglot), cut short, or a byte flipped."""
    members = draw(MEMBERS)
    kind = draw(st.sampled_from(["tar", "tar", "zip", "raw"]))
    if kind == "tar":
        fmt = draw(st.sampled_from([tarfile.USTAR_FORMAT, tarfile.GNU_FORMAT, tarfile.PAX_FORMAT]))
        data = COMPRESS[draw(st.sampled_from(list(COMPRESS)))](build_tar(members, fmt))
    elif kind == "zip":
        method = draw(st.sampled_from([zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED,
                                       zipfile.ZIP_BZIP2, zipfile.ZIP_LZMA]))
        data = build_zip(members, method, draw(st.binary(max_size=50)))
    else:
        data = draw(st.sampled_from(MAGICS)) + draw(st.binary(max_size=2000))
    tamper = draw(st.sampled_from(["none", "none", "append", "prepend", "cut", "flip",
                                   "polyglot"]))
    if tamper == "append":
        data += draw(st.binary(min_size=1, max_size=600) | st.just(b"\0" * 1024))
    elif tamper == "prepend":
        data = draw(st.binary(min_size=1, max_size=600)) + data
    elif tamper == "cut" and data:
        data = data[: draw(st.integers(0, len(data) - 1))]
    elif tamper == "flip" and data:
        i = draw(st.integers(0, len(data) - 1))
        data = data[:i] + bytes([data[i] ^ draw(st.integers(1, 255))]) + data[i + 1:]
    elif tamper == "polyglot":
        other = build_zip(draw(MEMBERS), zipfile.ZIP_STORED, b"")
        data = data + other if draw(st.booleans()) else other + data
    return data


# ---------------------------------------------------------------- TOML and JSON

SCALARS = st.one_of(st.text(max_size=30), st.integers(-(2**70), 2**70), st.booleans(),
                    st.floats(allow_nan=True), st.sampled_from(
                        [".", "x.txt", "dir", "fifo", "/dev/zero", "missing", "../..", "",
                         "a\0b", "\x1b]8;;x\x07", "0" * 40, "v1.0.0", "HEAD", "osv:dir",
                         "none", "diff", "full", "vllm", "generic", "127.0.0.1", "0.0.0.0"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
SPEC_KEYS = {
    "engine": ["profile", "version", "target"],
    "upstream": ["repo", "ref", "commit"],
    "patches": ["repo", "ref", "commits", "commits_file", "allow_merges"],
    "bundle": ["path", "strip_components", "max_bytes", "max_files", "max_file_bytes"],
    "scan": ["scope", "policy", "waivers", "timeout"],
    "deps": ["vulns", "lock", "deployed", "typosquat_distance", "osv_url"],
    "build": ["recipe", "repro"],
    "service": ["name", "user", "model", "host", "port", "devices", "extra_args",
                "api_key_file", "loopback_only", "gpu"],
    "review": ["file", "required"],
}


def toml_key(k: str) -> str:
    return k if k and all(c.isalnum() or c in "_-" for c in k) else toml_str(k)


def toml_str(s: str) -> str:
    out = []
    for c in s:
        if c in '"\\':
            out.append("\\" + c)
        elif ord(c) < 0x20 or ord(c) == 0x7F or 0xD800 <= ord(c) <= 0xDFFF:
            out.append("\\u%04x" % (ord(c) if ord(c) < 0xD800 else 0xFFFD))
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v).replace("inf", "inf").replace("nan", "nan")
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{toml_key(k)} = {toml_value(x)}" for k, x in v.items()) + "}"
    return toml_str(str(v))


@st.composite
def spec_toml(draw: st.DrawFn) -> str:
    """An audit.toml: known sections with known, unknown and ill-typed keys, or raw text."""
    if draw(st.integers(0, 9)) == 0:
        return draw(st.text(max_size=300))
    lines = []
    for section in draw(st.lists(st.sampled_from(list(SPEC_KEYS) + ["bogus"]), unique=True,
                                 max_size=len(SPEC_KEYS) + 1)):
        lines.append(f"[{section}]")
        keys = draw(st.lists(st.sampled_from(SPEC_KEYS.get(section, ["x"]) + ["unknown"]),
                             unique=True, max_size=6))
        for key in keys:
            lines.append(f"{key} = {toml_value(draw(VALUES))}")
    return "\n".join(lines) + "\n"


JSON = st.recursive(st.none() | st.booleans() | st.integers(-(2**70), 2**70)
                    | st.floats(allow_nan=False) | st.text(max_size=20),
                    lambda inner: st.lists(inner, max_size=4)
                    | st.dictionaries(st.text(max_size=10), inner, max_size=4), max_leaves=10)


def json_paths(doc: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path (keys and indexes) into a JSON document."""
    out = [prefix]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += json_paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += json_paths(v, prefix + (i,))
    return out


def replace_at(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    if isinstance(doc, dict):
        return {**doc, head: replace_at(doc[head], rest, value)}
    copy = list(doc)
    copy[head] = replace_at(doc[head], rest, value)
    return copy


# ---------------------------------------------------------------- requirement files

REQ_LINES = st.one_of(
    st.sampled_from([
        "torch==2.7.1", "numpy>=1.26", "requests", "-r other.txt", "-c constraints.txt",
        "--extra-index-url https://evil.example/simple", "-e .", "-e git+https://x/y.git#egg=y",
        "pkg @ https://x.example/p.whl", "pkg[extra]==1.0 ; python_version >= '3.9'",
        "x==1.0 --hash=sha256:" + "a" * 64, "\\", "# comment", "", "./local/dir", "-r",
        "--index-url", "https://x.example/a.tar.gz", "triton @ file:///tmp/t.whl", "===1",
        "a" * 300, "pkg==1.0 \\", "  --hash=sha256:abc", "-r ../../../etc/passwd"]),
    st.text(max_size=60))
REQUIREMENTS = st.lists(REQ_LINES, max_size=12).map("\n".join)
