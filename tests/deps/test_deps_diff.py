"""The dependency diff: added/removed/changed, new indexes, direct URLs, unpinned fetches,
typosquats; and the edit distance behind the last."""

from hypothesis import given
from hypothesis import strategies as st

from auditor.deps.declaration import Declaration, Kind, parse_requirement
from auditor.deps.diff import classify, diff
from auditor.deps.typosquat import damerau_levenshtein, lookalikes, popular_packages

POPULAR = frozenset({"requests", "numpy", "torch"})


def reqs(*lines, file="requirements.txt"):
    return [parse_requirement(t, file, i) for i, t in enumerate(lines, 1)]


def cmake(name, url, ref=None, *, kind=Kind.CMAKE_GIT, hash=None, line=1):
    return Declaration(name=name, specifier="", pin=None, markers="", url=url, kind=kind,
                       file="CMakeLists.txt", line=line, ref=ref, hash=hash)


def rules(d):
    return sorted((i.rule, i.decl.name) for i in d.issues)


def test_damerau_levenshtein():
    assert damerau_levenshtein("requests", "requests") == 0
    assert damerau_levenshtein("requests", "reqeusts") == 1  # transposition
    assert damerau_levenshtein("requests", "request") == 1
    assert damerau_levenshtein("torch", "trorch") == 1
    assert damerau_levenshtein("ca", "abc") == 2  # true DL (restricted OSA would say 3)
    assert damerau_levenshtein("", "abc") == 3


@given(st.text("abcde-", max_size=7), st.text("abcde-", max_size=7))
def test_distance_is_symmetric_and_bounded(a, b):
    d = damerau_levenshtein(a, b)
    assert d == damerau_levenshtein(b, a)
    assert abs(len(a) - len(b)) <= d <= max(len(a), len(b))


def test_lookalikes_and_the_popular_list():
    assert "requests" in popular_packages() and "torch" in popular_packages()
    near = lookalikes("reqeusts", [("requests", "popular")], 2)
    assert [(x.resembles, x.distance) for x in near] == [("requests", 1)]
    assert lookalikes("py-torch", [("pytorch", "upstream")], 2)[0].distance == 1
    assert lookalikes("six", [("sip", "popular")], 2)  # distance 1 still counts for short names
    assert not lookalikes("abcd", [("abxy", "popular")], 2)  # short names: only distance 1


def test_added_removed_and_typosquat():
    up = reqs("numpy==1.26.4", "fastapi==0.110.0", "oldlib==1.0")
    b = reqs("numpy==1.26.4", "fastapi==0.110.0", "reqeusts==2.31.0", "fastapl==0.1",
             "requests==2.31.0")
    d = diff(up, b, typosquat_distance=2, popular=POPULAR)
    assert [x.name for x in d.added] == ["reqeusts", "fastapl", "requests"]
    assert [x.name for x in d.removed] == ["oldlib"]
    assert rules(d) == [("dependency.added", "fastapl"), ("dependency.added", "reqeusts"),
                        ("dependency.added", "requests"), ("dependency.removed", "oldlib"),
                        ("dependency.typosquat", "fastapl"), ("dependency.typosquat", "reqeusts")]
    squat = {i.decl.name: i.message for i in d.issues if i.rule == "dependency.typosquat"}
    assert "'fastapi'" in squat["fastapl"] and "upstream already has" in squat["fastapl"]
    assert "popular package 'requests'" in squat["reqeusts"]
    assert not diff(up, b, typosquat_distance=0, popular=POPULAR).issues[-1].rule.endswith(
        "typosquat")


def test_changes_are_classified():
    up = reqs("a==1.0", "b==2.0", "c==1.0", "d>=1,<2", "e>=1,<2", "f>=1", "g==1.0")
    b = reqs("a==1.1", "b==1.9", "c>=1.0", "d>=1", "e>=1.2,<2", "f==1.5", "g==1.0")
    up[-1] = Declaration(**{**up[-1].__dict__, "hash": "sha256:x"})
    d = diff(up, b, typosquat_distance=2, popular=POPULAR)
    got = {c.name: c.change for c in d.changed}
    assert got == {"a": "repinned", "b": "downgraded", "c": "pin-removed", "d": "loosened",
                   "e": "tightened", "f": "pinned", "g": "hash-removed"}
    assert ("dependency.downgraded", "b") in rules(d)
    assert ("dependency.loosened", "d") in rules(d)


