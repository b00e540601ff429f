"""Untrusted files never crash an extractor: whatever they hold, the result is declarations and
not-checked lines (hypothesis feeds each parser arbitrary text)."""

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.deps.declaration import Extraction
from auditor.deps.extract import cmake, pyproject, requirements, setupcfg, setuppy, shell

ALPHABET = st.sampled_from(list("ab=<>~!.,;:#@/\\\"'()[]{}$`-_ \t\n+*0123456789")
                           + ["git+https://", "--hash=", "-r ", "-e ", "pip install ", "RUN ",
                              "FetchContent_Declare(", "GIT_TAG ", "URL ", "setup(",
                              "install_requires=", "[project]\ndependencies = [", "\\\n"])
TEXT = st.lists(ALPHABET, max_size=40).map("".join)


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(TEXT)
def test_extractors_never_crash(text):
    for fn, name in ((pyproject.extract, "pyproject.toml"), (setuppy.extract, "setup.py"),
                     (setupcfg.extract, "setup.cfg"), (cmake.extract, "CMakeLists.txt"),
                     (shell.extract, "run.sh")):
        assert isinstance(fn(name, text), Extraction)
    ex = requirements.extract(["requirements.txt"], lambda p: text, frozenset({"requirements.txt"}))
    assert isinstance(ex, Extraction)
