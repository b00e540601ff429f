"""The build stage on real vLLM: CUDA modules compiled here from the audited 0.10.0 sdist.

    python benchmarks/real_vllm_build.py [--touch moe,cumem,c] [--work /work/bench/real-build]
                                         [--wheel FILE] [--cache DIR] [--no-repro]
                                         [--version 0.10.0] [--recipe FILE]

Writes a case like ``benchmarks/real_vllm.py`` (the official sdist as upstream, a community
series on top, a bundle of the patched tree) whose series touches one source per module asked:
``moe`` a comment in ``csrc/moe/topk_softmax_kernels.cu`` (rebuilds ``_moe_C``), ``cumem`` one in
``csrc/cumem_allocator.cpp`` (``cumem_allocator``), ``c`` one in ``csrc/activation_kernels.cu``
(``_C``, which the recipe says is too big to build on this machine: INCOMPLETE). The spec's
``[build]`` names ``builds/vllm-0.10.0-sm86.toml`` with ``repro = true``. With ``--wheel`` the
official wheel (``pip download --no-deps vllm==0.10.0 --only-binary :all: -d DIR``; download
only, never installed) is put in the cache where the stage looks for it. Prints the spec's path;
then run ``auditor build SPEC --json --cache DIR`` (the toolchain must be prepared:
``auditor build prepare builds/vllm-0.10.0-sm86.toml --online``).

``--version 0.30.0`` makes the case from that sdist (``benchmarks/work/downloads/
vllm-0.30.0.tar.gz``, fetched from the index when missing) and names
``builds/vllm-0.30.0-sm86.toml`` (``--recipe`` overrides); there only ``cumem`` has a touch (the
file is the same; 0.30.0's ``moe`` and ``c`` sources moved under ``csrc/libtorch_stable/``).
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import real_vllm  # noqa: E402  (the case builder next to this file)

RECIPE = HERE.parent / "builds" / "vllm-0.10.0-sm86.toml"
WHEEL_SHA256 = "8ca37559d82b43b5e8c8248d2e4a1ecb51d6d4e5d517491d656df6491ed93dab"
#: the official wheel's sha256 per version (the recipes' [wheel] sha256)
WHEEL_SHA256S = {
    "0.10.0": WHEEL_SHA256,
    "0.30.0": "ef52ee58c410ead0b8afb190838fa4cbcb52075596f67862a03859d984966ac4",
}
#: the touches that exist in each version's tree (the 0.10.0 ones by default)
VERSION_TOUCHES = {"0.30.0": ("cumem",)}

TOUCHES = {
    "moe": ("csrc/moe/topk_softmax_kernels.cu", '#include "../cuda_compat.h"\n',
            '#include "../cuda_compat.h"\n// sm86: reviewed topk softmax\n'),
    "cumem": ("csrc/cumem_allocator.cpp", "#include <iostream>\n",
              "#include <iostream>\n// sm86: reviewed allocator\n"),
    "c": ("csrc/activation_kernels.cu", "#include <torch/all.h>\n",
          "#include <torch/all.h>\n// sm86: reviewed activations\n"),
}


def recipe_for(version: str) -> Path:
    return HERE.parent / "builds" / f"vllm-{version}-sm86.toml"


def build_case(work: Path, touch: list[str], version: str = "0.10.0", repro: bool = True,
               recipe: Path | None = None) -> Path:
    recipe = recipe or (RECIPE if version == "0.10.0" else recipe_for(version))
    known = VERSION_TOUCHES.get(version, tuple(TOUCHES))
    if set(touch) - set(known):
        raise SystemExit(f"--touch: {', '.join(sorted(set(touch) - set(known)))} has no anchor in "
                         f"vLLM {version} (known there: {', '.join(known)})")
    tree, upstream = real_vllm.sdist_repository(version, work)
    git = real_vllm.git
    git(tree, "checkout", "-q", "-b", "sm86")
    series = []
    for name in touch:
        path, old, new = TOUCHES[name]
        real_vllm.edit(tree / path, old, new)
        subject = f"{path}: sm86 review note"
        series.append((real_vllm.commit(tree, subject), subject))
    git(work, "clone", "-q", "--mirror", str(tree), "mirrors/vllm.git")
    (work / "series.txt").write_text("".join(f"{sha} {subj}\n" for sha, subj in series),
                                     encoding="utf-8")
    (work / "downloads").mkdir()
    bundle = work / "downloads" / f"vllm-{version}-sm86.tar.gz"
    subprocess.run(["git", "archive", "--format=tar.gz", f"--prefix=vllm-{version}-sm86/",
                    "-o", str(bundle), "HEAD"], cwd=tree, check=True)
    shutil.rmtree(tree)
    spec = work / "audit.toml"
    spec.write_text("\n".join([
        "[engine]", 'profile = "vllm"', f'version = "{version}"', 'target = "cuda"', "",
        "[upstream]", 'repo = "mirrors/vllm.git"', f'ref = "v{version}"',
        f'commit = "{upstream}"', "",
        "[patches]", 'ref = "sm86"', 'commits_file = "series.txt"', "",
        "[bundle]", f'path = "downloads/{bundle.name}"', "strip_components = 1", "",
        "[build]", f'recipe = "{recipe}"', f"repro = {str(repro).lower()}", "",
    ]), encoding="utf-8")
    return spec


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--touch", default="moe,cumem",
                    help="comma-separated: moe, cumem, c (default moe,cumem)")
    ap.add_argument("--work", type=Path, default=HERE / "work" / "real-build")
    ap.add_argument("--wheel", type=Path, help="the official vllm wheel of --version, to cache")
    ap.add_argument("--cache", type=Path, default=Path.home() / ".cache" / "auditor")
    ap.add_argument("--no-repro", action="store_true",
                    help="build each module once (default: twice, compared byte for byte)")
    ap.add_argument("--version", default="0.10.0", choices=sorted(WHEEL_SHA256S),
                    help="the vLLM sdist to make the case from (default 0.10.0)")
    ap.add_argument("--recipe", type=Path,
                    help="the recipe the spec names (default builds/vllm-<version>-sm86.toml)")
    args = ap.parse_args()
    touch = [t for t in args.touch.split(",") if t]
    unknown = sorted(set(touch) - set(TOUCHES))
    if unknown:
        raise SystemExit(f"--touch: unknown {', '.join(unknown)} (known: {', '.join(TOUCHES)})")
    if args.wheel is not None:
        cached = args.cache / "wheels" / WHEEL_SHA256S[args.version]
        cached.mkdir(parents=True, exist_ok=True)
        if not (cached / args.wheel.name).is_file():
            shutil.copyfile(args.wheel, cached / args.wheel.name)
    recipe = args.recipe.resolve() if args.recipe is not None else None
    print(build_case(args.work.resolve(), touch, version=args.version, repro=not args.no_repro,
                     recipe=recipe))


if __name__ == "__main__":
    main()
