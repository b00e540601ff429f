"""Render the hardened systemd unit (and its example environment file) from ``[service]``.

What the unit does, and why:

- runs as the spec's dedicated non-root ``User=``; ``StateDirectory=``, ``CacheDirectory=`` and
  ``RuntimeDirectory=`` private (0700); ``UMask=0077``; the engine's compile caches (torch inductor,
  triton, vLLM's own) point into the CacheDirectory so a restart does not recompile for minutes;
- telemetry off (the profile's variables, plus ``HF_HUB_OFFLINE=1`` for a local model path);
- the API key never on a command line. Two ways in:

  * ``api_key_file``: a root-owned 0600 ``EnvironmentFile=`` setting the profile's key variable
    (``VLLM_API_KEY``, ``LLAMA_API_KEY``). systemd (as root) reads it before dropping privileges;
  * ``api_key_credential``: ``LoadCredential=api_key:PATH``. llama.cpp's server has
    ``--api-key-file``, so it is pointed at ``%d/api_key`` (a path on argv, never the key). vLLM has
    no key-file flag: a tiny ``/bin/sh`` wrapper reads the credential with the shell builtin ``read``
    into ``VLLM_API_KEY``, exports it and ``exec``s the server with the original argv — no ``$VAR`` is
    left for systemd to expand into argv (every ``$`` of the script is written ``$$``), and the spec's
    values reach the shell only as positional parameters, never as script text;

  a spec without a key is refused unless it says ``loopback_only = true``;
- binds 127.0.0.1 unless the spec names a host; egress and ingress limited by ``IPAddressDeny=any``
  plus ``IPAddressAllow=`` localhost and the spec's ``client_networks``;
- a private ``/dev/shm`` (a fresh tmpfs per start, gone at stop) and ``RemoveIPC=yes``, so a
  crashed run's shared-memory leftovers (they hold the last request's tokens) never survive;
- ``Restart=on-failure`` with a delay and a start limit; ``TimeoutStartSec=20min`` bounds a
  readiness check (``ExecStartPost=`` waits until the port accepts connections), long enough for a
  large model's first load and graph compilation;
- ``DevicePolicy=closed`` with ``DeviceAllow=`` only the GPU's nodes, and the usual hardening list.

Every value taken from the spec goes through :mod:`auditor.service.escape`; the rendered text is
parsed back and compared directive by directive, so nothing in a spec value can add a directive.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from auditor.errors import SpecError
from auditor.service.address import bind_address
from auditor.service.devices import is_raw_device
from auditor.service.engine_args import CONFIG_OPTION, option_uses
from auditor.service.escape import absolute_path, env_assignment, exec_word, plain_value
from auditor.service.unitfile import parse_unit
from auditor.spec import EngineProfile, ServiceSpec

CREDENTIAL_ID = "api_key"
SHELL = "/bin/sh"
BASH = "/bin/bash"
TIMEOUT_START = "20min"
HIDDEN_ROOTS = ("/home/", "/root/", "/run/user/", "/tmp/", "/var/tmp/")


class KeyMode(StrEnum):
    ENVIRONMENT_FILE = "environment-file"
    CREDENTIAL = "credential"
    NONE = "none"  # loopback_only = true


@dataclass(frozen=True)
class ServerTraits:
    """What the unit needs to know about the engine's server beyond the profile's basics."""

    key_file_flag: str | None  # a flag taking a file that holds the key (llama.cpp: --api-key-file)
    default_host: str | None  # where it binds without --host; None: unknown (assume everywhere)
    cache_env: Mapping[str, str]  # NAME -> template with {state} {cache} {runtime}


_DEFAULT_CACHE_ENV = {"XDG_CACHE_HOME": "{cache}", "HF_HOME": "{state}/huggingface"}


def traits_of(profile: EngineProfile) -> ServerTraits:
    """``[extra.service]`` of the engine profile, with conservative defaults."""
    raw: Any = profile.extra.get("service", {})
    where = f"engine profile {profile.name!r}: [extra.service]"
    if not isinstance(raw, dict):
        raise SpecError(f"{where} must be a table")
    unknown = set(raw) - {"key_file_flag", "default_host", "cache_env"}
    if unknown:
        raise SpecError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    cache_env = raw.get("cache_env", _DEFAULT_CACHE_ENV)
    if not isinstance(cache_env, dict) or not all(isinstance(v, str) for v in cache_env.values()):
        raise SpecError(f"{where}.cache_env must be a table of strings")
    flag = raw.get("key_file_flag")
    host = raw.get("default_host")
    if flag is not None and not isinstance(flag, str):
        raise SpecError(f"{where}.key_file_flag must be a string")
    if host is not None and not isinstance(host, str):
        raise SpecError(f"{where}.default_host must be a string")
    return ServerTraits(key_file_flag=flag, default_host=host, cache_env=dict(cache_env))


@dataclass(frozen=True)
class RenderedUnit:
    unit_name: str  # "<name>.service"
    text: str
    env_example_name: str  # "<name>.env.example"
    env_example_text: str
    key_mode: KeyMode


_HOST_RE = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?")
_KEY_FLAG_RE = re.compile(r"^--api-key(?:=|$)")


class _Writer:
    """Collects the unit's lines; every directive line is checked to stay one line."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.expected: list[tuple[str, str, str]] = []
        self.section = ""

    def comment(self, text: str) -> None:
        assert "\n" not in text and "\r" not in text
        self.lines.append(f"# {text}" if text else "#")

    def header(self, name: str) -> None:
        if self.lines:
            self.lines.append("")
        self.lines.append(f"[{name}]")
        self.section = name

    def set(self, key: str, value: str) -> None:
        if re.search(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]", value) or value.rstrip().endswith("\\"):
            raise AssertionError(f"unsafe value for {key}: {value!r}")  # escape.py prevents it
        self.lines.append(f"{key}={value}")
        self.expected.append((self.section, key, value.strip()))

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


