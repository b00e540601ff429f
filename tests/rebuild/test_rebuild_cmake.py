"""CMake modules: fully disconnected FetchContent from local folders, and no network in the sandbox.

The network test is honest about what it proves: a listener on the host's loopback that the same
CMake code reaches when run outside the sandbox (the control) receives nothing from the build.
"""

from __future__ import annotations

import socket
import subprocess
import threading
import zipfile

import pytest
from buildcase import (
    CM_C,
    CM_LISTS,
    Upstream,
    make_case,
    make_series,
    needs_cmake,
    needs_nvcc,
    recipe_text,
    run_build,
)

from auditor.model import StageStatus

pytestmark = [needs_nvcc, needs_cmake]


class Listener:
    """A TCP listener on 127.0.0.1 that counts connections and answers each with a tiny HTTP 200."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.hits = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.hits += 1
            with conn:
                conn.settimeout(2)
                try:
                    conn.recv(4096)
                    conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nhi")
                except OSError:
                    pass

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)
        self.sock.close()


@pytest.fixture
def listener():
    lst = Listener()
    yield lst
    lst.close()


def test_changed_cmake_module_is_built_disconnected_with_local_fetchcontent(upstream: Upstream,
                                                                          tmp_path):
    branch = make_series(upstream, "cmake-ok", [
        {"cmk/cm.c": CM_C + "int tiny_cm_twice(int x) { return 2 * tiny_cm(x); }\n"}])
    case = make_case(upstream, tmp_path, branch, repro=True)
    result = run_build(case)
    assert result.status is StageStatus.OK, (result.reasons, result.not_checked)
    mods = {m["name"]: m for m in result.to_json()["modules"]}
    assert mods["cm"]["action"] == "built" and mods["kern"]["action"] == "official"
    assert mods["cm"]["abi"]["added"] == ["tiny_cm_twice"] and mods["cm"]["abi"]["missing"] == []
    configure = mods["cm"]["commands"][0]
    assert "-DFETCHCONTENT_FULLY_DISCONNECTED=ON" in configure
    assert f"-DFETCHCONTENT_SOURCE_DIR_TINYDEP={upstream.deps}" in configure
    assert "--target _cm" in mods["cm"]["commands"][1]
    assert result.to_json()["reproducible"] is True
    wheel = zipfile.ZipFile(case.ctx.out_dir / result.to_json()["wheel"]["file"])
    assert result.to_json()["origins"]["tinyeng/_cm.so"]["origin"] == "built"
    assert "tinyeng/_cm.so" in wheel.namelist()


@pytest.mark.parametrize("kind", ["bwrap", "unshare"])
def test_a_build_that_reaches_for_the_network_fails_inside_the_sandbox(upstream: Upstream,
                                                                       tmp_path, listener, kind):
    from auditor.rebuild.sandbox import _probe

    problem = _probe(kind, str(tmp_path))
    if problem is not None:
        pytest.skip(f"{kind} sandbox not usable here: {problem}")
    fetch = f"""\
file(DOWNLOAD http://127.0.0.1:{listener.port}/payload.h ${{CMAKE_BINARY_DIR}}/payload.h
     STATUS st TIMEOUT 5)
list(GET st 0 code)
if(NOT code EQUAL 0)
  message(FATAL_ERROR "could not fetch the payload: ${{st}}")
endif()
"""
    # control: the very same CMake code, run on the host, reaches the listener
    probe = tmp_path / "probe.cmake"
    probe.write_text(fetch.replace("${CMAKE_BINARY_DIR}", str(tmp_path)))
    subprocess.run(["cmake", "-P", str(probe)], check=True, capture_output=True, timeout=60)
    assert listener.hits == 1
    listener.hits = 0

    branch = make_series(upstream, "cmake-net", [
        {"cmk/CMakeLists.txt": CM_LISTS.replace("include(FetchContent)", fetch
                                                + "include(FetchContent)")}])
    # (unshare shows the host's files: accepted here, this test is about the network)
    accept = "accept_host_files = true\n" if kind == "unshare" else ""
    recipe = recipe_text(upstream, extra=f'[sandbox]\nkind = "{kind}"\n{accept}')
    result = run_build(make_case(upstream, tmp_path / "case", branch, recipe=recipe))
    assert result.status is StageStatus.FAILED
    assert result.to_json()["sandbox"]["kind"] == kind
    [reason] = result.reasons
    print(reason)
    assert reason.startswith("module cm:") and "sandbox" in reason
    assert "could not fetch the payload" in reason
    assert listener.hits == 0
    assert result.to_json()["wheel"] is None


def test_a_build_that_embeds_randomness_is_not_reproducible(upstream: Upstream, tmp_path):
    lists = CM_LISTS + ('string(RANDOM LENGTH 24 nonce)\n'
                        'target_compile_definitions(_cm PRIVATE NONCE="${nonce}")\n')
    source = CM_C + 'const char* tiny_nonce(void) { return NONCE; }\n'
    branch = make_series(upstream, "cmake-random", [{"cmk/CMakeLists.txt": lists,
                                                     "cmk/cm.c": source}])
    result = run_build(make_case(upstream, tmp_path, branch, repro=True))
    assert result.to_json()["reproducible"] is False
    cm = result.to_json()["repro"]["modules"]["cm"]
    assert cm["identical"] is False and ".rodata" in cm["sections"]
    assert result.to_json()["repro"]["wheel"]["identical"] is False
    assert result.status is StageStatus.FAILED
    assert any(r.startswith("not reproducible") and ".rodata" in r for r in result.reasons)


def test_dates_in_the_source_follow_source_date_epoch(upstream: Upstream, tmp_path):
    source = CM_C + 'const char* tiny_stamp(void) { return __DATE__ " " __TIME__; }\n'
    branch = make_series(upstream, "cmake-date", [{"cmk/cm.c": source}])
    result = run_build(make_case(upstream, tmp_path, branch, repro=True))
    assert result.status is StageStatus.OK, result.reasons
    assert result.to_json()["reproducible"] is True
