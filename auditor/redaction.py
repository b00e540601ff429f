"""Secret redaction: one set of detectors, applied to every string the tool writes or prints.

The detectors cover the well-known set of detect-secrets' plugins (written here from the token
formats the vendors publish, not copied): AWS access key ids, private key blocks, GitHub, GitLab,
Slack, Stripe, OpenAI/Anthropic, Hugging Face, PyPI, npm, SendGrid, Twilio, Mailchimp, Telegram,
Discord, Google and Azure storage keys, JWTs, passwords in URLs and Authorization headers; a
*keyword* detector (a value assigned to a name with a credential word anywhere among its parts,
``aws_secret_access_key = "…"``); and a *high-entropy* detector for random-looking values in
assignment position. Hex strings (git shas, sha256 digests, UUIDs) are never taken for secrets.

:func:`redact` works on one string; :func:`redact_tree` on a JSON-shaped value (every string in
it, keys included); :func:`dump_json` is the one serialiser every JSON document goes through.

Where text is redacted (the rule; a test in ``tests/core/test_core_redaction_boundary.py``
fails on a call anywhere else):

1. where it leaves the process: the writers (:mod:`auditor.outputs`) take only a
   :class:`Redacted` value, which :func:`redacted_text` and :func:`dump_json` make, and a
   formatter makes from a redacted audit (:func:`from_redacted`); any other string is refused
   (:class:`UnredactedError`). The console has one function,
   :func:`auditor.textsafe.console_safe`; a report, the gate and a review packet read their
   input redacted once (:func:`auditor.report.interface.redacted`,
   :func:`auditor.review.packets.redacted_plan`);
2. before an operation after which redaction could no longer find the secret: cutting text to
   a length or to some of its lines (a secret cut in half is not recognised) with :func:`cut`,
   :func:`cut_utf8` and :func:`last_lines` (rows to cut: :func:`split_redacted`), splitting it into lines shown apart
   (:func:`redacted_lines`), and hashing it into a fingerprint (:func:`fingerprint_input`).

Nowhere else: a value kept in a result, a message or an exception is redacted when it reaches
one of these.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache, partial
from typing import Any

REDACTED = "[REDACTED]"
#: what stands for a password inside a URL (brackets are not allowed in a URL's user info)
URL_REDACTED = "REDACTED"


@dataclass(frozen=True)
class TokenDetector:
    """A secret recognisable by its own shape; ``group`` is the part replaced.

    ``needles`` is a fast prefilter: the pattern runs only on text holding one of them (matched
    case-insensitively when ``fold``). Most text holds none, and a substring test is far cheaper
    than a regular-expression pass.
    """

    name: str
    pattern: re.Pattern[str]
    needles: tuple[str, ...]
    group: int = 1
    fold: bool = False
    accept: Callable[[str], bool] | None = None

    def applies(self, text: str, folded: str) -> bool:
        hay = folded if self.fold else text
        return any(n in hay for n in self.needles)


_AWS_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AROA", "AIPA", "ANPA", "ANVA",
                 "APKA")
_GITLAB_PREFIXES = ("glpat", "gldt", "glrt", "glptt", "glft", "glimt", "glagent", "gloas", "glcbt",
                    "glsoat", "glffct")

TOKEN_DETECTORS: tuple[TokenDetector, ...] = (
    TokenDetector("private-key", re.compile(
        r"(-----BEGIN[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----)"
        r"([\s\S]*?(?:-----END[A-Z0-9 ]{0,40} PRIVATE KEY(?: BLOCK)?-----|\Z))"),
        ("PRIVATE KEY",), group=2),
    TokenDetector("aws-access-key-id", re.compile(
        rf"(?<![A-Z0-9])((?:{'|'.join(_AWS_PREFIXES)})[A-Z0-9]{{16}})(?![A-Z0-9])"),
        _AWS_PREFIXES),
    TokenDetector("github-token", re.compile(
        r"\b((?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),
        ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")),
    TokenDetector("gitlab-token", re.compile(
        rf"\b((?:{'|'.join(_GITLAB_PREFIXES)})-[A-Za-z0-9_-]{{20,}}|GR1348941[A-Za-z0-9_-]{{20,}})"),
        (*(f"{p}-" for p in _GITLAB_PREFIXES), "GR1348941")),
    TokenDetector("slack-token", re.compile(r"\b(xox[abposre]-[A-Za-z0-9-]{10,})"), ("xox",)),
    TokenDetector("slack-webhook", re.compile(
        r"(hooks\.slack\.com/(?:services|workflows|triggers)/)([A-Za-z0-9+/_-]{20,})"),
        ("hooks.slack.com",), group=2),
    TokenDetector("stripe-key", re.compile(r"\b((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})"),
                  ("_live_", "_test_")),
    # patterns start with their literal where they can (the regex engine then skips ahead to it)
    # and check the character before with a fixed-width look-behind after the literal
    TokenDetector("openai-key", re.compile(
        r"(sk-(?<![\w-]sk-)(?:proj-|svcacct-|admin-|ant-(?:api|admin)\d\d-)?[A-Za-z0-9_-]{20,})"),
        ("sk-",)),
    TokenDetector("huggingface-token", re.compile(r"(hf_(?<!\whf_)[A-Za-z0-9]{20,})\b"),
                  ("hf_",)),
    TokenDetector("huggingface-org-token", re.compile(r"(api_org_(?<!\wapi_org_)[A-Za-z0-9]{20,})\b"),
                  ("api_org_",)),
    TokenDetector("pypi-token", re.compile(r"\b(pypi-AgE[A-Za-z0-9_-]{40,})"), ("pypi-AgE",)),
    TokenDetector("npm-token", re.compile(r"\b(npm_[A-Za-z0-9]{36})\b"), ("npm_",)),
    TokenDetector("sendgrid-key", re.compile(
        r"\b(SG\.[A-Za-z0-9_-]{16,32}\.[A-Za-z0-9_-]{16,64})"), ("SG.",)),
    TokenDetector("twilio-key", re.compile(r"([AS][CK](?<!\w..)[0-9a-f]{32})\b"), ("AC", "SK"),
                  accept=lambda s: s[:2] in ("AC", "SK")),
    TokenDetector("mailchimp-key", re.compile(r"\b([0-9a-f]{32}-us[0-9]{1,2})\b"),
                  tuple(f"-us{d}" for d in range(1, 10))),
    TokenDetector("telegram-bot-token", re.compile(r"\b([0-9]{8,10}:AA[A-Za-z0-9_-]{33})"),
                  (":AA",)),
    TokenDetector("discord-bot-token", re.compile(
        r"([MNO](?<![\w-].)[A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38})\b"),
        (".",)),
    TokenDetector("google-api-key", re.compile(r"\b(AIza[0-9A-Za-z_-]{35})"), ("AIza",)),
    TokenDetector("square-token", re.compile(r"\b(sq0(?:csp|atp)-[0-9A-Za-z_-]{22,43})"),
                  ("sq0",)),
    TokenDetector("artifactory-token", re.compile(r"\b(AKCp[A-Za-z0-9]{40,})"), ("AKCp",)),
    TokenDetector("azure-storage-key", re.compile(
        r"((?i:AccountKey|SharedAccessKey)\s*=\s*)([A-Za-z0-9+/]{40,}={0,2})"),
        ("accountkey", "sharedaccesskey"), group=2, fold=True),
    TokenDetector("jwt", re.compile(
        r"\b(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*)"), ("eyJ",)),
    TokenDetector("authorization-header", re.compile(
        r"((?i:(?:proxy-)?authorization)[\"']?\s*[:=]\s*[\"']?"
        r"(?i:bearer|basic|token|bot|digest|apikey)\s+)([A-Za-z0-9._~+/=-]{8,})"),
        ("authorization",), group=2, fold=True),
)

# ---------------------------------------------------------------- passwords in URLs

_URL_PASSWORD = re.compile(  # `scheme://user:PASSWORD@host`, found from its `://`
    r"(://[^\s:/?#@\"'<>\[\]]{1,128}:)([^\s/?#@\"'<>]{1,256})@")


def _url_password(m: re.Match[str]) -> str:
    value = m.group(2)
    if value.startswith(("$", "{", "%(")) or value in (URL_REDACTED, REDACTED):
        return m.group(0)
    return f"{m.group(1)}{URL_REDACTED}@"


# ---------------------------------------------------------------- names that hold credentials

#: a part of a name that makes it a credential's name wherever it stands (``aws_SECRET_access_key``)
STRONG_WORDS = frozenset({
    "password", "passwd", "passphrase", "passcode", "secret", "secrets", "credential",
    "credentials", "apikey", "privatekey", "secretkey", "accesskey", "clientsecret",
})
#: words that name a credential only as the name's last part (``HF_TOKEN``, ``authToken``):
#: in LLM code "token" and "auth" are mostly counts, ids and settings (``TOKEN_GEN_BUCKETS``)
WEAK_WORDS = frozenset({
    "token", "pass", "pwd", "creds", "auth", "authtoken", "accesstoken", "authorization",
    "bearer", "cookie",
})
#: two parts that name a key, as the name's last two parts (``API_KEY``, ``private-key``)
KEY_PAIRS = frozenset({
    ("api", "key"), ("access", "key"), ("private", "key"), ("account", "key"),
    ("client", "key"), ("service", "key"), ("signing", "key"), ("encryption", "key"),
    ("master", "key"), ("auth", "key"), ("license", "key"), ("app", "key"), ("shared", "key"),
    ("db", "key"), ("database", "key"), ("priv", "key"), ("ssh", "key"), ("session", "key"),
})
#: a last part that makes the value something *about* the credential, not the credential
NOT_SECRET_LAST = frozenset({
    "id", "ids", "count", "counts", "len", "length", "size", "limit", "limits", "max", "min",
    "num", "number", "threshold", "thresholds", "type", "types", "kind", "name", "names",
    "path", "paths", "file", "files", "dir", "folder", "url", "uri", "endpoint", "host", "port",
    "env", "var", "variable", "header", "prefix", "suffix", "field", "fields", "index", "idx",
    "format", "pattern", "regex", "policy", "mode", "enabled", "enable", "disabled", "required",
    "timeout", "ttl", "expiry", "expires", "expiration", "at", "bytes", "budget", "rate",
    "ratio", "position", "pos", "start", "end", "offset", "mask", "location", "source",
    "provider", "scope", "scopes", "label", "template", "class", "cls", "schema", "version",
    "cache", "store", "manager", "handler", "helper", "parser", "validator", "fn", "func",
    "callback", "list", "dict", "map", "table", "column", "usage", "stats", "method",
    "methods", "strategy", "backend", "option", "options", "flag", "flags", "hint", "help",
    "description", "desc", "doc", "msg", "message", "error", "errors", "hash", "digest",
    "sha", "sha256", "checksum", "algorithm", "alg", "dim", "shape", "dtype", "mapping",
    "lookup", "config", "cfg", "settings", "set", "is", "has", "str", "repr", "placeholder",
    "example", "default", "hidden", "visible", "input", "output", "stdin", "stdout", "prompt",
    "buffer", "buffers", "bucket", "buckets", "words", "word", "chars", "width",
    "check", "command", "cmd", "script", "program", "reset",
})
#: values that only ever stand in for a secret
_PLACEHOLDER = re.compile(r"(?i)^(?:x+|\*+|\.+|-+|_+|none|null|nil|true|false|changeme|"
                          r"change[_-]?me|your[_-].*|<.*>|\{\{.*\}\}|\$.*|%\(.*|\[redacted\]|"
                          r"redacted|example|dummy|placeholder|secret|password|token|empty|"
                          r"undefined|env|str|string|bytes|int)$")

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")


@lru_cache(maxsize=8192)
def name_parts(name: str) -> tuple[str, ...]:
    """``aws_secret_access_key`` -> ``(aws, secret, access, key)``; ``authToken`` -> ``(auth, token)``."""
    out: list[str] = []
    for chunk in _NON_ALNUM.split(name):
        out += [p.lower() for p in _CAMEL.split(chunk) if p]
    return tuple(out)


@lru_cache(maxsize=8192)
def secret_name_kind(name: str) -> str | None:
    """``"strong"`` when a part of the name means a credential wherever it stands (password,
    secret, credential), ``"weak"`` when only its last part does (token, auth, ``API_KEY``);
    None otherwise, and when the last part is a qualifier (``TOKEN_THRESHOLD``, ``token_ids``,
    ``MAX_TOKENS``, ``api_key_file`` are not secrets)."""
    parts = name_parts(name)
    if not parts or parts[-1] in NOT_SECRET_LAST:
        return None
    if any(p in STRONG_WORDS for p in parts):
        return "strong"
    if parts[-1] in WEAK_WORDS or parts[-2:] in KEY_PAIRS:
        return "weak"
    return None


def is_secret_name(name: str) -> bool:
    return secret_name_kind(name) is not None


# ---------------------------------------------------------------- how a secret value looks

_HEX = re.compile(r"^(?:0x)?[0-9a-fA-F]+$")
_UUID = re.compile(r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
_DIGEST_PREFIX = re.compile(r"(?i)^(?:sha(?:1|224|256|384|512)|md5|blake2b?|sha3-\d+)[-:=]")
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*$")
_ENV_NAME = re.compile(r"^[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+$")
_VERSION = re.compile(r"^v?\d+(?:\.\d+)+(?:[.+-]?[A-Za-z0-9]+)*$")
_BASE64ISH = re.compile(r"^[A-Za-z0-9+/=_-]+$")
_SEPARATORS = frozenset("-_./+")
_LOWER_RUN = re.compile(r"[a-z]{3,}")
_WORDS = re.compile(r"^[a-z][a-z._-]*$")


def entropy(value: str) -> float:
    """Shannon entropy in bits per character."""
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def is_digest_like(value: str) -> bool:
    """Hex (git shas, sha256 digests), UUIDs and ``sha256:…`` digests: public, never redacted."""
    return bool(_HEX.match(value) or _UUID.match(value) or _DIGEST_PREFIX.match(value))


def _class_changes(value: str) -> float:
    """How often consecutive letters and digits change class (upper, lower, digit): about 0.6
    in random text, 0.2-0.3 in CamelCase names and model names."""
    kinds = [0 if c.isdigit() else 1 if c.isupper() else 2 for c in value if c.isalnum()]
    if len(kinds) < 2:
        return 0.0
    return sum(a != b for a, b in zip(kinds, kinds[1:], strict=False)) / (len(kinds) - 1)


_MANGLED = re.compile(r"_Z(?:N[KVr]*|L)?(\d+)")


def is_mangled_symbol(value: str) -> bool:
    """A C++ (Itanium ABI) mangled symbol: ``_Z``, maybe ``N``, then a name by its length
    (``_ZN3cub17CUB_200700_750_NS...``, a module's exports in a build report)."""
    m = _MANGLED.match(value)
    if m is None:
        return False
    n, start = int(m.group(1)), m.end()
    name = value[start:start + n]
    return len(name) == n > 0 and name.replace("_", "a").isalnum() and not name[0].isdigit()


def looks_random(value: str) -> bool:
    """A long base64-ish string mixing cases and digits with high entropy: not a digest, not
    words (``Meta-Llama-3-8B-Instruct``, ``Qwen2_5_VLProcessingInfo``), not a mangled C++
    symbol."""
    if len(value) < 20 or not _BASE64ISH.match(value) or is_digest_like(value):
        return False
    if is_mangled_symbol(value):
        return False
    if sum(c in _SEPARATORS for c in value) > len(value) // 10 + 1:
        return False
    if any(c in "+/" for c in value) and any(c in "-_" for c in value):
        return False  # no base64 alphabet has both: a path or a model id (`Org/Model-7B`)
    if sum(c.isdigit() for c in value) < 2 or value.isupper() or value.islower():
        return False
    if sum(len(w) for w in _LOWER_RUN.findall(value)) >= len(value) // 2:
        return False  # mostly words: random text has few runs of three lower-case letters
    return (_class_changes(value) >= 0.4
            and entropy(value) >= min(4.3, math.log2(len(value)) - 0.6))


def _is_variable(value: str) -> bool:
    """An unquoted value that names a variable or attribute (``self.token``, ``size_0_cond``,
    ``s3_secret_access_key``) or is plain lower-case words, not a literal secret."""
    if _WORDS.match(value):  # lower-case words: a rule id, a setting, prose (`secret-access.env`)
        return True
    if not _IDENTIFIER.match(value):
        return False
    parts = _NON_ALNUM.split(value)
    if len(parts) > 1:  # snake_case or dotted: a name unless a part is dense with digits
        return all(sum(c.isdigit() for c in p) <= 2 for p in parts)
    return not any(c.isdigit() for c in value)


def _plausible_value(value: str, quoted: bool, kind: str) -> bool:
    """Whether a value assigned to a credential's name can be the credential itself."""
    if REDACTED in value or value == URL_REDACTED or _PLACEHOLDER.match(value):
        return False
    if len(value) < 4 or (value.isdigit() and len(value) < 8) or len(set(value)) < 3:
        return False
    if _ENV_NAME.match(value) or _VERSION.match(value):  # a variable's name; a version
        return False
    if value.startswith(("/", "./", "../", "~/", "[", "<", "{", "%", "(")) or ":/" in value:
        return False  # a path, a URL, a special token (``[TOOL_CALLS]``, ``<s>``), a format
    if quoted:
        if any(c.isspace() for c in value) or re.fullmatch(r"[a-z_]+(?:\.[a-z_0-9]+)+", value):
            return False  # prose; a dotted name (``gen_ai.latency.time_to_first_token``)
    elif len(value) < 6 or _is_variable(value):
        return False
    if kind == "weak":  # token/auth/API_KEY: a literal with a digit, or random-looking
        return (len(value) >= 8 and any(c.isdigit() for c in value)) or looks_random(value)
    return True


# `name = value`, `name: value`, `"name": "value"`, `NAME=value`, `name := value`, `name => value`,
# `os.environ["NAME"] = value`, `name: str = value`; value quoted or a bare token ending the word
_ASSIGNMENT = re.compile(
    r"(?<![A-Za-z0-9_.\-])(?P<name>[A-Za-z_][A-Za-z0-9_.\-]{0,80}+)"
    r"(?P<close>[\"'`]?\]?)"
    r"(?P<ann>[ \t]*:[ \t]*[A-Za-z_][\w.]{0,30}(?:\[[^\]\n]{0,40}\])?(?:[ \t]*\|[ \t]*None)?)?"
    r"[ \t]*(?P<op>:=|=>|==|=|:)[ \t]*"
    r"(?:(?P<q>[\"'`])(?P<qv>[^\"'`\n]{4,400}+)(?P=q)"
    r"|(?P<bv>[A-Za-z0-9_\-./+:@~%=!#^&*]{4,400}+)(?=$|[\s;,)}\]]))",
    re.MULTILINE)
_PUBLIC_NAME_PARTS = frozenset({
    "hash", "hashes", "digest", "sha", "sha1", "sha256", "sha512", "checksum", "commit", "rev",
    "revision", "id", "uuid", "guid", "integrity", "signature", "sig", "nonce", "path", "url",
    "uri", "file", "version", "etag", "tag", "ref", "oid", "md5", "name", "model", "title", "text",
    "label", "class", "test", "image", "dir",
})


def _replace_group(m: re.Match[str], group: str | int) -> str:
    start, end = m.span(group)
    base = m.start(0)
    whole = m.group(0)
    return whole[:start - base] + REDACTED + whole[end - base:]


def _assignment(m: re.Match[str]) -> str:
    quoted = m.group("qv") is not None
    key = "qv" if quoted else "bv"
    value = m.group(key)
    if REDACTED in value or (m.group("ann") and m.group("op") != "="):
        return m.group(0)  # done already; `name: type: …` is not a Python annotation
    name = m.group("name")
    kind = secret_name_kind(name)
    if kind is not None:
        return _replace_group(m, key) if _plausible_value(value, quoted, kind) else m.group(0)
    if len(value) < 20 or any(p in _PUBLIC_NAME_PARTS for p in name_parts(name)[-1:]):
        return m.group(0)
    return _replace_group(m, key) if looks_random(value) else m.group(0)


# `--api-key VALUE`, `--password=VALUE` (`-H "Authorization: …"` is the header detector's)
_FLAG = re.compile(
    r"(?P<name>--(?<![\w-]--)[A-Za-z][A-Za-z0-9-]{1,60}+)(?:=|[ \t]+)"
    r"(?:(?P<q>[\"'])(?P<qv>[^\"'\n]{1,400}+)(?P=q)|(?P<bv>[^\s\"'\\]{1,400}+))")


def _flag(m: re.Match[str]) -> str:
    kind = secret_name_kind(m.group("name").lstrip("-"))
    key = "qv" if m.group("qv") is not None else "bv"
    value = m.group(key)
    if kind is None or value.startswith("-") or not _plausible_value(value, True, kind):
        return m.group(0)
    return _replace_group(m, key)


# ---------------------------------------------------------------- the one pass


def redact(text: str) -> str:
    """``text`` with every secret value replaced by ``[REDACTED]``; names and code around it stay
    readable (``api_key = "[REDACTED]"``). Idempotent."""
    if len(text) < 8:
        return text
    # one run redacts the same strings many times (audit.json, then each report): short ones are
    # remembered (the function is pure); long ones (file texts, diffs) are not kept alive, only
    # the digests of what redaction gave back, which (idempotent) it would give back unchanged
    # (a series' diffs are redacted when read, then again in the SBOM: ~0.1 s per MB saved)
    if len(text) <= _MEMO_MAX_CHARS:
        return _redact_short(text)
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
    if digest in _REDACTED_LONG:
        return text
    out = _redact(text)
    if len(_REDACTED_LONG) >= _MEMO_MAX_LONG:
        _REDACTED_LONG.clear()
    _REDACTED_LONG.add(digest if out == text else
                       hashlib.sha256(out.encode("utf-8", "surrogatepass")).digest())
    return out


_MEMO_MAX_CHARS = 2048
_MEMO_MAX_LONG = 8192
_REDACTED_LONG: set[bytes] = set()


@lru_cache(maxsize=32768)
def _redact_short(text: str) -> str:
    return _redact(text)


def _redact(text: str) -> str:
    out = text
    folded = text.lower()
    for d in TOKEN_DETECTORS:
        if d.applies(out, folded):
            out = d.pattern.sub(partial(_token, d=d), out)
    if "://" in out:
        out = _URL_PASSWORD.sub(_url_password, out)
    out = _ASSIGNMENT.sub(_assignment, out)
    return _FLAG.sub(_flag, out) if "--" in out else out


def _token(m: re.Match[str], d: TokenDetector) -> str:
    secret = m.group(d.group)
    if REDACTED in secret or (d.accept is not None and not d.accept(secret)):
        return m.group(0)
    return _replace_group(m, d.group)


class Redacted(str):
    """Text every secret of which was replaced: what the writers take. Made by
    :func:`redacted_text`, :func:`dump_json`, or :func:`from_redacted` for text made only of
    redacted values; anything built from it again (``+``, f-strings) is a plain ``str``."""

    __slots__ = ()


class UnredactedError(TypeError):
    """A writer was given text that did not pass redaction (a programming error, not input)."""


def redacted_text(text: str) -> Redacted:
    """``text`` redacted (once: a :class:`Redacted` value is returned as it is)."""
    return text if isinstance(text, Redacted) else Redacted(redact(text))


def from_redacted(text: str) -> Redacted:
    """``text`` marked redacted without another pass: for a document made only of redacted values
    (a formatter's rendering of a redacted audit, an escaping of redacted JSON)."""
    return text if isinstance(text, Redacted) else Redacted(text)


def require_redacted(text: object, what: str) -> Redacted:
    """``text`` when it is :class:`Redacted`; else :class:`UnredactedError` naming ``what``."""
    if not isinstance(text, Redacted):
        raise UnredactedError(f"{what}: refusing to write text that was not redacted "
                              f"({type(text).__name__}); pass it through redacted_text()")
    return text


# ---------------------------------------------------------------- before a cut or a hash


def cut(text: str, limit: int, more: str | Callable[[int], str] = "") -> str:
    """``text`` redacted, then at most ``limit`` characters of it; when cut, ``more`` follows
    (a string, or a function of how many characters were left out). Redacted first: a secret
    cut in half would no longer be recognised."""
    clean = redact(text)
    if len(clean) <= limit:
        return clean
    return clean[:limit] + (more(len(clean) - limit) if callable(more) else more)


def cut_utf8(text: str, limit: int) -> str:
    """``text`` redacted, then its first ``limit`` bytes of UTF-8 (never half a character)."""
    clean = redact(text)
    data = clean.encode("utf-8", "surrogatepass")
    if len(data) <= limit:
        return clean
    return data[:limit].decode("utf-8", errors="ignore")


def last_lines(text: str, n: int) -> list[str]:
    """The last ``n`` lines of ``text`` redacted whole (a private key whose first lines are cut
    off would not be recognised in the lines left)."""
    return redact(text).splitlines()[-n:] if n > 0 else []


def split_redacted(text: str) -> list[str]:
    """``text`` redacted whole, then split at newlines: rows to be cut one by one."""
    return redact(text).split("\n")


def redacted_lines(lines: Sequence[str]) -> list[str] | None:
    """Each line redacted on its own, for showing them apart (a cut one by one); None when that
    is not the whole text redacted (a secret spans lines, like a private key's body)."""
    texts = [redact(line) for line in lines]
    return texts if redact("\n".join(lines)) == "\n".join(texts) else None


def changes_lines(lines: Sequence[str]) -> bool:
    """Whether redacting the text of ``lines`` changes how many lines it has (a secret spanning
    lines, replaced whole): then its lines cannot be shown one by one."""
    from auditor.lines import split_lines

    return len(split_lines(redact("\n".join(lines) + "\n"))) != len(lines)


def fingerprint_input(text: str) -> str:
    """What a fingerprint hashes of ``text``: the text redacted (a hash cannot be redacted later,
    and a fingerprint should not change when only the secret in a line does)."""
    return redact(text)


def has_secret(text: str) -> bool:
    """Whether redaction would change ``text``."""
    return redact(text) != text


def redact_tree(value: Any) -> Any:
    """A JSON-shaped value with every string in it (keys too) passed through :func:`redact`."""
    if isinstance(value, str):
        return redact(value)
    if isinstance(value, dict):
        return {(redact(k) if isinstance(k, str) else k): redact_tree(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [redact_tree(v) for v in value]
    return value


def dump_json(data: Any, *, indent: int | None = 2, sort_keys: bool = False) -> Redacted:
    """The one way a JSON document leaves the tool: redacted, UTF-8 text, newline-terminated."""
    return Redacted(json.dumps(redact_tree(data), indent=indent, sort_keys=sort_keys,
                               ensure_ascii=False) + "\n")