def render_unit(service: ServiceSpec, profile: EngineProfile, *,
                spec_file: str | None = None, tool_version: str = "") -> RenderedUnit:
    """The hardened unit for ``service``; a SpecError when the spec asks for something unsafe."""
    traits = traits_of(profile)
    err = _Errors(spec_file)
    name = service.name
    if not re.fullmatch(r"[A-Za-z0-9_.@-]+", name) or name.startswith((".", "@", "-")):
        raise err("name", f"expected a unit name of letters, digits, _ . @ -, got {name!r}")
    unit_name = f"{name}.service"
    mode = _key_mode(service, profile, traits, err)
    host, allow = _listening(service, err)
    exec_line = _exec_line(service, profile, traits, mode, host, err)
    env, dir_env = _environment(service, profile, traits)
    gpu_indices, device_nodes = _devices(service, err)
    if gpu_indices and service.gpu == "nvidia":
        env["CUDA_DEVICE_ORDER"] = "PCI_BUS_ID"
        env["CUDA_VISIBLE_DEVICES"] = ",".join(gpu_indices)
    elif gpu_indices and service.gpu == "intel":
        env["ZE_AFFINITY_MASK"] = ",".join(gpu_indices)

    w = _Writer()
    _write_unit_section(w, name, profile, mode, tool_version)
    w.header("Service")
    w.set("Type", "exec")
    w.set("User", plain_value(service.user, key="service.user", file=spec_file))
    w.set("ExecStart", exec_line)
    w.set("ExecStartPost", " ".join([
        BASH, "-c",
        exec_word('until (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; do sleep 5; done'),
        exec_word(f"{name}-ready"), exec_word(_probe_host(host)), exec_word(str(service.port))]))
    _write_key(w, service, mode, spec_file)
    for var in env:
        w.set("Environment", env_assignment(var, env[var]))
    for var in dir_env:
        w.set("Environment", env_assignment(var, dir_env[var], specifiers=True))
    for kind in ("State", "Cache", "Runtime"):
        w.set(f"{kind}Directory", plain_value(name, key="service.name", file=spec_file))
        w.set(f"{kind}DirectoryMode", "0700")
    w.set("UMask", "0077")
    w.set("Restart", "on-failure")
    w.set("RestartSec", "30s")
    w.set("TimeoutStartSec", TIMEOUT_START)
    w.set("TimeoutStopSec", "2min")

    w.comment("")
    w.comment("Sandbox. MemoryDenyWriteExecute= stays off: the CUDA driver and triton JIT-compile.")
    _write_sandbox(w, service, err)
    w.set("DevicePolicy", "closed")
    if service.gpu == "none":
        w.set("PrivateDevices", "yes")
    for node in _gpu_device_allow(service.gpu, gpu_indices):
        w.set("DeviceAllow", node)
    for node in device_nodes:
        w.set("DeviceAllow", f"{node} rw")
    w.set("IPAddressDeny", "any")
    w.set("IPAddressAllow", " ".join(allow))

    w.header("Install")
    w.set("WantedBy", "multi-user.target")
    text = w.text()
    _check_round_trip(text, w.expected, unit_name)
    return RenderedUnit(unit_name=unit_name, text=text, env_example_name=f"{name}.env.example",
                        env_example_text=_env_example(service, profile, mode, traits),
                        key_mode=mode)


