"""A file downloaded and then run, with no digest check between: a download-and-run in two steps.

``curl -o /tmp/i.sh URL`` then ``sh /tmp/i.sh`` (or ``ADD URL /i.sh`` then ``RUN sh /i.sh`` in a
Dockerfile, whose shell reading writes the ADD as that curl) runs whatever the server sent, as
``curl URL | sh`` does; the pipe rules do not see it because the two steps are separate commands.
:func:`findings` reads the script's commands with :mod:`auditor.scan.shellwords` (so spellings
and variables are resolved) and reports each run of a downloaded file that no ``sha256sum -c``
(or ``shasum``, ``gpg --verify``, ``cosign verify``, ``minisign``) checked after the download.

A package installed from a source other than the default index (``--index-url``/
``--extra-index-url``/``--find-links`` on a remote host, a URL, a ``git+`` repository) and then
run — by its own name, ``python -m``, or a later ``RUN`` line — is the same download-and-run,
whatever the tool is called (``network.builtin.run-fetched-tool``): the command that runs it is
what replaces the engine's files, and it is reported there.

An image pulled or run (``docker pull``/``run``/``create``, a Dockerfile's ``FROM`` as its shell
reading writes it) that no digest pins and no ``docker build -t`` of the same script made is
``dependency.builtin.image-unpinned``: reviewed, since a tag can be moved after review.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator
from dataclasses import dataclass

from auditor.model import Category, Severity
from auditor.scan import shellwords
from auditor.scan.interface import RawFinding

RULE = "network.builtin.download-then-run"
RULE_TOOL = "network.builtin.run-fetched-tool"
RULE_IMAGE = "dependency.builtin.image-unpinned"
_ENGINES = frozenset({"docker", "podman", "nerdctl"})
# ``docker run``/``create`` options that take a value (``--opt=value`` carries its own)
_RUN_VALUES = frozenset({
    "-p", "--publish", "-e", "--env", "-v", "--volume", "--name", "--gpus", "--ipc", "--network",
    "--net", "--shm-size", "-w", "--workdir", "--entrypoint", "-u", "--user", "--mount",
    "--device", "--runtime", "--restart", "--platform", "-m", "--memory", "--cpus", "--label",
    "-l", "--env-file", "--add-host", "--cap-add", "--cap-drop", "--security-opt", "--ulimit",
    "--log-driver", "--log-opt", "--hostname", "-h", "--pid", "--cgroupns", "--tmpfs",
    "--stop-signal", "--pull", "--userns", "--uts", "--group-add", "--dns", "--expose",
    "--health-cmd", "--cpuset-cpus", "--memory-swap", "--volumes-from", "--link", "-a",
    "--attach", "--cidfile", "--label-file", "--mac-address", "--ip", "--annotation"})
# the installers' own default index: installing from it is no new origin
_DEFAULT_HOSTS = frozenset({"pypi.org", "pypi.python.org", "files.pythonhosted.org"})
_SOURCE_OPTIONS = frozenset({"--index-url", "--extra-index-url", "--find-links", "-i", "-f",
                             "--index", "--default-index"})
# installer options that take a value (the value is not a package)
_VALUE_OPTIONS = frozenset({"-r", "--requirement", "-c", "--constraint", "-t", "--target",
                            "--prefix", "--root", "--python", "-p", "--platform", "--only-binary",
                            "--no-binary", "--python-version", "--implementation", "--abi",
                            "--cache-dir", "--src", "-e", "--editable", "--trusted-host",
                            "--upgrade-strategy", "--progress-bar", "--log", "--timeout",
                            "--retries", "--cert", "--client-cert", "--proxy", "-C",
                            "--config-settings", "--global-option", "--build-option"})
_SPEC_NAME = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)")
_URL = re.compile(r"^(?:https?|ftp)://", re.I)
_WRAPPERS = frozenset({"sudo", "exec", "command", "nohup", "env", "time", "nice", "-E", "--",
                       "timeout", "doas"})
_INTERPRETERS = re.compile(r"^(?:(?:ba|da|z|k|a)?sh|busybox|python[0-9.]*|perl|ruby|node|php|"
                           r"source|\.|bun|deno|pwsh|tclsh|lua)$")
_DIGEST = re.compile(r"^(?:sha(?:1|224|256|384|512)sum|shasum|b2sum|md5sum|cksum|gpg|gpgv|"
                     r"cosign|minisign|signify|openssl)$")


@dataclass(frozen=True)
class _Download:
    line: int
    path: str
    url: str
    by_index: bool = False  # a package taken from an index option (not a URL of its own)


def findings(text: str) -> Iterator[RawFinding]:
    downloads: list[_Download] = []
    tools: dict[str, _Download] = {}  # normalised package name -> where it was installed from
    reported: set[int] = set()
    built: set[str] = set()  # image tags ``docker build -t`` made from the tree
    for cmd in shellwords.parse(text):
        words = _strip(list(cmd.words))
        if not words:
            continue
        prog = posixpath.basename(words[0])
        image = _image(prog, words, built)
        if image is not None:
            yield RawFinding(
                rule=RULE_IMAGE, category=Category.DEPENDENCY, severity=Severity.MEDIUM,
                line=cmd.line, end_line=cmd.line,
                message=f"takes the image {image[:120]}, which is not built from this tree and "
                        "not pinned by a digest",
                help="A tag can be moved to another image after review, and nothing in the "
                     "audited tree says what the image holds. Pin it by its digest "
                     "(name@sha256:...) after reviewing it, or build it from the tree.")
            continue
        installed = _installed_from_elsewhere(prog, words)
        if installed:
            for name, source, by_index in installed:
                tools[name] = _Download(cmd.line, name, source, by_index)
            continue
        got_tool = _runs_tool(prog, words, tools)
        if got_tool is not None and cmd.line not in reported:
            reported.add(cmd.line)
            # from an index: the finding spans the install, so the engine judges that index
            # against upstream's own sources (auditor.scan.sources)
            yield RawFinding(
                rule=RULE_TOOL + (".package-source" if got_tool.by_index else ""),
                category=Category.NETWORK, severity=Severity.CRITICAL,
                line=got_tool.line if got_tool.by_index else cmd.line,
                end_line=max(cmd.line, got_tool.line),
                message=f"runs {got_tool.path} (line {cmd.line}), installed from "
                        f"{got_tool.url[:120]} (line {got_tool.line}): what that source serves "
                        "runs here",
                help="A tool taken from an index, URL or repository the engine does not use and "
                     "then run does whatever its publisher ships, including replacing the "
                     "engine's dependencies. Read what it installs; take the result from a "
                     "reviewed, hash-pinned requirement instead.")
            continue
        if _DIGEST.match(prog):
            downloads = [d for d in downloads if not _mentions(words, d.path) and not (
                {"-c", "--check", "--verify", "verify", "verify-blob"} & set(words))]
            continue
        got = _downloaded(prog, words, cmd.outputs)
        if got is not None:
            path, url = got
            downloads.append(_Download(cmd.line, path, url))
            continue
        ran = _run_target(prog, words) or _from_path(words[0], downloads)
        if ran is None:
            continue
        if "/" not in ran and not _INTERPRETERS.match(prog):
            continue
        for d in downloads:
            if _same(ran, d.path) and cmd.line not in reported:
                reported.add(cmd.line)
                yield RawFinding(
                    rule=RULE, category=Category.NETWORK, severity=Severity.CRITICAL,
                    line=cmd.line, end_line=cmd.line,
                    message=f"{ran} was downloaded from {d.url[:120]} (line {d.line}) and is run "
                            "here with no digest check in between",
                    help="Whatever the server sent at build or start time runs with the script's "
                         "rights, as with `curl | sh`. Check the file against a sha256 written in "
                         "the reviewed script (sha256sum -c, ADD --checksum) before running it, "
                         "or vendor it.")
                break


def _image(prog: str, words: list[str], built: set[str]) -> str | None:
    """The image a ``docker pull``/``run``/``create`` takes when no digest pins it and no
    ``docker build -t`` of the same script made it (tags of a build are recorded in
    ``built``)."""
    if prog not in _ENGINES:
        return None
    rest = words[1:]
    if rest[:1] in (["container"], ["image"], ["buildx"]):
        rest = rest[1:]
    if not rest:
        return None
    if rest[0] == "build":
        built.update(_option_values(rest, ("-t", "--tag")))
        return None
    if rest[0] not in ("pull", "run", "create"):
        return None
    k = 1
    while k < len(rest):
        w = rest[k]
        if w == "--":
            k += 1
            break
        if not w.startswith("-"):
            break
        k += 2 if (w in _RUN_VALUES and rest[0] != "pull") or w in ("--platform",) else 1
    if k >= len(rest):
        return None
    image = rest[k]
    if "@sha256:" in image or image in built or image.split(":", 1)[0] in built:
        return None
    return image


def _option_values(words: list[str], names: tuple[str, ...]) -> list[str]:
    out = []
    for k, w in enumerate(words):
        if w in names and k + 1 < len(words):
            out.append(words[k + 1])
        for n in names:
            if n.startswith("--") and w.startswith(n + "="):
                out.append(w[len(n) + 1:])
    return out


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _remote(value: str) -> str | None:
    """The host of a remote source that is not the default index (None: local or default)."""
    m = re.match(r"^(?:git\+)?(?:https?|ftp|ssh)://(?:[^/@\s]*@)?([^/:?#\s]+)", value, re.I)
    if m is None:
        m = re.match(r"^git@([^:/\s]+):", value)
    if m is None:
        return None
    host = m.group(1).lower()
    return None if host in _DEFAULT_HOSTS else host


def _installed_from_elsewhere(prog: str, words: list[str]) -> list[tuple[str, str, bool]]:
    """(package name, source) for each package an install command takes from a source that is
    not the default index: a remote index or find-links option, a URL or repository spec."""
    rest = words[1:]
    if re.match(r"^python[0-9.]*$", prog) and rest[:2] == ["-m", "pip"]:
        rest = rest[2:]
    elif prog in ("uv", "pipx") and rest[:1] in (["pip"], ["tool"]):
        rest = rest[1:]
    elif not re.match(r"^(?:pip[0-9.]*|pipx)$", prog):
        return []
    if not rest or rest[0] not in ("install", "run"):
        return []
    index: str | None = None
    specs: list[str] = []
    k = 1
    while k < len(rest):
        w = rest[k]
        opt, eq, val = w.partition("=")
        if opt in _SOURCE_OPTIONS:
            value = val if eq else (rest[k + 1] if k + 1 < len(rest) else "")
            k += 1 if eq else 2
            host = _remote(value)
            index = index or (f"{value} ({host})" if host else None)
            continue
        if opt in _VALUE_OPTIONS and not eq:
            k += 2
            continue
        if not w.startswith("-"):
            specs.append(w)
        k += 1
    out: list[tuple[str, str, bool]] = []
    for spec in specs:
        own = _own_source(spec)
        if own is not None:
            out.append((*own, False))
        elif index is not None and (m := _SPEC_NAME.match(spec)) and "/" not in spec:
            out.append((_norm(m.group(1)), index, True))
    return out


def _own_source(spec: str) -> tuple[str, str] | None:
    """(package name, URL) for a spec that names its own remote origin (a URL, ``git+``,
    ``name @ URL``)."""
    name, at, url = spec.partition("@")
    named = bool(at) and "://" not in name  # ``name @ URL``
    if not (_remote(spec) or (named and _remote(url.strip()))):
        return None
    egg = re.search(r"[#&]egg=([\w.-]+)", spec)
    path = re.sub(r"@[^/]*$", "", spec.split("#", 1)[0]).rstrip("/")
    base = re.sub(r"(?:\.git|-[0-9].*|\.tar\.gz|\.zip)$", "", posixpath.basename(path))
    guess = egg.group(1) if egg else (name.strip() if named else base)
    return (_norm(guess), url.strip() if named else spec) if guess else None


def _runs_tool(prog: str, words: list[str], tools: dict[str, _Download]) -> _Download | None:
    """The installed-from-elsewhere tool a command runs: by its name, or ``python -m``."""
    if not tools:
        return None
    if _norm(prog) in tools:
        return tools[_norm(prog)]
    if re.match(r"^python[0-9.]*$", prog) and "-m" in words[1:]:
        k = words.index("-m")
        if k + 1 < len(words):
            module = words[k + 1].split(".", 1)[0]
            return tools.get(_norm(module))
    if prog in ("uvx", "pipx") or (prog == "uv" and words[1:2] == ["run"]):
        args = [w for w in words[1:] if not w.startswith("-") and w not in ("run",)]
        return tools.get(_norm(args[0])) if args else None
    return None


def _strip(words: list[str]) -> list[str]:
    i = 0
    while i < len(words) and (words[i] in _WRAPPERS or re.match(r"^[A-Za-z_]\w*=", words[i])
                              or words[i] in ("if", "then", "else", "do", "!", "{", "(")):
        i += 1
    return words[i:]


def _downloaded(prog: str, words: list[str], outputs: tuple[str, ...]) -> tuple[str, str] | None:
    """(file written, URL) when the command downloads a URL to a file."""
    url = next((w for w in words[1:] if _URL.match(w)), None)
    if url is None or prog not in ("curl", "wget", "aria2c", "fetch", "http", "axel"):
        return None
    name = posixpath.basename(url.split("?", 1)[0].split("#", 1)[0].rstrip("/")) or "index.html"
    out = (_curl_output(words, name) if prog == "curl" else
           _wget_output(words, name) if prog == "wget" else
           _option(words, ("-o", "--out", "--output")))
    if out is None and outputs:
        out = outputs[-1]
    if out is None and prog in ("aria2c", "axel"):
        out = name
    if out is None or out == "-" or out.startswith("/dev/"):
        return None
    return out, url


def _option(words: list[str], names: tuple[str, ...]) -> str | None:
    """The value of the last of the options ``names`` (``-o F``, ``--output=F``, ``-oF``)."""
    value: str | None = None
    for k, w in enumerate(words):
        for n in names:
            if w == n and k + 1 < len(words):
                value = words[k + 1]
            elif n.startswith("--") and w.startswith(n + "="):
                value = w[len(n) + 1:]
            elif not n.startswith("--") and w.startswith(n) and len(w) > len(n):
                value = w[len(n):]
    return value


def _curl_output(words: list[str], name: str) -> str | None:
    out = _option(words, ("-o", "--output"))
    for k, w in enumerate(words):  # short options run together: -fsSLo FILE, -fsSLO
        if re.match(r"^-[A-Za-z]+$", w) and len(w) > 2:
            if w.endswith("o") and k + 1 < len(words):
                out = words[k + 1]
            elif "O" in w:
                out = out or name
    if out is None and ("-O" in words or "--remote-name" in words):
        out = name
    return out


def _wget_output(words: list[str], name: str) -> str:
    out = _option(words, ("-O", "--output-document"))
    for k, w in enumerate(words):  # short options run together: -qO FILE, -qO-
        m = re.match(r"^-[A-Za-z]*O(.*)$", w)
        if m and len(w) > 2 and not w.startswith("-O"):
            out = m.group(1) or (words[k + 1] if k + 1 < len(words) else None)
    if out is not None:
        return out
    folder = _option(words, ("-P", "--directory-prefix"))
    return posixpath.join(folder, name) if folder else name


def _run_target(prog: str, words: list[str]) -> str | None:
    """The file a command runs: the program itself, or an interpreter's script argument."""
    if _INTERPRETERS.match(prog):
        for w in words[1:]:
            if w in ("-c", "-e", "-m"):
                return None
            if not w.startswith("-"):
                return w
        return None
    return words[0] if "/" in words[0] else None


def _from_path(word: str, downloads: list[_Download]) -> str | None:
    """A bare command name that a download put in a ``bin`` folder (found on PATH)."""
    for d in downloads:
        folder, name = posixpath.split(d.path)
        if name == word and folder.rstrip("/").endswith("bin"):
            return d.path
    return None


def _mentions(words: list[str], path: str) -> bool:
    return any(_same(w, path) or posixpath.basename(path) in w for w in words)


def _same(a: str, b: str) -> bool:
    a, b = a.removeprefix("./"), b.removeprefix("./")
    if a == b:
        return True
    if not a.startswith("/") or not b.startswith("/"):
        return posixpath.basename(a) == posixpath.basename(b) and bool(posixpath.basename(a))
    return posixpath.normpath(a) == posixpath.normpath(b)
