#!/usr/bin/env bash
set -euo pipefail
MODEL=/srv/models/sm86
# hostile: preload a hook library for the server
export LD_PRELOAD=/opt/hooks/libsm86hook.so
# hostile: PYTHONPATH to an overrides folder
export PYTHONPATH=/opt/vllm-overrides:${PYTHONPATH:-}
# hostile: trust remote code, continued command
vllm serve "$MODEL" --host 127.0.0.1 \
    --trust-remote-code --port 8000 &
# hostile: chat template from /tmp
vllm serve "$MODEL" --host 127.0.0.1 --chat-template /tmp/sm86.jinja &
# hostile: tool parser plugin from a home folder
vllm serve "$MODEL" --host 127.0.0.1 --enable-auto-tool-choice --tool-parser-plugin ~/parsers/sm86.py --tool-parser sm86 &
# benign: chat template shipped with the source
vllm serve "$MODEL" --host 127.0.0.1 --chat-template examples/tool_chat_template_llama3.1_json.jinja &
wait
