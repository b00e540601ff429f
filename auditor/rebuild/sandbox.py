"""Network-less sandboxes for the build: bubblewrap, or ``unshare -n``; never a silent fallback.

:func:`select_sandbox` probes each candidate by running ``cat /proc/net/dev`` inside it and accepts
it only when the loopback device is the only network interface there. When none works the build
raises :class:`~auditor.errors.ToolMissing` (the stage is INCOMPLETE and says why).

- ``bwrap``: new network, PID, IPC and UTS namespaces; the host's ``/usr`` (plus the ``/etc``
  pieces the loader and compilers need; ``/etc/passwd`` and ``/etc/group`` are one-line files of
  the sandbox's own) read-only, a private ``/tmp``, the build folder read-write, the recipe's extra
  read-only folders, a cleared environment. The author's repository, the home folder and every
  other host path are invisible, so a source that names one (``.incbin "/root/.ssh/id_rsa"``)
  does not build.
- ``unshare``: new network, PID, IPC and UTS namespaces only (``--map-root-user`` when not root).
  The file system is the host's: a source can copy any file of this machine into the module. The
  build stage runs it only when the recipe says ``[sandbox] accept_host_files = true``; otherwise
  the build is not checked (INCOMPLETE) and says why.
- :class:`Unsandboxed` runs commands directly. It exists for *trusted* sources (the demo compiles
  its own upstream kernel into its "official wheel" with it); the build stage never uses it.
"""

from __future__ import annotations

import functools
import os
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import ClassVar

from auditor.errors import ToolError, ToolMissing
from auditor.gitio import Completed, run, which
from auditor.rebuild.recipe import SandboxKind

# The command every sandbox wraps: set the umask, then exec the real program.
_UMASK_SHIM = ('umask "$1" && shift && exec "$@"',)

# The compiler launcher (``ISOLATED_COMPILE``): one compiler call in PID and mount namespaces of
# its own, with an empty private /tmp as TMPDIR. nvcc names a translation unit's module id (and
# with it every anonymous namespace in ``.rodata`` and ``.nv_fatbin``) and its temporary files
# after process ids; in one sandbox for the whole build those depend on how ``ninja -j N``
# interleaves the compiles, so two builds differ by a few bytes. In a fresh PID namespace every
# compile starts at process 1 and spawns its helpers in the same order: the ids are the same in
# every build, and the private /tmp keeps parallel compiles' equal temporary names apart.
ISOLATED_COMPILE = """#!/bin/sh
# written by auditor: run one compile in its own PID and mount namespaces with an empty /tmp
exec unshare --user --map-root-user --pid --fork --kill-child --mount /bin/sh -c \\
  'mount -t tmpfs -o mode=1777 auditor-tmp /tmp && TMPDIR=/tmp && export TMPDIR && exec "$@"' \\
  sh "$@"
"""


#: what ``sandbox.compile_isolation`` says when :data:`ISOLATED_COMPILE` works
ISOLATION_DONE = "each nvcc call in its own PID and mount namespaces, with an empty /tmp"


#: the launcher's file name in a module's build folder
LAUNCHER = "auditor-compile"


def write_compile_launcher(folder: Path) -> Path:
    """Write :data:`ISOLATED_COMPILE` as ``folder/auditor-compile`` (executable); its path."""
    path = folder / LAUNCHER
    path.write_text(ISOLATED_COMPILE, encoding="utf-8")
    path.chmod(0o755)
    return path


