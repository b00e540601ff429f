"""A small in-process scanner for what semgrep and bandit do not catch well.

- ``obfuscation.builtin.encoded-literal``: a very long base64 or hex run (or ``\\xNN`` escapes) in
  code, scripts or configuration that decodes to something that could run — code, an executable,
  a code object or a calling pickle, directly or through compression and further encodings
  (:mod:`auditor.scan.payloads`): a payload hidden from review. A run that decodes to data (a
  curve constant, an image, a key, a table) is only compared or parsed: no claim.
- ``prompt-logging.builtin.request-logger-on``: the engine profile's request-logging switches
  (``--enable-log-requests``, ``VLLM_LOGGING_LEVEL=DEBUG`` ...) turned on in a launch script,
  container file, compose/YAML or other configuration.
- ``telemetry.builtin.do-not-track-weakened``: one of the profile's do-not-track variables set to
  a false value or unset.
- ``network.builtin.download-then-run``: a file downloaded and later run with no digest check
  between, in scripts and every shell reading (:mod:`auditor.scan.fetchrun`).
- ``process-exec.builtin.pth-import``: a ``.pth`` line that starts with ``import``; the site
  module runs it at every interpreter start.
- package sources, TLS-off indexes and launch environment in configuration files semgrep does not
  parse (pip.conf, uv.toml, pyproject, condarc, requirements, env files, systemd units):
  :mod:`auditor.scan.pkgconfig`.
"""

from __future__ import annotations

import hashlib
import json
import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from auditor import __version__
from auditor.model import Category, Severity
from auditor.scan import fetchrun, payloads, pkgconfig, shellwords
from auditor.scan.interface import RawFinding, Scanner, ScannerRun, ScanTarget

RULES_VERSION = "4"
MIN_ENCODED = 200  # characters of base64/hex in one literal