_KEY_COMMENT = {
    KeyMode.ENVIRONMENT_FILE: "API key: EnvironmentFile= (root-owned, mode 0600).",
    KeyMode.CREDENTIAL: "API key: systemd credential (LoadCredential=), never on argv.",
    KeyMode.NONE: "No API key: loopback_only = true (only local users reach it).",
}


def _write_unit_section(w: _Writer, name: str, profile: EngineProfile, mode: KeyMode,
                        tool_version: str) -> None:
    """The head comment and ``[Unit]``."""
    w.comment(f"{name}.service: hardened unit rendered by auditor{' ' + tool_version if tool_version else ''}"
              f" (engine profile {_safe_comment(profile.name)}).")
    w.comment("Re-render instead of editing by hand; lint any change with: auditor unit check FILE")
    w.comment(_KEY_COMMENT[mode])
    w.header("Unit")
    w.set("Description", f"{name} LLM inference server ({_safe_comment(profile.name)}, hardened)")
    w.set("After", "network-online.target")
    w.set("Wants", "network-online.target")
    w.set("StartLimitIntervalSec", "1h")
    w.set("StartLimitBurst", "3")


@dataclass(frozen=True)
class _Errors:
    """Makes the SpecError for a ``[service]`` key of the spec file."""

    spec_file: str | None

    def __call__(self, key: str, message: str, hint: str | None = None) -> SpecError:
        return SpecError(message, file=self.spec_file, key=f"service.{key}", hint=hint)


def _key_mode(service: ServiceSpec, profile: EngineProfile, traits: ServerTraits,
              err: _Errors) -> KeyMode:
    """How the API key reaches the server; refuses a key the profile cannot hand over, and no
    key at all unless the server is loopback-only."""
    key_env = profile.api_key_env
    if service.api_key_file and service.api_key_credential:
        raise err("api_key_credential", "give api_key_file or api_key_credential, not both")
    if service.api_key_credential:
        if key_env is None and traits.key_file_flag is None:
            raise err("api_key_credential", f"engine profile {profile.name!r} names no API key "
                      "variable or key-file flag: the key cannot be handed over safely")
        return KeyMode.CREDENTIAL
    if service.api_key_file:
        if key_env is None:
            raise err("api_key_file", f"engine profile {profile.name!r} names no API key "
                      "variable: an EnvironmentFile cannot pass the key")
        return KeyMode.ENVIRONMENT_FILE
    if not service.loopback_only:
        raise err("api_key_file", "no API key: a unit without a key is refused",
                  hint="set api_key_file (a root-owned 0600 EnvironmentFile) or "
                       "api_key_credential (LoadCredential=), or loopback_only = true for a "
                       "server that only local users reach")
    return KeyMode.NONE


