"""Sealed repositories: git never reads the audited party's configuration, attributes, hooks,
replace refs or grafts.

A repository the audited party supplies can name programs for git to run (``diff.<x>.textconv``,
``filter.<x>.process``, ``diff.external``, ``core.fsmonitor``, hooks, ``gpg.program`` with
``log.showSignature``, merge drivers, ...) and can make git show other history than its objects
hold (``refs/replace/*``, ``info/grafts``, ``shallow``). auditor therefore never runs a command
that reads history inside a given repository. :func:`seal` makes a private bare repository in a
folder of auditor's own: its ``config`` is written here (no driver, no hook path, no attributes
file), it has no ``info/`` folder, no hooks and no replace refs, it reads the given repository's
objects as alternates (nothing is copied), and its refs are the given repository's refs, read
once with ``git for-each-ref`` (which reads refs and nothing it could run) with
``refs/replace/`` left out. Every later git command of the audit runs in the sealed repository.

What the given repository holds that is ignored this way (replace refs, grafts, a shallow file)
is listed in :attr:`Sealed.ignored`: the verify stage reports it. Objects are content addressed,
so the sealed view shows exactly the commits, trees and blobs the repository stores.
"""

from __future__ import annotations

import atexit
import hashlib
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from auditor.errors import InputError
from auditor.gitio import git_env, run

#: bump when the sealed repository's layout or config changes (caches key on it)
SEAL_VERSION = "1"

# auditor's own configuration of every sealed repository: nothing in it names a program
_CONFIG = """\
[core]
\trepositoryformatversion = {format_version}
\tbare = true
\tfsmonitor = false
\thooksPath = {devnull}
\tattributesFile = {devnull}
\tquotepath = off
\tlogAllRefUpdates = false
[log]
\tshowSignature = false
[gc]
\tauto = 0
[maintenance]
\tauto = false
{extensions}"""

# The git that reads a given repository's refs runs in gitio's fixed environment: no configuration
# besides the repository's own (which for-each-ref reads only for its core settings), no replace
# objects, none of the caller's GIT_* variables.


@dataclass(frozen=True)
class Ignored:
    """What the given repository holds that would change the history git shows: never used."""

    replace_refs: tuple[str, ...]  # "refs/replace/<sha> -> <sha>"
    grafts: str | None  # sha256 of info/grafts, when present and not empty
    shallow: str | None  # sha256 of the shallow file, when present and not empty

    def to_json(self) -> dict[str, Any]:
        return {"replace_refs": list(self.replace_refs), "grafts": self.grafts,
                "shallow": self.shallow}


@dataclass(frozen=True)
class Sealed:
    """A sealed view of one given repository (``origin``)."""

    origin: Path  # the repository as the spec names it
    what: str  # its spec key, "[patches] repo"
    path: Path  # the private bare repository every git command runs in
    object_dirs: tuple[str, ...]  # the alternates it reads (its origin's, then any borrowed)
    ignored: Ignored

    def state(self) -> dict[str, Any]:
        """What the sealed view's answers depend on besides refs and objects (cache keys)."""
        return {"sealed": SEAL_VERSION, "object_dirs": list(self.object_dirs),
                "ignored": self.ignored.to_json()}


_lock = threading.Lock()
_root: Path | None = None
_sealed: dict[Path, Sealed] = {}
# the sealed repositories of this process by what they were made from: sealing the same repository
# again, with the same refs, gives the same folder
_made: dict[str, Sealed] = {}


def sealed_of(path: str | os.PathLike[str]) -> Sealed | None:
    """The :class:`Sealed` whose private repository is ``path``, or None when it is not one
    (only repositories this process sealed count, never a folder that merely looks like one)."""
    with _lock:
        return _sealed.get(Path(path))


def _new_folder() -> Path:
    global _root
    with _lock:
        if _root is None or not _root.is_dir():
            _root = Path(tempfile.mkdtemp(prefix="auditor-git-"))
            atexit.register(shutil.rmtree, _root, True)
        return Path(tempfile.mkdtemp(prefix="r", dir=_root))


def _git(origin_gitdir: Path, *args: str, check: bool = True) -> str:
    # --git-dir: no discovery above the folder, no work tree
    res = run(["git", f"--git-dir={origin_gitdir}", *args], env=git_env(), check=check)
    return res.stdout


