"""auditor: supply-chain audit and reproducible builds for patched LLM inference engines."""

__version__ = "0.1.0"
