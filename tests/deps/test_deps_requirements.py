"""Requirements files: includes, constraints, hashes, markers, URLs, VCS and index options."""

from pathlib import Path

from auditor.deps.declaration import Kind
from auditor.deps.extract import extract_tree
from auditor.deps.tree import DirTree


def _tree(tmp_path: Path, files: dict[str, str]) -> DirTree:
    for rel, text in files.items():
        p = tmp_path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(text)
    return DirTree(tmp_path)


def _by_name(ex):
    return {d.name: d for d in ex.declarations}


def test_requirements_every_line_form(tmp_path):
    ex = extract_tree(_tree(tmp_path, {
        "requirements.txt": (
            "# pinned with hashes\n"
            "Fast_API==0.110.0 \\\n"
            "    --hash=sha256:aaaa \\\n"
            "    --hash=sha256:bbbb\n"
            "uvicorn[standard]>=0.29 ; python_version >= '3.10'  # trailing comment\n"
            "--index-url https://pypi.example/simple\n"
            "--extra-index-url=https://bob:s3cret@mirror.example/simple\n"
            "-f https://wheels.example/links\n"
            "--trusted-host mirror.example\n"
            "git+https://github.com/org/tool.git@v1.2#egg=tool\n"
            "helper @ https://files.example/helper-1.0.tar.gz\n"
            "-e git+https://github.com/org/editable.git@" + "c" * 40 + "#egg=editable\n"
            "-e .\n"
            "./vendor/local-1.0.whl\n"
            "-r requirements/common.txt\n"
            "-c constraints.txt\n"
        ),
        "requirements/common.txt": "numpy==1.26.4\n-r ../requirements.txt\n",
        "constraints.txt": "protobuf==4.25.3\n",
    }))
    d = _by_name(ex)
    assert d["fast-api"].pin == "0.110.0" and d["fast-api"].hash == "sha256:aaaa,sha256:bbbb"
    assert d["fast-api"].line == 2 and d["fast-api"].kind is Kind.PYPI
    assert d["uvicorn"].pin is None and d["uvicorn"].extras == ("standard",)
    assert d["uvicorn"].markers == 'python_version >= "3.10"'
    assert d["tool"].kind is Kind.VCS and d["tool"].ref == "v1.2" and not d["tool"].pinned_ref
    assert d["helper"].kind is Kind.URL and d["helper"].url.endswith("helper-1.0.tar.gz")
    assert d["editable"].kind is Kind.VCS and d["editable"].pinned_ref
    assert d["numpy"].file == "requirements/common.txt" and d["numpy"].pin == "1.26.4"
    assert d["protobuf"].group == "constraint"
    indexes = {(x.name, x.url) for x in ex.declarations if x.kind is Kind.INDEX}
    assert indexes == {("index-url", "https://pypi.example/simple"),
                       ("extra-index-url", "https://bob:***@mirror.example/simple"),
                       ("find-links", "https://wheels.example/links"),
                       ("trusted-host", "mirror.example")}
    assert "s3cret" not in repr(ex)
    assert ex.not_checked == ()  # the include cycle is read once, local paths are the tree's own
    assert set(ex.files) == {"requirements.txt", "requirements/common.txt", "constraints.txt"}


def test_requirements_includes_stay_inside_the_tree(tmp_path):
    ex = extract_tree(_tree(tmp_path / "t", {
        "requirements-dev.txt": "-r ../../etc/outside.txt\n-r missing.txt\n--weird-option x\n"
                                "not a requirement !!\n",
    }))
    text = "\n".join(ex.not_checked)
    assert "points outside the tree" in text
    assert "missing.txt" in text and "no such file" in text
    assert "unknown option '--weird-option'" in text
    assert "requirements-dev.txt:4: not a valid requirement" in text
    assert ex.declarations == ()
