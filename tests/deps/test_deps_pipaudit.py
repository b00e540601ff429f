"""pip-audit as a vulnerability source, against a small OSV-compatible server on loopback.

pip-audit 2.10 takes ``--osv-url``; with ``--no-deps --disable-pip`` it neither resolves nor
downloads anything, so the only traffic is to this server (loopback is not the network).
"""

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from deps_osv_records import record
from support import GitRepo, export_tree, write_spec
from typer.testing import CliRunner

from auditor.cli import app
from auditor.deps.vulns.interface import Package
from auditor.deps.vulns.pipaudit import PipAuditSource, pip_audit_path

ADVISORIES = {
    ("uvicorn", "0.29.0"): [record("PYSEC-2026-0200", "uvicorn",
                                   events=[{"introduced": "0"}, {"fixed": "0.30.0"}])],
}

pytestmark = pytest.mark.skipif(not pip_audit_path().exists(),
                                reason="pip-audit is not installed next to this interpreter")


class _Handler(BaseHTTPRequestHandler):
    queries: list = []

    def do_POST(self):  # noqa: N802 - the http.server API
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        pkg = body["package"]["name"]
        self.queries.append((pkg, body["version"], body["package"]["ecosystem"]))
        if pkg == "broken":
            self.send_response(500)
            self.end_headers()
            return
        vulns = ADVISORIES.get((pkg, body["version"]), [])
        data = json.dumps({"vulns": vulns} if vulns else {}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def osv_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1/query"
    server.shutdown()
    server.server_close()


@pytest.fixture(autouse=True)
def _no_proxy_for_loopback(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def test_pip_audit_finds_the_vulnerable_pin_and_checks_the_rest(osv_server, tmp_path):
    src = PipAuditSource(tmp_path, online=True, osv_url=osv_server)
    rep = src.check([Package("uvicorn", "0.29.0"), Package("fastapi", "0.110.0"),
                     Package("uvicorn", "0.30.0")])  # one name twice: two runs
    assert [(v.id, v.package, v.version, v.fixed) for v in rep.vulnerabilities] == [
        ("PYSEC-2026-0200", "uvicorn", "0.29.0", ("0.30.0",))]
    assert rep.vulnerabilities[0].aliases == ("CVE-2026-0200",)
    assert sorted((p.name, p.version) for p in rep.checked) == [
        ("fastapi", "0.110.0"), ("uvicorn", "0.29.0"), ("uvicorn", "0.30.0")]
    assert rep.not_checked == ()
    assert ("uvicorn", "0.30.0", "PyPI") in _Handler.queries
    assert rep.source.location == osv_server


def test_pip_audit_reads_a_hashed_lock_itself(osv_server, tmp_path):
    lock = tmp_path / "requirements.lock"
    lock.write_text("# pip-compile --generate-hashes\n"
                    f"uvicorn==0.29.0 \\\n    --hash=sha256:{'a' * 64}\n    # via -r x.in\n"
                    f"fastapi==0.110.0 \\\n    --hash=sha256:{'b' * 64}\n")
    work = tmp_path / "work"
    rep = PipAuditSource(work, online=True, osv_url=osv_server, hashed_lock=lock).check(
        [Package("uvicorn", "0.29.0"), Package("fastapi", "0.110.0")])
    assert [(v.id, v.package, v.version) for v in rep.vulnerabilities] == [
        ("PYSEC-2026-0200", "uvicorn", "0.29.0")]
    assert rep.not_checked == ()
    assert not list(work.glob("pip-audit-requirements-*.txt"))  # no copy: the lock itself


def test_a_failing_service_is_not_checked_never_clean(osv_server, tmp_path):
    rep = PipAuditSource(tmp_path, online=True, osv_url=osv_server).check(
        [Package("broken", "1.0"), Package("fastapi", "0.110.0")])
    assert rep.vulnerabilities == () and rep.checked == ()
    assert len(rep.not_checked) == 1
    assert "pip-audit failed, not checked (broken==1.0, fastapi==0.110.0)" in rep.not_checked[0]


def test_offline_pip_audit_is_not_checked(tmp_path):
    rep = PipAuditSource(tmp_path, online=False).check([Package("a", "1.0")])
    assert "needs --online" in rep.not_checked[0]


def test_deps_stage_with_pip_audit_through_the_cli(osv_server, tmp_path):
    repo = GitRepo(tmp_path / "engine")
    repo.commit("initial", files={"requirements.txt": "fastapi==0.110.0\n"})
    repo.tag("v1.0.0")
    repo.checkout("series", new=True)
    c1 = repo.commit("serve", files={"requirements.txt": "fastapi==0.110.0\nuvicorn==0.29.0\n"},
                     author="Fork Author <fork@community.example>")
    bundle = export_tree(repo, "series", tmp_path / "bundle")
    spec = write_spec(tmp_path / "audit.toml", {
        "engine": {"profile": "generic", "version": "1.0.0"},
        "upstream": {"repo": str(repo.path), "ref": "v1.0.0"},
        "patches": {"ref": "series", "commits": [c1]},
        "bundle": {"path": str(bundle)},
        "deps": {"vulns": "pip-audit", "osv_url": osv_server},
    })
    res = CliRunner().invoke(app, ["deps", str(spec), "--json", "--online"])
    data = json.loads(res.stdout)
    assert data["status"] == "ok", res.stderr
    assert res.exit_code == 1  # findings to review, nothing unchecked
    vuln = next(f for f in data["findings"] if f["rule"] == "dependency.vulnerable")
    assert (vuln["path"], vuln["line"], vuln["commit"]) == ("requirements.txt", 2, c1)
    assert data["source"]["kind"] == "pip-audit"
    offline = CliRunner().invoke(app, ["deps", str(spec), "--json"])
    assert offline.exit_code == 3
    assert "needs --online" in "\n".join(json.loads(offline.stdout)["not_checked"])