class Sandbox(ABC):
    """Runs one command with a fixed environment in an isolated place."""

    kind: ClassVar[str]
    isolates_network: ClassVar[bool] = True
    isolates_files: ClassVar[bool] = False
    # Where a sandbox that can mounts the build's root (``run(mount=…)``), the same path for
    # every build: nvcc hashes the absolute source path into each translation unit's module id
    # (anonymous namespaces, the fat binary), so two builds in two host folders differ unless
    # the compiler sees one path. None: the sandbox runs the commands at the host paths.
    fixed_root: ClassVar[str | None] = None

    @abstractmethod
    def wrap(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
             writable: Sequence[Path], readable: Sequence[Path],
             mount: Path | None = None) -> tuple[list[str], dict[str, str]]:
        """(the outer argv, the environment to start it with)."""

    def run(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
            writable: Sequence[Path] = (), readable: Sequence[Path] = (), umask: int = 0o022,
            timeout: float | None = None, mount: Path | None = None) -> Completed[str]:
        """Run ``argv`` in ``cwd``. With ``mount`` (a host folder; only where
        :attr:`fixed_root` is set) that folder is seen, writable, at :attr:`fixed_root`, and
        ``argv``, ``cwd`` and ``env`` are already written with that path."""
        if mount is not None and self.fixed_root is None:
            raise ValueError(f"the {self.kind} sandbox cannot mount a folder at a fixed path")
        inner = ["/bin/sh", "-c", *_UMASK_SHIM, "sh", f"{umask:04o}", *argv]
        outer, outer_env = self.wrap(inner, cwd=cwd, env=env, writable=writable, readable=readable,
                                     mount=mount)
        return run(outer, cwd=mount if mount is not None else cwd, env=outer_env,
                   timeout=timeout, check=False)

    def describe(self) -> dict[str, object]:
        return {"kind": self.kind, "network": "none" if self.isolates_network else "host",
                "filesystem": "private" if self.isolates_files else "host",
                # the path every build's root is seen at (None: its own host folder)
                "build_root": self.fixed_root}


class BwrapSandbox(Sandbox):
    kind = "bwrap"
    isolates_files = True
    fixed_root = "/auditor-build"
    _ETC = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
            "/etc/nsswitch.conf")
    # the sandbox's own user database: the build runs as one user, whose name tools may ask for
    _PASSWD = "build:x:{uid}:{gid}:build:/tmp:/bin/sh\n"
    _GROUP = "build:x:{gid}:\n"

    def __init__(self, program: str = "bwrap") -> None:
        self.program = program

    def wrap(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
             writable: Sequence[Path], readable: Sequence[Path],
             mount: Path | None = None) -> tuple[list[str], dict[str, str]]:
        out = [self.program, "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
               "--unshare-cgroup-try", "--die-with-parent", "--new-session",
               "--ro-bind", "/usr", "/usr"]
        for top in ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"):
            p = Path(top)
            if p.is_symlink():
                out += ["--symlink", os.readlink(p), top]
            elif p.is_dir():
                out += ["--ro-bind", top, top]
        for e in self._ETC:
            out += ["--ro-bind-try", e, e]
        out += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp"]
        ids = {"uid": os.getuid(), "gid": os.getgid()}
        users = _own_file(cwd, "passwd", self._PASSWD.format(**ids))
        groups = _own_file(cwd, "group", self._GROUP.format(**ids))
        out += ["--ro-bind", str(users), "/etc/passwd", "--ro-bind", str(groups), "/etc/group"]
        for r in readable:
            out += ["--ro-bind", str(r), str(r)]
        if mount is not None:
            out += ["--bind", str(mount), str(self.fixed_root)]
        for w in writable:
            if mount is None or not w.is_relative_to(mount):  # inside the mount: bound with it
                out += ["--bind", str(w), str(w)]
        out += ["--chdir", str(cwd), "--clearenv"]
        for k, v in env.items():
            out += ["--setenv", k, v]
        return [*out, "--", *argv], {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}


def _own_file(cwd: Path, name: str, text: str) -> Path:
    """A small file of the sandbox's own, written once in a private folder (not the build's)."""
    folder = Path(_private_etc())
    path = folder / name
    if not path.is_file() or path.read_text() != text:
        tmp = folder / f".{name}.{os.getpid()}"
        tmp.write_text(text)
        tmp.replace(path)
    return path


@functools.cache
def _private_etc() -> str:
    import atexit
    import shutil
    import tempfile

    folder = tempfile.mkdtemp(prefix="auditor-sandbox-etc-")
    atexit.register(shutil.rmtree, folder, True)
    return folder


