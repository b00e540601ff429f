from support import simple_case, write_spec

from auditor.spec import load_spec


def test_simple_case_spec_loads(tmp_path):
    case = simple_case(tmp_path)
    spec = load_spec(write_spec(tmp_path / "audit.toml", case["spec"]))
    assert spec.patches.commits == tuple(case["commits"])
    assert (case["bundle"] / "engine" / "util.py").is_file()
    assert not (case["bundle"] / ".git").exists()