def _listening(service: ServiceSpec, err: _Errors) -> tuple[str, list[str]]:
    """Where the server listens (read as the resolver reads it: `0`, `0x0`, `[::]`,
    `::ffff:0.0.0.0` are every interface; written in the usual spelling) and who may talk to it
    (the ``IPAddressAllow=`` list)."""
    bound = bind_address(service.host)
    if bound.ip is None and not _HOST_RE.fullmatch(service.host):
        raise err("host", f"expected an IP address or a host name, got {service.host!r}")
    host = bound.canonical
    if service.loopback_only and not bound.loopback:
        raise err("host", f"loopback_only = true but host is {host!r}, not a loopback address")
    if not 1 <= service.port <= 65535:
        raise err("port", f"expected a port 1-65535, got {service.port}")
    networks = [_client_network(i, net, err) for i, net in enumerate(service.client_networks)]
    if not bound.loopback and not networks:
        raise err("client_networks", f"host {host!r} is reachable from the network but "
                  "client_networks is empty: IPAddressDeny=any would drop every client",
                  hint='list the networks the clients connect from, e.g. ["10.0.0.0/24"]')
    allow = ["localhost", *networks]
    if bound.ip is not None and not bound.loopback and not bound.everywhere:
        own = ipaddress.ip_network(host)
        if not any(own.subnet_of(ipaddress.ip_network(n)) for n in networks  # type: ignore[arg-type]
                   if ipaddress.ip_network(n).version == own.version):
            allow.append(str(own))  # the readiness check connects to the server's own address
    return host, allow


def _client_network(i: int, net: str, err: _Errors) -> str:
    try:
        parsed = ipaddress.ip_network(net, strict=False)
    except ValueError:
        raise err(f"client_networks[{i}]", f"expected an address or CIDR network, got {net!r}"
                  ) from None
    if parsed.prefixlen == 0:
        raise err(f"client_networks[{i}]", f"{net!r} allows every address, which undoes "
                  "IPAddressDeny=any; list the client networks")
    return str(parsed)


def _exec_line(service: ServiceSpec, profile: EngineProfile, traits: ServerTraits,
               mode: KeyMode, host: str, err: _Errors) -> str:
    """``ExecStart=``: the profile's server argv and the spec's extra arguments, never the key."""
    key_env = profile.api_key_env
    exec_path = service.exec_path
    absolute_path(exec_path, key="service.exec", file=err.spec_file)
    for i, arg in enumerate(service.extra_args):
        if _KEY_FLAG_RE.match(arg) or (key_env and re.search(rf"\${{?{key_env}\b", arg)):
            raise err(f"extra_args[{i}]", "the API key never goes on the command line",
                      hint="use api_key_file or api_key_credential")
    _check_extra_options(service.extra_args, traits, err)
    values = {"exec": exec_path, "model": service.model, "host": host, "port": str(service.port)}
    argv = [re.sub(r"\{(exec|model|host|port)\}", lambda m: values[m.group(1)], word)
            for word in profile.server_argv] or [exec_path]
    if argv[0] != exec_path:
        raise err("exec", f"engine profile {profile.name!r}: server_argv must start with {{exec}}")
    argv += list(service.extra_args)
    words = [exec_word(a) for a in argv]
    if mode is KeyMode.CREDENTIAL and traits.key_file_flag:
        # %d (the credentials directory) is a specifier on purpose: a path on argv, not the key
        words += [exec_word(traits.key_file_flag), f'"%d/{CREDENTIAL_ID}"']
    exec_line = " ".join(words)
    if mode is KeyMode.CREDENTIAL and not traits.key_file_flag:
        assert key_env is not None
        exec_line = _credential_wrapper(key_env, service.name) + " " + exec_line
    return exec_line


#: options of the server the unit sets itself (or that would bring in settings it cannot see)
_OWN_OPTIONS = {
    "--host": "the unit binds service.host; set host (and client_networks) instead",
    "--port": "the unit listens and probes on service.port; set port instead",
    CONFIG_OPTION: "a config file can set the host, the key or plugins the unit cannot check; "
                   "give the options in extra_args",
    "--api-key": "the API key never goes on the command line; use api_key_file or "
                 "api_key_credential",
}


def _check_extra_options(extra_args: tuple[str, ...], traits: ServerTraits,
                         err: _Errors) -> None:
    """Refuses ``extra_args`` that override what the unit sets, in any spelling the engine's
    parser accepts (``--host=…``, ``--ho …``, ``--api_key``): the last one would win."""
    wanted = [*_OWN_OPTIONS, *([traits.key_file_flag] if traits.key_file_flag else [])]
    for use in option_uses(list(extra_args), wanted, known=wanted, strict=True):
        why = _OWN_OPTIONS.get(use.option, "the unit hands the key file over itself")
        raise err(f"extra_args[{use.index}]", f"{use.written!r} sets {use.option}, which the "
                  "unit sets itself: the last one on the command line wins", hint=why)


