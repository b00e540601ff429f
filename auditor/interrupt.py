"""SIGTERM treated like Ctrl-C: it raises :class:`Terminated` in the main thread, so every
``finally`` and ``with`` block runs (temporary folders, the unpacked bundle and a half-written audit
directory are removed) and child processes are killed by :mod:`subprocess` on the way out.

A second SIGTERM while that cleanup runs is ignored, so the cleanup is not cut short.
"""

from __future__ import annotations

import signal
from types import FrameType

#: the exit code of a run stopped by SIGTERM (128 + 15, as shells report it)
EXIT_TERMINATED = 128 + signal.SIGTERM
#: the exit code of a run stopped by Ctrl-C (128 + 2)
EXIT_INTERRUPTED = 128 + signal.SIGINT


class Terminated(BaseException):  # noqa: N818 - named for the signal, like KeyboardInterrupt
    """SIGTERM arrived; a BaseException, so ``except Exception`` cannot swallow it."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise Terminated()


def raise_on_sigterm() -> None:
    """Install the handler (the main thread only, as Python requires)."""
    signal.signal(signal.SIGTERM, _on_sigterm)
