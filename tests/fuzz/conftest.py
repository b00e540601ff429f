"""Prints how many cases each fuzzing property tried (see fuzz_support for the profiles)."""

from __future__ import annotations

import pytest
from fuzz_support import TRIED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if TRIED:
        terminalreporter.write_line("fuzz cases tried: " + ", ".join(
            f"{name} {n}" for name, n in sorted(TRIED.items())) + f" (total {sum(TRIED.values())})")