def test_equivalent_rewrite_and_move_are_not_changes():
    up = reqs("a>=1,<2", file="requirements.txt")
    b = reqs("a<2,>=1", file="requirements/common.txt")
    assert diff(up, b, typosquat_distance=2, popular=POPULAR).issues == ()
    assert classify(reqs("x>=1,<2")[0], reqs("x<2.0,>=1.0")[0]) is None


def test_direct_url_vcs_and_new_index():
    up = reqs("tool==1.0")
    b = reqs("tool @ git+https://github.com/evil/tool.git@main",
             "helper @ https://files.example/helper-1.0.tar.gz")
    b.append(Declaration(name="extra-index-url", specifier="", pin=None, markers="",
                         url="https://mirror.example/simple", kind=Kind.INDEX,
                         file="requirements.txt", line=3))
    d = diff(up, b, typosquat_distance=2, popular=POPULAR)
    r = rules(d)
    assert ("dependency.direct-url", "tool") in r and ("dependency.direct-url", "helper") in r
    assert ("dependency.unpinned-fetch", "tool") in r  # "main" is not a commit sha
    assert ("dependency.new-index", "extra-index-url") in r
    assert ("dependency.changed", "tool") in r  # source changed from the index to git


def test_cmake_fetch_by_branch_name_and_url_without_hash():
    sha = "8798f27777fb57f447070301bf33a9f9c607f491"
    up = [cmake("cutlass", "https://github.com/nvidia/cutlass.git", sha)]
    b = [cmake("cutlass", "https://github.com/nvidia/cutlass.git", "main"),
         cmake("blob", "https://blobs.example/b.tgz", kind=Kind.CMAKE_URL, line=9),
         cmake("pinned", "https://github.com/x/y.git", sha, line=12)]
    d = diff(up, b, typosquat_distance=2, popular=POPULAR)
    r = rules(d)
    assert ("dependency.unpinned-fetch", "cutlass") in r
    assert ("dependency.repinned", "cutlass") in r
    assert ("dependency.unpinned-fetch", "blob") in r
    assert ("dependency.unpinned-fetch", "pinned") not in r
    assert ("dependency.added", "pinned") in r
    msg = next(i.message for i in d.issues if i.rule == "dependency.unpinned-fetch"
               and i.decl.name == "cutlass")
    assert "GIT_TAG 'main'" in msg


def test_a_pin_changed_in_one_file_is_a_change_whatever_other_files_declare():
    """upstream pins x==1.0 in common.txt and x==2.0 in cuda.txt; the fork changes cuda.txt's to
    x==1.0: that is a downgrade in cuda.txt, though common.txt declares the same pin."""
    up = (reqs("xformers==1.0", file="requirements/common.txt")
          + reqs("xformers==2.0", file="requirements/cuda.txt"))
    fork = (reqs("xformers==1.0", file="requirements/common.txt")
            + reqs("xformers==1.0", file="requirements/cuda.txt"))
    d = diff(up, fork, typosquat_distance=2, popular=POPULAR)
    assert [(c.name, c.change, c.after.file) for c in d.changed] == [
        ("xformers", "downgraded", "requirements/cuda.txt")]
    # a file that never declared it may repeat upstream's declaration from another file
    moved = fork + reqs("xformers==1.0", file="requirements/rocm.txt")
    d = diff(up, moved, typosquat_distance=2, popular=POPULAR)
    assert [c.after.file for c in d.changed] == ["requirements/cuda.txt"]
    # unchanged files are unchanged
    assert diff(up, up, typosquat_distance=2, popular=POPULAR).changed == ()
