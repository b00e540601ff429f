"""End-to-end check on the real vLLM sdist: the whole audit with and without a lock, and the gate.

    python benchmarks/real_vllm_e2e.py [--version 0.10.0] [--work benchmarks/work/real-e2e]
                                       [--reuse]

1. builds the real case with ``benchmarks/real_vllm.py --lock`` (the official sdist from the
   package index, the four-commit community series, ``vllm.lock`` resolved with pip; needs the
   index, a minute or two) unless ``--reuse`` finds one in ``--work``;
2. runs ``auditor audit`` on the spec with the lock and on a copy without it, and prints every
   stage's status, the verdict, the exit code and the deps reasons;
3. rebases the series unchanged onto a new upstream tag (one upstream commit on top of
   ``vVERSION``, the same four patches cherry-picked) and runs ``auditor gate`` against each
   audit as the approved baseline: an unchanged rebase must pass (exit 0).

Outputs go under ``--work``; nothing else is written. Exits 1 when a check of issue 13's "done
when" does not hold (deps not ok with the lock, more than a few deps reasons without it, or a gate
that does not pass).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import real_vllm  # noqa: E402  (the case builder next to this file)


def auditor(*args: str) -> int:
    res = subprocess.run([sys.executable, "-m", "auditor", *args], capture_output=True, text=True)
    return res.returncode


def audit(spec: Path, out: Path) -> tuple[int, dict]:
    code = auditor("audit", str(spec), "--out", str(out))
    data = json.loads((out / "audit.json").read_text(encoding="utf-8"))
    return code, data


def show(label: str, code: int, data: dict) -> None:
    print(f"== {label}: verdict {data['verdict']}, exit {code}")
    for name, st in data["stages"].items():
        n = len([f for f in st.get("findings", []) if not f.get("waived")])
        print(f"   {name:7} {st['status']:14} findings {n:3}  not checked {len(st['not_checked'])}")
    for r in data["stages"]["deps"]["not_checked"]:
        print(f"   deps reason: {r[:160]}")
    surface = data["stages"]["deps"].get("surface") or {}
    if surface:
        print(f"   {surface.get('summary')}")


def rebase(work: Path, version: str) -> Path:
    """The same series on a new upstream tag; the spec of that audit."""
    clone = work / "rebase-clone"
    if clone.exists():
        subprocess.run(["rm", "-rf", str(clone)], check=True)
    real_vllm.git(work, "clone", "-q", str(work / "mirrors" / "vllm.git"), str(clone))
    real_vllm.git(clone, "checkout", "-q", f"v{version}")
    readme = clone / "README.md"
    readme.write_text(readme.read_text(encoding="utf-8") + "\n<!-- post-release note -->\n",
                      encoding="utf-8")
    real_vllm.git(clone, "commit", "-q", "-am", "docs: post-release note")
    tag = f"v{version}.post1"
    real_vllm.git(clone, "tag", "-f", tag)  # -f: a --reuse run made it before
    upstream = real_vllm.git(clone, "rev-parse", "HEAD")
    real_vllm.git(clone, "checkout", "-q", "-B", "sm86-rebased")
    old = [line.split(" ", 1) for line in
           (work / "series.txt").read_text(encoding="utf-8").splitlines() if line.strip()]
    new = []
    for sha, subject in old:
        real_vllm.git(clone, "cherry-pick", sha, env=real_vllm.FORK_ENV)
        new.append((real_vllm.git(clone, "rev-parse", "HEAD"), subject))
    real_vllm.git(clone, "push", "-q", "--force", str(work / "mirrors" / "vllm.git"), tag,
                  "sm86-rebased")
    (work / "series-rebased.txt").write_text("".join(f"{s} {m}\n" for s, m in new),
                                             encoding="utf-8")
    bundle = work / "downloads" / f"vllm-{version}-sm86-rebased.tar.gz"
    subprocess.run(["git", "archive", "--format=tar.gz", f"--prefix=vllm-{version}-sm86/",
                    "-o", str(bundle), "HEAD"], cwd=clone, check=True)
    text = (work / "audit.toml").read_text(encoding="utf-8")
    text = (text.replace(f'ref = "v{version}"', f'ref = "{tag}"')
            .replace('ref = "sm86"', 'ref = "sm86-rebased"')
            .replace('commits_file = "series.txt"', 'commits_file = "series-rebased.txt"')
            .replace(f"{version}-sm86.tar.gz", f"{version}-sm86-rebased.tar.gz"))
    lines = [f'commit = "{upstream}"' if line.startswith("commit = ") else line
             for line in text.splitlines()]
    spec = work / "audit-rebased.toml"
    spec.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return spec


def approve(work: Path, spec: Path, data: dict) -> Path:
    """What a reviewer does before an audit becomes the approved baseline: each blocking scan
    finding is accepted in a waivers file (rule, path, exact fingerprint, reason, owner, expiry).
    Returns the spec that reads those waivers."""
    entries = []
    for f in data["stages"]["scan"]["findings"]:
        if f["action"] == "block" and not f["waived"]:
            for rule in (f["rule"], *f.get("also", [])):
                fp = f["fingerprint"] if rule == f["rule"] else "*"
                entries.append(f'[[waiver]]\nrule = "{rule}"\npath = "{f["path"]}"\n'
                               f'fingerprint = "{fp}"\nreason = "accepted for the e2e check"\n'
                               f'owner = "e2e@example.invalid"\nexpires = 2099-01-01\n')
    (work / "waivers.toml").write_text("\n".join(entries), encoding="utf-8")
    return with_waivers(spec)


def with_waivers(spec: Path) -> Path:
    out = spec.with_name(spec.stem + "-approved.toml")
    text = spec.read_text(encoding="utf-8")
    if 'waivers = "waivers.toml"' not in text:
        text = text.replace('scope = "diff"\n', 'scope = "diff"\nwaivers = "waivers.toml"\n', 1)
    out.write_text(text, encoding="utf-8")
    return out


def without_lock(spec: Path) -> Path:
    out = spec.with_name(spec.stem + "-nolock.toml")
    out.write_text("".join(line + "\n" for line in spec.read_text(encoding="utf-8").splitlines()
                           if not line.startswith("lock = ")), encoding="utf-8")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--version", default="0.10.0")
    ap.add_argument("--work", type=Path, default=HERE / "work" / "real-e2e")
    ap.add_argument("--reuse", action="store_true", help="keep a case already in --work")
    args = ap.parse_args()
    work = args.work.resolve()
    if not (args.reuse and (work / "audit.toml").is_file() and (work / "vllm.lock").is_file()):
        real_vllm.build(args.version, work, lock=True)
    spec = work / "audit.toml"
    checks: list[tuple[str, bool]] = []
    code, with_lock = audit(spec, work / "out-lock")
    show("with the lock", code, with_lock)
    checks.append(("deps is ok with the lock", with_lock["stages"]["deps"]["status"] == "ok"))
    code, no_lock = audit(without_lock(spec), work / "out-nolock")
    show("without the lock", code, no_lock)
    reasons = no_lock["stages"]["deps"]["not_checked"]
    checks.append(("without the lock, deps gives at most 3 reasons and they name the lock",
                   len(reasons) <= 3 and all("lock" in r for r in reasons)))
    # the gate compares against an approved audit: the series' blocking findings accepted first
    approved = approve(work, spec, with_lock)
    code, ok_lock = audit(approved, work / "out-lock-approved")
    show("with the lock, blocking findings accepted (the approved baseline)", code, ok_lock)
    code, ok_nolock = audit(without_lock(approved), work / "out-nolock-approved")
    show("without the lock, blocking findings accepted", code, ok_nolock)
    rebased = with_waivers(rebase(work, args.version))
    for label, baseline, new_spec in (("lock", "out-lock-approved", rebased),
                                      ("no lock", "out-nolock-approved", without_lock(rebased))):
        out = work / f"gate-{baseline}"
        code = auditor("gate", str(new_spec), "--baseline", str(work / baseline / "audit.json"),
                       "--out", str(out))
        g = json.loads((out / "gate.json").read_text(encoding="utf-8"))
        print(f"== gate, unchanged rebase ({label}): {g['verdict']}, exit {code}; series "
              f"{g['series']['counts']}; findings {len(g['findings']['new'])} new, "
              f"{len(g['findings']['carried'])} carried; not-checked "
              f"{len(g['not_checked']['new'])} new, {len(g['not_checked']['carried'])} carried")
        for r in g["reasons"][:6]:
            print(f"   gate reason: {r[:160]}")
        checks.append((f"gate ({label}): no new not-checked reason on an unchanged rebase",
                       not g["not_checked"]["new"]))
        checks.append((f"gate ({label}): passes an unchanged rebase (exit 0)", code == 0))
    for what, held in checks:
        print(f"{'holds' if held else 'FAILS'}: {what}")
    return 0 if all(held for _, held in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
