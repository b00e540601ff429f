"""The Formatter interface: one audit result in, one document out.

The choice of formats and the factory live in :mod:`auditor.report.formats`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar

from auditor.model import AuditResult


class Formatter(ABC):
    #: file name inside the audit directory
    filename: ClassVar[str]

    @abstractmethod
    def render(self, audit: AuditResult) -> str:
        """The whole document as text; untrusted strings escaped for this format."""
