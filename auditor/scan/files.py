"""Reading bundle files for the scanners: text or binary, and which language a text file is.

A file is *binary* when it has a NUL byte near the start or a suffix of a compiled or serialised
artifact (those are the verify stage's business, not ours). Any other file must decode as UTF-8,
or it is *not checked* (never silently dropped). Languages use semgrep's names; a file recognised
only by its name or its ``#!`` line (``Dockerfile.cuda``, an extension-less shell script) or a CUDA
file is staged for semgrep under a name it recognises.
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass

from auditor.lines import split_lines as split_lines  # re-exported: scan/engine.py imports it

BINARY_SUFFIXES = frozenset({
    ".so", ".a", ".o", ".obj", ".lib", ".dll", ".dylib", ".exe", ".pyc", ".pyo", ".pyd",
    ".whl", ".egg", ".zip", ".gz", ".tgz", ".xz", ".bz2", ".zst", ".7z", ".tar", ".jar",
    ".pt", ".bin", ".safetensors", ".pkl", ".pickle", ".npy", ".npz", ".gguf", ".onnx",
    ".h5", ".ckpt", ".cubin", ".fatbin", ".png", ".jpg", ".jpeg", ".gif", ".ico", ".bmp",
    ".webp", ".pdf", ".woff", ".woff2", ".ttf", ".otf",
})

# extension -> (family, semgrep recognises this extension for the family)
_EXT_FAMILY: dict[str, str] = {
    ".py": "python", ".pyi": "python",
    # a .pth file's `import` lines run at every interpreter start (its reading: scan/derived.py)
    ".pth": "python",
    ".c": "c", ".h": "c",
    ".cc": "cpp", ".cpp": "cpp", ".cxx": "cpp", ".c++": "cpp", ".hpp": "cpp", ".hh": "cpp",
    ".hxx": "cpp", ".ipp": "cpp", ".inl": "cpp",
    ".cu": "cuda", ".cuh": "cuda",
    ".sh": "bash", ".bash": "bash",
    ".dockerfile": "dockerfile",
    ".yml": "yaml", ".yaml": "yaml",
    ".json": "json",
    ".js": "js", ".mjs": "js", ".cjs": "js", ".ts": "ts",
    ".go": "go", ".rs": "rust", ".java": "java", ".rb": "ruby", ".php": "php", ".lua": "lua",
    ".tf": "hcl",
}
# files sourced by a shell, whatever their name says (direnv's .envrc, shell start-up files)
_SHELL_NAMES = frozenset({".envrc", ".bashrc", ".bash_profile", ".bash_login", ".profile",
                          ".zshrc", ".zprofile", ".zshenv", ".kshrc", ".bash_logout"})
# extensions semgrep itself does not map (we stage such files with the canonical suffix)
_FOREIGN_EXT = frozenset({".ipp", ".inl", ".cu", ".cuh", ".pth"})
# documents and data, never a Dockerfile's variant: vLLM's docs/contributing/dockerfile/dockerfile.md
# is Markdown about the Dockerfile (Dockerfile.rocm, Dockerfile.cpu are Dockerfiles)
_TEXT_EXT = frozenset({".md", ".markdown", ".rst", ".txt", ".adoc", ".html", ".htm", ".json",
                       ".yaml", ".yml", ".toml", ".ini", ".cfg", ".csv", ".svg", ".png"})

# family -> the semgrep languages whose rules apply, and the suffix used to stage it
FAMILIES: dict[str, tuple[frozenset[str], str]] = {
    "python": (frozenset({"python"}), ".py"),
    "c": (frozenset({"c", "cpp"}), ".c"),
    "cpp": (frozenset({"cpp", "c"}), ".cpp"),
    "cuda": (frozenset({"cpp", "c"}), ".cpp"),
    "bash": (frozenset({"bash"}), ".sh"),
    "dockerfile": (frozenset({"dockerfile"}), ".dockerfile"),
    "yaml": (frozenset({"yaml"}), ".yaml"),
    "json": (frozenset({"json"}), ".json"),
    "js": (frozenset({"js"}), ".js"),
    "ts": (frozenset({"ts"}), ".ts"),
    "go": (frozenset({"go"}), ".go"),
    "rust": (frozenset({"rust"}), ".rs"),
    "java": (frozenset({"java"}), ".java"),
    "ruby": (frozenset({"ruby"}), ".rb"),
    "php": (frozenset({"php"}), ".php"),
    "lua": (frozenset({"lua"}), ".lua"),
    "hcl": (frozenset({"hcl", "terraform"}), ".tf"),
}

# rule `languages:` spellings -> our canonical semgrep names
LANGUAGE_ALIASES = {
    "py": "python", "python3": "python", "c++": "cpp", "sh": "bash", "docker": "dockerfile",
    "javascript": "js", "typescript": "ts", "golang": "go", "rb": "ruby", "terraform": "hcl",
}


def canonical_language(name: str) -> str:
    low = name.lower()
    return LANGUAGE_ALIASES.get(low, low)


def family_of(path: str, head: str) -> str | None:
    """The language family of a text file from its name, or its ``#!`` line when it has no
    known extension; None for text no language covers (Markdown, TOML, ...)."""
    name = posixpath.basename(path)
    lower = name.lower()
    suffix = posixpath.splitext(lower)[1]
    if suffix in _EXT_FAMILY:
        return _EXT_FAMILY[suffix]
    if lower in _SHELL_NAMES:
        return "bash"
    if lower in ("dockerfile", "containerfile") or (lower.startswith((
            "dockerfile.", "containerfile.")) and suffix not in _TEXT_EXT):
        return "dockerfile"
    if lower.endswith((".dockerfile", ".containerfile")):
        return "dockerfile"
    if head.startswith("#!"):
        first = head.split("\n", 1)[0]
        if "python" in first:
            return "python"
        if any(sh in first for sh in ("/sh", "bash", "dash", "zsh", "ksh", "env sh")):
            return "bash"
    return None


def staged_name(path: str, family: str | None) -> str:
    """The name to give a staged copy so semgrep parses it as its family (path kept)."""
    if family is None:
        return path
    suffix = posixpath.splitext(path.lower())[1]
    base = posixpath.basename(path)
    native = (suffix in _EXT_FAMILY and _EXT_FAMILY[suffix] == family
              and suffix not in _FOREIGN_EXT) or (family == "dockerfile" and base == "Dockerfile")
    return path if native else path + FAMILIES[family][1]


def is_binary_name(path: str) -> bool:
    return posixpath.splitext(path.lower())[1] in BINARY_SUFFIXES


@dataclass(frozen=True)
class ReadResult:
    """A file read for scanning: text, or why it is skipped (binary) or not checked."""

    path: str
    sha256: str = ""
    text: str | None = None
    family: str | None = None
    skipped: str | None = None  # binary or not a regular file: verify's business
    error: str | None = None  # could not be read or decoded: not checked


def classify(path: str, data: bytes) -> ReadResult:
    """Decide what a file's bytes are (binary, text of some family, undecodable)."""
    sha = hashlib.sha256(data).hexdigest()
    if is_binary_name(path) or b"\0" in data[:8192]:
        return ReadResult(path, sha, skipped="binary (left to the verify stage)")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return ReadResult(path, sha, error=f"not valid UTF-8 text ({exc.reason} at byte "
                                           f"{exc.start})")
    return ReadResult(path, sha, text=text, family=family_of(path, text[:256]))