_BASE64 = re.compile(r"[A-Za-z0-9+/_-]{" + str(MIN_ENCODED) + r",}={0,2}")
_HEX = re.compile(r"(?:\\x[0-9a-fA-F]{2}){" + str(MIN_ENCODED // 4) + r",}")
# files where configuration and launch switches live (besides code families)
_CONFIG_SUFFIXES = (".toml", ".cfg", ".ini", ".conf", ".env", ".service", ".properties",
                    ".mk", ".pth")
_CONFIG_NAMES = ("makefile", "procfile", ".env", "supervisord.conf")
_LAUNCH_FAMILIES = ("bash", "dockerfile", "yaml", "json")
_FALSY = {"0", "false", "no", "off", "none", "null"}


def _is_config(path: str) -> bool:
    name = posixpath.basename(path).lower()
    return name.endswith(_CONFIG_SUFFIXES) or name in _CONFIG_NAMES or name.startswith(".env")


def _looks_encoded(run: str) -> bool:
    """Random-looking: mixed case and digits, not a path or an identifier chain."""
    if run.count("/") > len(run) // 20 or run.count("_") + run.count("-") > len(run) // 20:
        return False
    has = (any(c.isdigit() for c in run), any(c.islower() for c in run),
           any(c.isupper() for c in run))
    if all(c in "0123456789abcdefABCDEF" for c in run):
        return True
    return all(has) and len(set(run)) >= 16


class BuiltinScanner(Scanner):
    name = "builtin"

    def __init__(self, request_logging_flags: Sequence[str] = (),
                 telemetry_env: Mapping[str, str] | None = None) -> None:
        self.flags = tuple(request_logging_flags)
        self.telemetry_env = dict(telemetry_env or {})
        # (flag, lower-case substring that must be present, pattern): the substring test
        # keeps the regexes off the lines that cannot match
        self._flag_res = [(f, f.partition("=")[0].lower(), self._flag_re(f)) for f in self.flags]
        self._tele_res = [(n, v, *self._telemetry_res(n)) for n, v in self.telemetry_env.items()]

    @staticmethod
    def _flag_re(flag: str) -> re.Pattern[str]:
        if "=" in flag:
            name, _, value = flag.partition("=")
            return re.compile(r"(?<![\w-])" + re.escape(name) + r"\b[\"'\]]*\s*[:=]\s*[\"']?"
                              + re.escape(value) + r"(?![\w-])", re.IGNORECASE)
        return re.compile(r"(?<![\w-])" + re.escape(flag) + r"(?![\w-])")

    @staticmethod
    def _telemetry_res(name: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
        n = re.escape(name)
        setting = re.compile(r"(?:(?<![\w-])" + n + r"\b[\"'\]]*\s*[:=]|"
                             r"(?:setdefault|putenv|setenv)\(\s*[\"']" + n
                             + r"[\"']\s*,)\s*[\"']?([^\s\"',;)\]}]*)")
        unsetting = re.compile(r"(?:\bunset\s+(?:-v\s+)?|\benv\s+(?:.*\s)?-u\s*|"
                               r"\.pop\(\s*[\"']|\bdel\s+os\.environ\[\s*[\"']|"
                               r"\bunsetenv\(\s*\"?)" + n + r"\b")
        return setting, unsetting

    def version(self) -> str:
        return f"{__version__}+rules{RULES_VERSION}"

    def options_key(self) -> str:
        # the checks kept in other modules are part of the rules: their code changes answers
        code = [hashlib.sha256(Path(str(m.__file__)).read_bytes()).hexdigest()
                for m in (fetchrun, shellwords, pkgconfig, payloads)]
        data = [RULES_VERSION, MIN_ENCODED, list(self.flags), sorted(self.telemetry_env.items()),
                code]
        return hashlib.sha256(json.dumps(data).encode()).hexdigest()

    def accepts(self, target: ScanTarget) -> bool:
        return (target.family is not None or _is_config(target.path)
                or pkgconfig.kind_of(target.path) is not None)

    def coverage(self, target: ScanTarget) -> str | None:
        """Its launch and telemetry switches are rules for configuration files; on code it only
        runs the language-blind long-literal check, which covers no language."""
        if target.derived:  # a reading of a file: the configuration rules read the file
            return None
        if pkgconfig.kind_of(target.path) is not None:  # package sources, launch environment
            return "builtin:config"
        return "builtin:config" if target.family is None and _is_config(target.path) else None

    def scan(self, files: Sequence[ScanTarget], workdir: Path) -> ScannerRun:
        return ScannerRun(findings={t.key: tuple(self._scan_one(t)) for t in files}, errors={})

    def _scan_one(self, t: ScanTarget) -> Iterator[RawFinding]:
        launch = t.family in _LAUNCH_FAMILIES or _is_config(t.path)
        low = t.text.lower()
        flags = [e for e in self._flag_res if e[1] in low] if launch else []
        tele = [e for e in self._tele_res if e[0] in t.text]
        kind = pkgconfig.kind_of(t.path) if not t.derived else None
        if kind is not None:  # package sources and launch environment in configuration files
            yield from pkgconfig.config_findings(kind, t.lines)
        if t.family == "bash" and not t.derived.endswith(shellwords.VIEW_SUFFIX):
            yield from fetchrun.findings(t.text)  # it reads the words as the shell does
        if t.family == "python" and t.path.lower().endswith(".pth"):
            yield from _pth_imports(t.lines)
        for n, line in enumerate(t.lines, start=1):
            if len(line) >= MIN_ENCODED:
                yield from self._encoded(line, n)
            if flags:
                yield from self._request_logging(flags, line, n)
            if tele:
                yield from self._telemetry(tele, line, n)

    def _encoded(self, line: str, n: int) -> Iterator[RawFinding]:
        if len(line) < MIN_ENCODED:
            return
        runs = [m.group() for m in _BASE64.finditer(line)] + [m.group() for m in
                                                              _HEX.finditer(line)]
        for run in runs:
            if not (run.startswith("\\x") or _looks_encoded(run.rstrip("="))):
                continue
            found = payloads.payload(run)
            if found is None:  # data: decoded, and nothing in it could run
                continue
            yield RawFinding(
                rule="obfuscation.builtin.encoded-literal", category=Category.OBFUSCATION,
                severity=Severity.HIGH, line=n, end_line=n,
                message=f"a {len(run)}-character encoded literal that decodes to something that "
                        f"could run ({found})",
                help="Decode the literal and read what it holds. Code hidden in an encoded "
                     "string is how a payload slips past review; legitimate code belongs in "
                     "plain source, data in a data file with a documented origin.")
            return

    def _request_logging(self, flags: Sequence[tuple[str, str, re.Pattern[str]]], line: str,
                         n: int) -> Iterator[RawFinding]:
        if line.lstrip().startswith(("#", "//", ";")):
            return
        low = line.lower()
        for flag, needle, rx in flags:
            if needle in low and rx.search(line):
                yield RawFinding(
                    rule="prompt-logging.builtin.request-logger-on",
                    category=Category.PROMPT_LOGGING, severity=Severity.HIGH, line=n, end_line=n,
                    message=f"the engine's request logging is switched on ({flag})",
                    help="With this switch the engine writes prompts and request contents to its "
                         "logs. Remove it from launch scripts and configuration, or confirm the "
                         "logs are treated like the prompts themselves.")
                return

    def _telemetry(self, entries: Sequence[tuple[str, str, re.Pattern[str], re.Pattern[str]]],
                   line: str, n: int) -> Iterator[RawFinding]:
        for name, good, setting, unsetting in entries:
            if name not in line:
                continue
            weakened = bool(unsetting.search(line))
            if not weakened:
                for m in setting.finditer(line):
                    value = m.group(1).lower()
                    empty = value == "" and m.group(0).rstrip("\"' ").endswith("=")
                    if value != good.lower() and (value in _FALSY or empty):
                        weakened = True
                        break
            if weakened:
                yield RawFinding(
                    rule="telemetry.builtin.do-not-track-weakened", category=Category.TELEMETRY,
                    severity=Severity.MEDIUM, line=n, end_line=n,
                    message=f"the do-not-track switch {name} is unset or set to a false value "
                            f"(expected {name}={good})",
                    help="The engine reports usage statistics unless this variable says not to. "
                         "Keep it set as the engine profile expects, and ask why the patch "
                         "changes it.")
                return


def _pth_imports(lines: Sequence[str]) -> Iterator[RawFinding]:
    """``import`` lines of a ``.pth`` file: the site module executes them at every start."""
    for n, line in enumerate(lines, start=1):
        if re.match(r"^\s*import[ \t]", line):
            yield RawFinding(
                rule="process-exec.builtin.pth-import", category=Category.PROCESS_EXEC,
                severity=Severity.HIGH, line=n, end_line=n,
                message="a .pth line that starts with `import`: Python runs it at every "
                        "interpreter start",
                help="The site module executes each .pth line that begins with `import` "
                     "whenever any Python program starts in this environment, before its own "
                     "code. Read what the line runs; a package needs no code at start-up, so "
                     "remove it or ship only path lines.")