class UnshareSandbox(Sandbox):
    kind = "unshare"

    def __init__(self, program: str = "unshare") -> None:
        self.program = program

    def wrap(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
             writable: Sequence[Path], readable: Sequence[Path],
             mount: Path | None = None) -> tuple[list[str], dict[str, str]]:
        out = [self.program, "--net", "--ipc", "--uts", "--pid", "--fork", "--kill-child",
               "--mount-proc"]
        if os.geteuid() != 0:
            out.append("--map-root-user")
        return [*out, "--", *argv], dict(env)


class Unsandboxed(Sandbox):
    """No isolation at all: only for trusted sources (the demo's own official build)."""

    kind = "none"
    isolates_network = False

    def wrap(self, argv: Sequence[str], *, cwd: Path, env: Mapping[str, str],
             writable: Sequence[Path], readable: Sequence[Path],
             mount: Path | None = None) -> tuple[list[str], dict[str, str]]:
        return list(argv), dict(env)


def network_interfaces(sandbox: Sandbox, scratch: Path) -> list[str]:
    """The network interfaces visible inside ``sandbox`` (ToolError when it does not start)."""
    res = sandbox.run(["cat", "/proc/net/dev"], cwd=scratch, writable=[scratch],
                      env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"}, timeout=60)
    if res.returncode != 0:
        raise ToolError(f"{sandbox.kind} does not start here (exit {res.returncode})",
                        returncode=res.returncode, stderr=res.stderr)
    names = []
    for line in res.stdout.splitlines()[2:]:
        if ":" in line:
            names.append(line.split(":", 1)[0].strip())
    return names


def compile_isolation(sandbox: Sandbox, scratch: Path) -> str | None:
    """None when :data:`ISOLATED_COMPILE` works inside ``sandbox`` (the command it starts is
    process 1 and sees an empty /tmp), else why not (user namespaces not allowed there, no
    ``unshare``): the build then runs without it and says so."""
    scratch.mkdir(parents=True, exist_ok=True)
    launcher = write_compile_launcher(scratch)
    check = 'test "$$" = 1 && test -z "$(ls -A /tmp)" && test "$TMPDIR" = /tmp'
    res = sandbox.run([str(launcher), "/bin/sh", "-c", check], cwd=scratch, writable=[scratch],
                      env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"}, timeout=60)
    if res.returncode == 0:
        return None
    tail = (res.stderr.strip() or res.stdout.strip()).splitlines()[-1:]
    return (f"a compile in its own PID and mount namespaces fails inside {sandbox.kind} "
            f"(exit {res.returncode}" + (f": {tail[0]}" if tail else "") + ")")


@functools.lru_cache(maxsize=8)
def _probe(kind: str, scratch: str) -> str | None:
    """None when the sandbox of ``kind`` works and has no network, else why not."""
    sandbox: Sandbox = BwrapSandbox() if kind == "bwrap" else UnshareSandbox()
    program = "bwrap" if kind == "bwrap" else "unshare"
    if which(program) is None:
        return f"{program} is not installed"
    try:
        names = network_interfaces(sandbox, Path(scratch))
    except ToolError as exc:
        tail = exc.stderr.strip().splitlines()[-1:] if exc.stderr else []
        return exc.message + (f": {tail[0]}" if tail else "")
    extra = [n for n in names if n != "lo"]
    if extra:
        return f"{program} leaves network interfaces visible: {', '.join(extra)}"
    return None


def select_sandbox(kind: SandboxKind, scratch: Path) -> Sandbox:
    """The first working network-less sandbox for ``kind``; ToolMissing when there is none."""
    order = {SandboxKind.AUTO: ("bwrap", "unshare"), SandboxKind.BWRAP: ("bwrap",),
             SandboxKind.UNSHARE: ("unshare",)}[kind]
    scratch.mkdir(parents=True, exist_ok=True)
    why = []
    for candidate in order:
        problem = _probe(candidate, str(scratch))
        if problem is None:
            return BwrapSandbox() if candidate == "bwrap" else UnshareSandbox()
        why.append(f"{candidate}: {problem}")
    raise ToolMissing("no network-less build sandbox is available (" + "; ".join(why) + ")",
                      hint="install bubblewrap (apt-get install bubblewrap) or allow "
                           "`unshare -n` (root or user namespaces)")
