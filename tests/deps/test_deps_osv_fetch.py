"""``auditor osv fetch``: only the network is mocked (a local http.server serving zips built here).

The archive is checked as untrusted input (zip safety, records parse, the ecosystem present), the
sidecar records its digest and date, ``osv:<zip>`` accepts the result and notices when the zip is
replaced afterwards. OSV's own bucket is not reachable from the test machine: that failure must be
a clean exit 3 with a message, not a traceback.
"""

import io
import json
import threading
import zipfile
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from deps_osv_records import record
from typer.testing import CliRunner

from auditor.cli import app
from auditor.deps.vulns.interface import Package
from auditor.deps.vulns.osv import OsvSnapshotSource, load_snapshot

RECORDS = {
    "PYSEC-2026-0100.json": record("PYSEC-2026-0100", "uvicorn",
                                   events=[{"introduced": "0"}, {"fixed": "0.30.0"}],
                                   modified="2026-11-20T10:00:00Z"),
    "GHSA-aaaa-bbbb-cccc.json": record("GHSA-aaaa-bbbb-cccc", "fastapi",
                                       events=[{"introduced": "0"}, {"fixed": "0.100.0"}],
                                       modified="2026-11-28T09:00:00Z"),
}


def make_zip(entries: dict[str, bytes], *, link: str | None = None) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
        if link:
            info = zipfile.ZipInfo(link)
            info.external_attr = (0o120777 << 16)
            zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


GOOD = make_zip({n: json.dumps(r).encode() for n, r in RECORDS.items()})
ARCHIVES = {
    "/PyPI/all.zip": GOOD,
    "/traversal/all.zip": make_zip({"../evil.json": json.dumps(RECORDS["PYSEC-2026-0100.json"])
                                    .encode()}),
    "/link/all.zip": make_zip({"a.json": json.dumps(
        RECORDS["PYSEC-2026-0100.json"]).encode()}, link="b.json"),
    "/garbage/all.zip": b"this is not a zip file",
    "/otherecosystem/all.zip": make_zip({"GO-1.json": json.dumps(
        {"id": "GO-1", "modified": "2026-11-01T00:00:00Z",
         "affected": [{"package": {"ecosystem": "Go", "name": "x"}}]}).encode()}),
}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - the http.server API
        body = ARCHIVES.get(self.path)
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    t = threading.Thread(target=srv.serve_forever, daemon=True)
    t.start()
    yield f"http://127.0.0.1:{srv.server_address[1]}"
    srv.shutdown()


class Run:
    def __init__(self, res):
        self.exit_code, self.stdout = res.exit_code, res.stdout
        self.stderr = " ".join(res.stderr.split())  # the console wraps long lines


def fetch(*args):
    return Run(CliRunner().invoke(app, ["osv", "fetch", *args]))


def test_fetch_checks_records_and_writes_the_sidecar(server, tmp_path):
    out = tmp_path / "osv-PyPI.zip"
    res = fetch("--out", str(out), "--url", f"{server}/PyPI/all.zip")
    assert res.exit_code == 0, res.stderr
    meta = json.loads((tmp_path / "osv-PyPI.zip.meta.json").read_text())
    assert meta == json.loads(res.stdout)
    import hashlib

    assert meta["sha256"] == hashlib.sha256(GOOD).hexdigest()
    assert meta["records"] == 2 and meta["corrupt_records"] == 0
    assert meta["date"] == "2026-11-28T09:00:00Z" and meta["ecosystem"] == "PyPI"
    assert meta["snapshot_digest"] == load_snapshot(out).digest
    # osv:<zip> reads it
    rep = OsvSnapshotSource(out).check([Package("uvicorn", "0.29.0"), Package("fastapi", "0.110.0")])
    assert rep.not_checked == () and [v.id for v in rep.vulnerabilities] == ["PYSEC-2026-0100"]
    assert rep.source.digest == meta["snapshot_digest"] and rep.source.date == meta["date"]


def test_a_replaced_zip_is_not_used(server, tmp_path):
    out = tmp_path / "osv.zip"
    assert fetch("--out", str(out), "--url", f"{server}/PyPI/all.zip").exit_code == 0
    out.write_bytes(make_zip({"PYSEC-2026-0100.json": json.dumps(
        RECORDS["PYSEC-2026-0100.json"]).encode()}))
    rep = OsvSnapshotSource(out).check([Package("uvicorn", "0.29.0")])
    assert rep.vulnerabilities == () and "altered or replaced" in rep.not_checked[0]


@pytest.mark.parametrize(("path", "words"), [
    ("/traversal/all.zip", "unsafe member name"),
    ("/link/all.zip", "is a link"),
    ("/garbage/all.zip", "not a zip archive"),
    ("/otherecosystem/all.zip", "PyPI ecosystem"),
])
def test_an_unsafe_or_wrong_archive_is_refused_and_nothing_is_left(server, tmp_path, path, words):
    out = tmp_path / "osv.zip"
    res = fetch("--out", str(out), "--url", f"{server}{path}")
    assert res.exit_code == 2 and words in res.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []


def test_http_errors_and_no_route_are_exit_3(server, tmp_path):
    res = fetch("--out", str(tmp_path / "x.zip"), "--url", f"{server}/Nope/all.zip")
    assert res.exit_code == 3 and "HTTP 404" in res.stderr
    # a closed port on this machine: the network failing, cleanly
    res = fetch("--out", str(tmp_path / "x.zip"), "--url", "http://127.0.0.1:9/PyPI/all.zip")
    assert res.exit_code == 3 and "cannot download" in res.stderr
    assert not any(tmp_path.iterdir())


def test_a_bad_out_is_exit_2_before_any_download(tmp_path):
    res = fetch("--out", str(tmp_path / "missing" / "x.zip"))
    assert res.exit_code == 2 and "does not exist" in res.stderr
    res = fetch("--out", str(tmp_path))
    assert res.exit_code == 2 and "is a folder" in res.stderr


@pytest.mark.online
def test_osv_bucket(tmp_path):
    res = fetch("--out", str(tmp_path / "osv-PyPI.zip"))
    assert res.exit_code == 0, res.stderr
