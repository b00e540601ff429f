"""The one error hierarchy of auditor.

Every error the tool raises on purpose derives from :class:`AuditError`; the CLI catches it in one
place, prints :meth:`AuditError.diagnostics` and exits with :attr:`AuditError.exit_code`.
Exit codes (the same for every command): 0 pass, 1 policy says no, 2 usage or spec error,
3 could not check. :func:`auditor.model.exit_code_for` maps a verdict to them.
"""

from __future__ import annotations

EXIT_PASS = 0
EXIT_POLICY = 1
EXIT_USAGE = 2
EXIT_INCOMPLETE = 3


class AuditError(Exception):
    """Root of every deliberate auditor error."""

    exit_code: int = EXIT_USAGE

    def __init__(self, message: str, *, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def diagnostics(self) -> str:
        """A human explanation, one line where possible, with a hint when there is one."""
        return "\n".join(self.diagnostic_lines())

    def diagnostic_lines(self) -> list[str]:
        """The diagnostics line by line; a terminal shows each as one line (any newline inside
        one, from a path or a tool's output, is escaped there)."""
        return [self.message] + ([f"  hint: {self.hint}"] if self.hint else [])


class SpecError(AuditError):
    """The audit spec (or a file it names) is malformed: names the file and the key path."""

    def __init__(self, message: str, *, file: str | None = None, key: str | None = None,
                 hint: str | None = None) -> None:
        where = ""
        if file:
            where += file
        if key:
            where += f"{': ' if where else ''}[{key}]"
        super().__init__(f"{where}: {message}" if where else message, hint=hint)
        self.file = file
        self.key = key


class SpecErrors(SpecError):
    """Several problems in one spec, all reported in one run, each with its key path."""

    def __init__(self, problems: list[SpecError], *, file: str | None = None) -> None:
        prefix = f"{file}: " if file else ""
        super().__init__(f"{prefix}{len(problems)} problems", hint=None)
        self.file = file
        self.key = problems[0].key if problems else None
        self.problems = tuple(problems)
        self._prefix = prefix

    def diagnostic_lines(self) -> list[str]:
        out = [f"{self.message}:"]
        for p in self.problems:
            first, *rest = p.diagnostic_lines()
            out.append("  " + first.removeprefix(self._prefix))
            out += ["  " + line for line in rest]
        return out


class InputError(AuditError):
    """An input the spec points at is unusable: unsafe archive, corrupt wheel, missing commit."""


class BaselineError(AuditError):
    """A baseline audit that does not fit this audit (schema or inputs differ)."""


class ToolError(AuditError):
    """An external tool failed or is missing: what it checks stays unchecked (exit 3)."""

    exit_code = EXIT_INCOMPLETE

    def __init__(self, message: str, *, cmd: list[str] | None = None, returncode: int | None = None,
                 stderr: str = "", hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.cmd = cmd or []
        self.returncode = returncode
        self.stderr = stderr

    def diagnostic_lines(self) -> list[str]:
        return super().diagnostic_lines() + [
            f"  {line}" for line in self.stderr.strip().splitlines()[-5:]]


class ToolMissing(ToolError):
    """The tool is not installed on this machine."""




class InternalError(AuditError):
    """auditor produced something its own contract forbids (a bug): nothing is reported clean."""

    exit_code = EXIT_INCOMPLETE