def git_dirs(repo: Path, what: str) -> tuple[Path, Path]:
    """(git dir, common dir) of a given repository, bare or with a work tree; InputError when it
    is not a repository."""
    if not repo.exists():
        raise InputError(f"{what} {repo} does not exist")
    res = run(["git", "-C", str(repo), "rev-parse", "--path-format=absolute", "--git-dir",
               "--git-common-dir"], env=git_env(), check=False)
    dirs = res.stdout.splitlines()
    if res.returncode != 0 or len(dirs) != 2:
        raise InputError(f"{what} {repo} is not a git repository")
    gitdir, common = Path(dirs[0]), Path(dirs[1])
    # A folder inside some other repository's work tree is not that repository.
    inside = Path(os.path.realpath(repo))
    if (inside != Path(os.path.realpath(gitdir))
            and inside != Path(os.path.realpath(gitdir)).parent
            and not (inside / ".git").exists()):
        raise InputError(f"{what} {repo} is not a git repository (it lies inside the work tree "
                         f"of {gitdir.parent})")
    return gitdir, common


def _digest_if_any(path: Path) -> str | None:
    try:
        data = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return None
    return hashlib.sha256(data).hexdigest() if data.strip() else None


def seal(repo: str | os.PathLike[str], what: str, *,
         borrow: Sequence[str | os.PathLike[str]] = ()) -> Sealed:
    """Make a sealed view of the repository ``repo`` (``what`` names it in errors: "[patches]
    repo"); ``borrow`` adds further object folders (upstream's, for the patches repository)."""
    origin = Path(repo)
    gitdir, common = git_dirs(origin, what)
    objects = common / "objects"
    if not objects.is_dir():
        raise InputError(f"{what} {origin} is not a git repository (no objects folder)")
    object_format = _git(gitdir, "rev-parse", "--show-object-format").strip() or "sha1"
    if object_format not in ("sha1", "sha256"):
        raise InputError(f"{what} {origin}: unknown object format {object_format!r}")
    refs_raw = _git(gitdir, "for-each-ref", "--format=%(objectname) %(refname)")
    head = _git(gitdir, "symbolic-ref", "-q", "HEAD", check=False).strip()
    head_sha = "" if head else _git(gitdir, "rev-parse", "-q", "--verify", "HEAD",
                                    check=False).strip()
    refs: list[tuple[str, str]] = []
    replaced: list[str] = []
    for line in refs_raw.splitlines():
        sha, _, name = line.partition(" ")
        if not sha or not name or "\n" in name:
            continue
        if name.startswith("refs/replace/"):
            replaced.append(f"{name} -> {sha}")
            continue
        refs.append((name, sha))
    ignored = Ignored(replace_refs=tuple(sorted(replaced)),
                      grafts=_digest_if_any(common / "info" / "grafts"),
                      shallow=_digest_if_any(common / "shallow"))
    dirs = [os.path.realpath(objects)]
    for extra in borrow:
        real = os.path.realpath(extra)
        if real not in dirs:
            dirs.append(real)
    for d in dirs:
        if "\n" in d:
            raise InputError(f"{what} {origin}: an object folder path with a newline cannot be "
                             "read as an alternate")
    made_of = hashlib.sha256("\0".join(
        [os.path.realpath(origin), what, object_format, refs_raw, head, head_sha, *dirs,
         repr(ignored)]).encode("utf-8", "surrogateescape")).hexdigest()
    with _lock:
        known = _made.get(made_of)
    if known is not None and (known.path / "packed-refs").is_file():
        return known
    path = _new_folder()
    _write_repo(path, object_format, refs, head or None, head_sha or None, dirs)
    sealed = Sealed(origin=origin, what=what, path=path, object_dirs=tuple(dirs), ignored=ignored)
    with _lock:
        _sealed[path] = sealed
        _made[made_of] = sealed
    return sealed


def _write_repo(path: Path, object_format: str, refs: Sequence[tuple[str, str]],
                head_ref: str | None, head_sha: str | None, object_dirs: Sequence[str]) -> None:
    extensions = (f"[extensions]\n\tobjectformat = {object_format}\n"
                  if object_format != "sha1" else "")
    (path / "config").write_text(_CONFIG.format(
        format_version=1 if extensions else 0, devnull=os.devnull, extensions=extensions))
    (path / "objects" / "info").mkdir(parents=True)
    (path / "objects" / "pack").mkdir()
    (path / "refs" / "heads").mkdir(parents=True)
    (path / "refs" / "tags").mkdir()
    (path / "objects" / "info" / "alternates").write_text("".join(f"{d}\n" for d in object_dirs))
    packed = ["# pack-refs with: sorted\n"]
    packed += [f"{sha} {name}\n" for name, sha in sorted(refs, key=lambda r: r[0].encode())]
    (path / "packed-refs").write_text("".join(packed))
    if head_ref and head_ref.startswith("refs/"):
        (path / "HEAD").write_text(f"ref: {head_ref}\n")
    elif head_sha:
        (path / "HEAD").write_text(f"{head_sha}\n")
    else:
        (path / "HEAD").write_text("ref: refs/heads/main\n")