def _environment(service: ServiceSpec, profile: EngineProfile,
                 traits: ServerTraits) -> tuple[dict[str, str], dict[str, str]]:
    """The plain ``Environment=`` values (telemetry off, offline hub for a local model) and those
    that name the unit's own directories through specifiers."""
    name = service.name
    env: dict[str, str] = dict(profile.telemetry_env)
    if service.model.startswith("/"):
        env["HF_HUB_OFFLINE"] = "1"
    # the unit's own directories, as specifiers; the service name cannot hold a "%" (spec.py)
    dirs = {"state": f"%S/{name}", "cache": f"%C/{name}", "runtime": f"%t/{name}"}
    dir_env: dict[str, str] = {}
    for var, template in traits.cache_env.items():
        if "%" in template or "%" in name:
            raise SpecError(f"engine profile {profile.name!r}: cache_env.{var} may only use "
                            "{state}, {cache} and {runtime}, not specifiers")
        dir_env[var] = re.sub(r"\{(state|cache|runtime)\}", lambda m: dirs[m.group(1)], template)
    if "HOME" not in env:
        dir_env.setdefault("HOME", dirs["state"])
    return env, dir_env


def _devices(service: ServiceSpec, err: _Errors) -> tuple[list[str], list[str]]:
    """The GPU indices and the extra device nodes of ``devices``."""
    gpu_indices = [d for d in service.devices if d.isdigit()]
    device_nodes = []
    for i, d in enumerate(service.devices):
        if d.isdigit():
            continue
        if not d.startswith("/dev/"):
            raise err(f"devices[{i}]", f"expected a GPU index or a /dev path, got {d!r}")
        node = absolute_path(d, key=f"service.devices[{i}]", file=err.spec_file)
        if is_raw_device(node) or "/../" in node or node.endswith("/.."):
            raise err(f"devices[{i}]", f"{d!r} gives the server host memory, I/O ports, raw "
                      "disks or several devices at once; the unit allows only single device "
                      "nodes", hint="list GPU indices (\"0\", \"1\"); the unit allows their "
                      "nodes itself")
        device_nodes.append(node)
    return gpu_indices, device_nodes


def _write_key(w: _Writer, service: ServiceSpec, mode: KeyMode, spec_file: str | None) -> None:
    """The directive that hands the API key over, if any."""
    if mode is KeyMode.ENVIRONMENT_FILE:
        assert service.api_key_file is not None
        w.set("EnvironmentFile", absolute_path(service.api_key_file, key="service.api_key_file",
                                               file=spec_file))
    elif mode is KeyMode.CREDENTIAL:
        assert service.api_key_credential is not None
        path = absolute_path(service.api_key_credential, key="service.api_key_credential",
                             file=spec_file)
        w.set("LoadCredential", f"{CREDENTIAL_ID}:{path}")


_SANDBOX_YES = ("ProtectKernelTunables", "ProtectKernelModules", "ProtectKernelLogs",
                "ProtectControlGroups", "ProtectClock", "ProtectHostname", "RestrictNamespaces",
                "RestrictSUIDSGID", "RestrictRealtime", "LockPersonality")


def _write_sandbox(w: _Writer, service: ServiceSpec, err: _Errors) -> None:
    """The file-system, kernel, capability and system-call sandbox."""
    w.set("NoNewPrivileges", "yes")
    w.set("ProtectSystem", "strict")
    hidden = service.model.startswith(HIDDEN_ROOTS)  # a local model path where ProtectHome hides it
    w.set("ProtectHome", "tmpfs" if hidden else "yes")
    w.set("PrivateTmp", "yes")
    if hidden:
        if ":" in service.model:
            raise err("model", "a model path under /home, /root, /run/user or /tmp is bound into "
                      "the sandbox and must not contain ':'")
        w.set("BindReadOnlyPaths", absolute_path(service.model, key="service.model",
                                                 file=err.spec_file))
    w.set("TemporaryFileSystem", "/dev/shm:rw,nosuid,nodev,noexec,mode=1777")
    w.set("RemoveIPC", "yes")
    w.set("PrivateMounts", "yes")
    for key in _SANDBOX_YES:
        w.set(key, "yes")
    w.set("ProtectProc", "invisible")
    w.set("CapabilityBoundingSet", "")
    w.set("AmbientCapabilities", "")
    w.set("SystemCallFilter", "@system-service")
    w.set("SystemCallFilter", "~@privileged")
    w.set("SystemCallErrorNumber", "EPERM")
    w.set("SystemCallArchitectures", "native")
    w.set("RestrictAddressFamilies", "AF_UNIX AF_INET AF_INET6 AF_NETLINK")


def _probe_host(host: str) -> str:
    if host == "0.0.0.0":
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host  # canonical already (see bind_address)


def _safe_comment(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.@+-]", "_", text)


def _credential_wrapper(key_env: str, name: str) -> str:
    """``/bin/sh -c SCRIPT NAME``: reads the credential into the key variable, then execs argv."""
    cred = f'"${{CREDENTIALS_DIRECTORY}}/{CREDENTIAL_ID}"'
    script = (f"set -eu; test -s {cred}; read -r {key_env} < {cred} || :; "
              f'export {key_env}; exec "$@"')
    return " ".join([SHELL, "-c", exec_word(script), exec_word(f"{name}-launch")])


def _gpu_device_allow(gpu: str, indices: list[str]) -> list[str]:
    if gpu == "nvidia":
        if indices:
            nodes = ["/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"]
            return [f"{n} rw" for n in nodes + [f"/dev/nvidia{i}" for i in indices]]
        # device classes from /proc/devices: every GPU, the control node, UVM, MIG capabilities
        return ["char-nvidia-frontend rw", "char-nvidiactl rw", "char-nvidia-uvm rw",
                "char-nvidia-caps r"]
    if gpu == "intel":
        return ["char-drm rw"]  # /dev/dri/card* and /dev/dri/renderD*
    return []


def _check_round_trip(text: str, expected: list[tuple[str, str, str]], unit_name: str) -> None:
    parsed = parse_unit(text, unit_name)
    got = [(d.section, d.key, d.value) for d in parsed.directives]
    if got != expected:
        raise AssertionError(f"rendered {unit_name} does not read back as written")


def _env_example(service: ServiceSpec, profile: EngineProfile, mode: KeyMode,
                 traits: ServerTraits) -> str:
    name, user = service.name, service.user
    head = [
        f"# {name}.env.example: companion of {name}.service (rendered by auditor).",
        "#",
        "# The service user (no login, no home directory):",
        f"#   useradd --system --no-create-home --shell /usr/sbin/nologin {user}",
        "# Never put the API key into ExecStart= (argv is readable in /proc, and vLLM logs its",
        "# non-default arguments) nor into Environment= (`systemctl show` prints it to every user).",
        "#",
    ]
    key_env = profile.api_key_env or "API_KEY"
    if mode is KeyMode.ENVIRONMENT_FILE:
        path = service.api_key_file
        body = [
            "# Install this file root-owned and private, then replace the placeholder:",
            f"#   install -o root -g root -m 0600 {name}.env.example {path}",
            "# systemd reads it as root before it starts the server as the service user.",
            f"{key_env}=replace-with-a-long-random-key",
        ]
    elif mode is KeyMode.CREDENTIAL:
        path = service.api_key_credential
        how = (f"the server reads it with {traits.key_file_flag} %d/{CREDENTIAL_ID}"
               if traits.key_file_flag else
               f"a /bin/sh wrapper reads it into {key_env} and execs the server")
        body = [
            "# The key is a systemd credential: put only the key into this file, root-owned 0600:",
            f"#   (umask 077; openssl rand -hex 32 > {path})",
            f"# systemd copies it into $CREDENTIALS_DIRECTORY/{CREDENTIAL_ID}; {how}.",
            "# Nothing else is needed in an environment file.",
        ]
    else:
        body = [
            "# No API key: the spec says loopback_only = true, so only local users reach the server.",
            "# Any local user can use it; set api_key_file or api_key_credential to require a key.",
        ]
    return "\n".join(head + body) + "\n"
