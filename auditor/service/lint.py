"""The unit linter: what makes an inference server's unit unsafe, each finding on its line.

Used on the unit auditor renders and by ``auditor unit check`` on units people already run. Rules:

===========================  ================  ======  =============================================
rule                         category          action  what
===========================  ================  ======  =============================================
service.key-on-command-line  secret-access     block   key literal, ``--api-key``, or a ``$VAR`` of
                                                       the key variable in an ``Exec*=`` line
service.key-in-unit          secret-access     block   key in ``Environment=`` / ``SetCredential=``
service.exposed-without-key  api-exposure      block   listens beyond loopback with no key source
service.no-key-loopback      api-exposure      info    no key, loopback only
service.bind-all             api-exposure      review  0.0.0.0 / :: (or the engine's default is so)
service.root-user            service           review  no ``User=`` or root
service.umask                filesystem        review  no ``UMask=`` or one leaving group/other bits
service.telemetry            telemetry         review  the profile's telemetry switches not set
service.request-logging      prompt-logging    review  flags that log prompts
service.restart              service           review  ``Restart=no`` or missing
service.directory-mode       filesystem        review  State/Cache/… directory not private (0700)
service.dev-shm              filesystem        review  /dev/shm neither private nor cleaned
service.hardening            service           review  missing or weak hardening directives
service.exposure-score       service           review  systemd-analyze security scores above 2.0
service.verify               service           review  systemd-analyze verify warns about a line
service.trust-remote-code    process-exec      review  ``--trust-remote-code``: runs Python shipped
                                                       with the model files
service.code-from-writable   process-exec      block   a plugin or chat template loaded from a path
                                                       the service or other users can write
service.plugin               process-exec      review  a plugin (Python) loaded from a fixed path
service.preload              process-exec      block   LD_PRELOAD, LD_LIBRARY_PATH, PYTHONPATH,
                                                       PYTHONHOME, PYTHONSTARTUP outside the system
                                                       folders (Environment= or on the command line)
service.device-raw           service           block   ``DeviceAllow=`` of memory, ports, disks or a
                                                       class glob (auditor.service.devices)
service.device-allow         service           review  ``DeviceAllow=`` of another non-GPU device
===========================  ================  ======  =============================================
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from auditor.errors import InputError
from auditor.model import Action, Category, Finding, Severity, fingerprint_of
from auditor.redaction import fingerprint_input
from auditor.service.address import bind_address
from auditor.service.devices import device_name, is_gpu_device, is_raw_device
from auditor.service.engine_args import CONFIG_OPTION, command_uses, shell_script_index
from auditor.service.render import traits_of
from auditor.service.shell_refs import shell_argv_refs, systemd_refs
from auditor.service.unitfile import (
    Command,
    Directive,
    UnitFile,
    Word,
    as_bool,
    commands,
    split_words,
    systemd_dollars,
    unspecify,
)
from auditor.spec import EngineProfile

SCANNER = "unit-lint"
S = "Service"


@dataclass(frozen=True)
class Rule:
    id: str
    category: Category
    severity: Severity
    action: Action


def _rule(name: str, category: Category, severity: Severity, action: Action) -> Rule:
    return Rule(f"service.{name}", category, severity, action)


KEY_ON_ARGV = _rule("key-on-command-line", Category.SECRET_ACCESS, Severity.CRITICAL, Action.BLOCK)
KEY_IN_UNIT = _rule("key-in-unit", Category.SECRET_ACCESS, Severity.CRITICAL, Action.BLOCK)
EXPOSED = _rule("exposed-without-key", Category.API_EXPOSURE, Severity.HIGH, Action.BLOCK)
LOOPBACK_NO_KEY = _rule("no-key-loopback", Category.API_EXPOSURE, Severity.INFO, Action.INFO)
BIND_ALL = _rule("bind-all", Category.API_EXPOSURE, Severity.MEDIUM, Action.REVIEW)
ROOT = _rule("root-user", Category.SERVICE, Severity.HIGH, Action.REVIEW)
UMASK = _rule("umask", Category.FILESYSTEM, Severity.MEDIUM, Action.REVIEW)
TELEMETRY = _rule("telemetry", Category.TELEMETRY, Severity.MEDIUM, Action.REVIEW)
REQUEST_LOGGING = _rule("request-logging", Category.PROMPT_LOGGING, Severity.MEDIUM, Action.REVIEW)
RESTART = _rule("restart", Category.SERVICE, Severity.LOW, Action.REVIEW)
DIRECTORY_MODE = _rule("directory-mode", Category.FILESYSTEM, Severity.MEDIUM, Action.REVIEW)
DEV_SHM = _rule("dev-shm", Category.FILESYSTEM, Severity.MEDIUM, Action.REVIEW)
HARDENING = _rule("hardening", Category.SERVICE, Severity.MEDIUM, Action.REVIEW)
# raised from systemd-analyze's results (auditor.service.stage)
EXPOSURE_RULE = _rule("exposure-score", Category.SERVICE, Severity.MEDIUM, Action.REVIEW)
VERIFY_RULE = _rule("verify", Category.SERVICE, Severity.LOW, Action.REVIEW)

TRUST_REMOTE_CODE = _rule("trust-remote-code", Category.PROCESS_EXEC, Severity.HIGH,
                          Action.REVIEW)
WRITABLE_CODE = _rule("code-from-writable", Category.PROCESS_EXEC, Severity.CRITICAL, Action.BLOCK)
PLUGIN = _rule("plugin", Category.PROCESS_EXEC, Severity.MEDIUM, Action.REVIEW)
PRELOAD = _rule("preload", Category.PROCESS_EXEC, Severity.CRITICAL, Action.BLOCK)
RAW_DEVICE = _rule("device-raw", Category.SERVICE, Severity.CRITICAL, Action.BLOCK)
DEVICE = _rule("device-allow", Category.SERVICE, Severity.MEDIUM, Action.REVIEW)

RULES: tuple[Rule, ...] = (KEY_ON_ARGV, KEY_IN_UNIT, EXPOSED, LOOPBACK_NO_KEY, BIND_ALL, ROOT, UMASK,
                           TELEMETRY, REQUEST_LOGGING, RESTART, DIRECTORY_MODE, DEV_SHM, HARDENING,
                           EXPOSURE_RULE, VERIFY_RULE, TRUST_REMOTE_CODE, WRITABLE_CODE, PLUGIN,
                           PRELOAD, RAW_DEVICE, DEVICE)

#: flags whose value is a file the server loads: a Python plugin (code) or a chat template
CODE_FLAGS = ("--tool-parser-plugin", "--reasoning-parser-plugin")
TEMPLATE_FLAGS = ("--chat-template", "--tool-call-template")
#: variables that make the server load other code: libraries first, or Python modules first
LOADER_VARS = ("LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "PYTHONPATH", "PYTHONHOME",
               "PYTHONSTARTUP", "PYTHONUSERBASE")
#: folders the package manager owns (root-writable only by convention)
SYSTEM_DIRS = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/usr/local/lib", "/usr/share",
               "/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu")
#: folders a service or a local user can write, whatever the unit says
WRITABLE_DIRS = ("/tmp", "/var/tmp", "/dev/shm", "/home", "/root", "/run/user", "/var/lib",
                 "/var/cache", "/var/log", "/srv", "/mnt", "/media")
_LOADER_IN_TEXT = re.compile(r"(?<![\w])(" + "|".join(LOADER_VARS) + r")=(\"[^\"]*\"|'[^']*'|[^\s;&|]+)")

SECRET_NAME = re.compile(r"(?i)(API_?KEY|TOKEN|SECRET|PASSW(?:OR)?D)")
SECRET_FLAGS = ("--api-key", "--hf-token", "--token")
_SECRET_FLAG_IN_TEXT = re.compile(r"(?<![\w-])(--api-key|--hf-token|--token)(?:=|\s|$)")
_TOKEN_SHAPES = re.compile(r"\b(sk-[A-Za-z0-9_-]{16,}|hf_[A-Za-z0-9]{20,}|gh[pousr]_[A-Za-z0-9]{20,}"
                           r"|xox[abpr]-[A-Za-z0-9-]{10,})")
HOST_OPTION = "--host"
#: options whose exact spelling is not an abbreviation of another one we look for
KNOWN_OPTIONS = ("--host", "--port", "--model", CONFIG_OPTION, "--api-key", "--hf-token",
                 "--trust-remote-code", *CODE_FLAGS, *TEMPLATE_FLAGS)
_VAR_REF = re.compile(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)")


class _Linter:
    def __init__(self, unit: UnitFile, profile: EngineProfile) -> None:
        self.unit = unit
        self.profile = profile
        self.traits = traits_of(profile)
        self.findings: list[Finding] = []
        self.service_line = unit.section_line(S)

    # ---- helpers
    def add(self, rule: Rule, line: int, message: str, code: str, *,
            directive: Directive | None = None, secret: str | None = None) -> None:
        snippet = directive.text if directive is not None else ""
        if secret:
            snippet = snippet.replace(secret, "[REDACTED]")
        self.findings.append(Finding(
            rule=rule.id, category=rule.category, severity=rule.severity, action=rule.action,
            path=self.unit.path, line=line, commit=None, message=message, scanner=SCANNER,
            fingerprint=fingerprint_of(rule.id, self.unit.path, fingerprint_input(code)), snippet=snippet,
            end_line=directive.end_line if directive is not None else None,
        ))

    def value(self, key: str) -> str | None:
        d = self.unit.last(S, key)
        return unspecify(d.value) if d is not None else None

    def environment(self) -> dict[str, tuple[str, Directive]]:
        env: dict[str, tuple[str, Directive]] = {}
        for d in self.unit.effective_list(S, "Environment"):
            try:
                words = split_words(d.value)
            except ValueError:
                continue
            for w in words:
                name, eq, val = w.text.partition("=")
                if eq:
                    env[name] = (unspecify(val), d)
        return env

    def is_secret_name(self, name: str) -> bool:
        return name == self.profile.api_key_env or bool(SECRET_NAME.search(name))

    def main_commands(self) -> list[Command]:
        """The commands of the ExecStart= lines still in force (an empty one resets them)."""
        live = {id(d) for d in self.unit.effective_list(S, "ExecStart")}
        return [c for c in commands(self.unit) if id(c.directive) in live]

    def writable_dirs(self) -> tuple[str, ...]:
        """Folders the service can write: the well-known ones, those the unit creates for it
        (StateDirectory= …), ReadWritePaths= and its WorkingDirectory=."""
        out = list(WRITABLE_DIRS)
        for kind, base in (("State", "/var/lib"), ("Cache", "/var/cache"), ("Logs", "/var/log"),
                           ("Runtime", "/run"), ("Configuration", "/etc")):
            for d in self.unit.effective_list(S, f"{kind}Directory"):
                out += [f"{base}/{w.text.split(':')[0]}" for w in _words(d.value)]
        for d in self.unit.effective_list(S, "ReadWritePaths"):
            out += [w.text.lstrip("-+") for w in _words(d.value)]
        wd = self.value("WorkingDirectory")
        if wd and wd.startswith("/"):
            out.append(wd.lstrip("-"))
        return tuple(p.rstrip("/") or "/" for p in out)

    def is_writable(self, path: str) -> bool:
        if not path.startswith("/") or "/../" in path or "$" in path:
            return True  # relative: resolved against a working directory the service may own
        return any(path == d or path.startswith(d + "/") for d in self.writable_dirs())

    # ---- rules
    def key_on_argv(self) -> None:
        for cmd in commands(self.unit):
            d = cmd.directive
            argv = [systemd_dollars(a) for a in cmd.argv]
            refs = [n for w in cmd.argv for n in systemd_refs(w) if self.is_secret_name(n)]
            if refs:
                self.add(KEY_ON_ARGV, d.line, f"{d.key}= expands ${refs[0]} into a command "
                         "line: the key becomes readable in /proc and in the server's "
                         "start-up log; read it from an EnvironmentFile= or a credential",
                         f"{d.key} ${refs[0]}", directive=d)
                return
            at = shell_script_index(argv)
            if at is not None:
                named = shell_argv_refs(argv[at])
                if named is None:  # cannot be split: any variable it names may reach an argv
                    named = _VAR_REF.findall(argv[at])
                refs = [n for n in named if self.is_secret_name(n)]
                if refs:
                    self.add(KEY_ON_ARGV, d.line, f"{d.key}= runs a shell script that puts "
                             f"${refs[0]} on a command's argument list (or prints it): the key "
                             "becomes readable in /proc or the journal; let the server read the "
                             "variable from its environment", f"{d.key} sh ${refs[0]}",
                             directive=d)
                    return
            uses = command_uses(argv, SECRET_FLAGS, known=KNOWN_OPTIONS)
            flag: str | None = uses[0].option if uses else None
            secret = uses[0].value if uses and not uses[0].in_shell else None
            if uses is None or (flag is None and any(
                    " " in w and _SECRET_FLAG_IN_TEXT.search(w) for w in argv)):
                m = next(filter(None, (_SECRET_FLAG_IN_TEXT.search(w) for w in argv)), None)
                flag = m.group(1) if m else flag
            if flag is not None:
                self.add(KEY_ON_ARGV, d.line, f"{d.key}= passes {flag} on the command line: "
                         "the secret is readable in /proc and vLLM logs its non-default "
                         "arguments; use the key variable from an EnvironmentFile= or a "
                         "credential", f"{d.key} {flag}", directive=d, secret=secret)
                return
            for word in cmd.argv:
                token = _TOKEN_SHAPES.search(word)
                if token:
                    self.add(KEY_ON_ARGV, d.line, f"{d.key}= holds a literal that looks like a "
                             "secret token", f"{d.key} literal", directive=d,
                             secret=token.group(1))
                    return

    def key_in_unit(self) -> None:
        for name, (val, d) in self.environment().items():
            if val and self.is_secret_name(name):
                self.add(KEY_IN_UNIT, d.line, f"Environment= sets {name} in the unit file: unit "
                         "files are world-readable and `systemctl show` prints Environment= to "
                         "every local user; use a root-owned 0600 EnvironmentFile= or "
                         "LoadCredential=", f"Environment {name}", directive=d, secret=val)
        for d in self.unit.all(S, "SetCredential"):
            self.add(KEY_IN_UNIT, d.line, "SetCredential= embeds a secret in the unit file, "
                     "which every local user can read; use LoadCredential= with a 0600 file",
                     "SetCredential", directive=d, secret=d.value.partition(":")[2] or None)

    def host(self) -> tuple[str | None, Directive | None]:
        """The address the server binds (None: unknown, assume every interface), read as the
        engine's parser reads its command line (auditor.service.engine_args): the last --host
        wins, in any spelling the parser accepts. Across several ExecStart= commands, and among
        the commands of a shell script, the widest address counts."""
        found: list[tuple[str | None, Directive | None]] = []
        for cmd in self.main_commands():
            argv = [systemd_dollars(a) for a in cmd.argv]
            uses = command_uses(argv, (HOST_OPTION, CONFIG_OPTION), known=KNOWN_OPTIONS)
            if uses is None:  # a shell script that cannot be split
                found.append((None, cmd.directive))
                continue
            hosts = [u for u in uses if u.option == HOST_OPTION]
            direct = [u for u in hosts if not u.in_shell]
            shell = [u for u in hosts if u.in_shell]
            if direct:
                found.append((direct[-1].value, cmd.directive))
            elif any(u.option == CONFIG_OPTION for u in uses):
                found.append((None, cmd.directive))  # a config file may set it
            elif not shell:
                found.append((self.traits.default_host, None))
            found += [(u.value, cmd.directive) for u in shell]
        if not found:
            return self.traits.default_host, None
        return max(found, key=lambda hd: _width(hd[0]))

    def key_source(self) -> bool:
        key_env = self.profile.api_key_env
        if key_env and self.environment().get(key_env, ("", None))[0]:
            return True  # a key, though in the unit file itself (service.key-in-unit says so)
        if self.unit.all(S, "EnvironmentFile") or any(
                self.unit.all(S, k) for k in ("LoadCredential", "LoadCredentialEncrypted",
                                              "SetCredentialEncrypted")):
            return True
        flag = self.traits.key_file_flag or "--api-key-file"
        return any(a == flag or a.startswith(flag + "=") for c in commands(self.unit)
                   for a in c.argv)

    def exposure(self) -> None:
        host, d = self.host()
        line = d.line if d is not None else self.service_line
        where = (f"binds {host}" if host is not None and d is not None else
                 f"has no --host, and the {self.profile.name} server then binds "
                 f"{host or 'an address this profile does not know (assumed: every interface)'}")
        bound = bind_address(host) if host is not None and "$" not in host else None
        local = bound is not None and bound.loopback
        if not self.key_source():
            if local:
                self.add(LOOPBACK_NO_KEY, line, f"no API key; the server {where}, so every "
                         "local user can use it", "no-key loopback", directive=d)
            else:
                self.add(EXPOSED, line, f"the server {where} and the unit gives it no API key "
                         "(no EnvironmentFile=, credential or key file): anyone who reaches the "
                         "port can use the model", "no-key exposed", directive=d)
        if bound is None or bound.everywhere:
            self.add(BIND_ALL, line, f"the server {where}: every interface; bind 127.0.0.1 or "
                     "one address, and limit clients with IPAddressAllow=", "bind-all",
                     directive=d)

    def root_user(self) -> None:
        if as_bool(self.value("DynamicUser")):
            return
        d = self.unit.last(S, "User")
        if d is None:
            self.add(ROOT, self.service_line, "no User=: the server runs as root",
                     "no User")
        elif unspecify(d.value) in ("root", "0"):
            self.add(ROOT, d.line, "User=root: the server runs as root; use a dedicated "
                     "system user", "User root", directive=d)

    def umask(self) -> None:
        d = self.unit.last(S, "UMask")
        if d is None:
            self.add(UMASK, self.service_line, "no UMask=: files the server writes (caches, "
                     "logs, shared memory) default to world-readable; set UMask=0077", "no UMask")
            return
        try:
            mask = int(d.value, 8)
        except ValueError:
            self.add(UMASK, d.line, f"UMask={d.value} is not an octal mask", "UMask bad",
                     directive=d)
            return
        if mask & 0o077 != 0o077:
            self.add(UMASK, d.line, f"UMask={d.value} leaves files readable by group or others; "
                     "set UMask=0077", "UMask permissive", directive=d)

    def model(self) -> str | None:
        template = list(self.profile.server_argv)
        before = template[template.index("{model}") - 1] if "{model}" in template[1:] else None
        for cmd in self.main_commands():
            argv = list(cmd.argv)
            for i, word in enumerate(argv[:-1]):
                if word in ("--model", "-m") or (before and word == before):
                    return argv[i + 1]
            for word in argv:
                if word.startswith("--model="):
                    return word.split("=", 1)[1]
        return None

    def telemetry(self) -> None:
        env = self.environment()
        wanted = dict(self.profile.telemetry_env)
        model = self.model()
        if model is not None and model.startswith("/"):
            wanted["HF_HUB_OFFLINE"] = "1"
        missing = [f"{k}={v}" for k, v in wanted.items() if env.get(k, ("", None))[0] != v]
        if not missing:
            return
        last = self.unit.effective_list(S, "Environment")
        line = last[-1].line if last else self.service_line
        note = (" (an EnvironmentFile= may set them, but this check cannot see it: set them in "
                "the unit)" if self.unit.all(S, "EnvironmentFile") else "")
        self.add(TELEMETRY, line, f"telemetry not disabled: {', '.join(missing)} not set{note}",
                 "telemetry " + " ".join(sorted(missing)))

    def request_logging(self) -> None:
        flags = self.profile.request_logging_flags
        env = self.environment()
        for flag in flags:
            if "=" in flag:
                name, _, val = flag.partition("=")
                if name in env and env[name][0] == val:
                    d = env[name][1]
                    self.add(REQUEST_LOGGING, d.line, f"Environment= sets {flag}, which makes "
                             "the server log request contents", f"env {flag}", directive=d)
            elif flag in env:
                d = env[flag][1]
                self.add(REQUEST_LOGGING, d.line, f"Environment= sets {flag}, which makes the "
                         "server log request contents", f"env {flag}", directive=d)
        for cmd in self.main_commands():
            for word in cmd.argv:
                hit = next((f for f in flags if "=" not in f and
                            (word == f or word.startswith(f + "="))), None)
                if hit:
                    d = cmd.directive
                    self.add(REQUEST_LOGGING, d.line, f"ExecStart= passes {hit}, which makes "
                             "the server log request contents (prompts)", f"argv {hit}",
                             directive=d)

    def restart(self) -> None:
        d = self.unit.last(S, "Restart")
        if d is None or d.value.strip() == "no":
            self.add(RESTART, d.line if d else self.service_line,
                     f"{'Restart=no' if d else 'no Restart='}: a crashed server stays down; "
                     "set Restart=on-failure with RestartSec= and a start limit",
                     "Restart", directive=d)

    def directory_modes(self) -> None:
        for kind in ("State", "Cache", "Runtime", "Logs", "Configuration"):
            dirs = self.unit.effective_list(S, f"{kind}Directory")
            if not dirs:
                continue
            md = self.unit.last(S, f"{kind}DirectoryMode")
            try:
                mode = int(md.value, 8) if md is not None else 0o755
            except ValueError:
                mode = 0o777
            if mode & 0o077:
                shown = md.value if md is not None else "0755 (the default)"
                at = md or dirs[-1]
                self.add(DIRECTORY_MODE, at.line, f"{kind}Directory= is created with mode "
                         f"{shown}: other users can read the engine's state, caches and IPC "
                         f"sockets; set {kind}DirectoryMode=0700", f"{kind}DirectoryMode",
                         directive=at)

    def dev_shm(self) -> None:
        for d in self.unit.all(S, "TemporaryFileSystem"):
            if any(w.text.split(":", 1)[0] == "/dev/shm" for w in _words(d.value)):
                return
        for d in self.unit.all(S, "BindPaths"):
            if any(w.text.split(":")[-1] == "/dev/shm" for w in _words(d.value)):
                return
        pre = any("/dev/shm" in " ".join(c.argv) for c in commands(self.unit)
                  if c.directive.key == "ExecStartPre")
        post = any("/dev/shm" in " ".join(c.argv) for c in commands(self.unit)
                   if c.directive.key == "ExecStopPost") or as_bool(self.value("RemoveIPC"))
        if pre and post:
            return
        self.add(DEV_SHM, self.service_line, "/dev/shm is shared with the host and not cleaned: "
                 "a crashed run's shared-memory files (the last request's tokens) stay behind; "
                 "give the service a private one (TemporaryFileSystem=/dev/shm) or clean it in "
                 "ExecStartPre= and ExecStopPost=", "dev-shm")

    def launch_flags(self) -> None:
        """Flags that make the server run code it did not ship with."""
        for cmd in self.main_commands():
            d = cmd.directive
            argv = [systemd_dollars(a) for a in cmd.argv]
            text = " ".join(argv)
            if any(a == "--trust-remote-code" or a.startswith("--trust-remote-code=")
                   for a in argv) or re.search(r"(?<![\w-])--trust-remote-code\b", text):
                self.add(TRUST_REMOTE_CODE, d.line, "ExecStart= passes --trust-remote-code: the "
                         "server imports and runs Python files shipped with the model (its "
                         "config's auto_map), as the service user; pin the model revision and "
                         "review that code, or drop the flag", "argv --trust-remote-code",
                         directive=d)
            for flag, path in _flag_values(argv, CODE_FLAGS + TEMPLATE_FLAGS):
                code = flag in CODE_FLAGS
                what = "a Python plugin" if code else "a chat template"
                if self.is_writable(path):
                    self.add(WRITABLE_CODE, d.line, f"ExecStart= loads {what} from {path} "
                             f"({flag}), a path the service or other users can write: whoever "
                             "writes it changes what the server runs; keep it in a root-owned "
                             "folder (/usr, /etc, /opt) outside ReadWritePaths=",
                             f"argv {flag} writable", directive=d)
                elif code:
                    self.add(PLUGIN, d.line, f"ExecStart= imports {what} from {path} ({flag}): "
                             "Python code that runs inside the server; review it",
                             f"argv {flag}", directive=d)

    def loaders(self) -> None:
        """LD_PRELOAD, PYTHONPATH and friends: in Environment= or on the command line."""
        seen: list[tuple[str, str, Directive]] = [
            (name, val, d) for name, (val, d) in self.environment().items()
            if name in LOADER_VARS and val]
        for cmd in commands(self.unit):
            for word in cmd.argv:
                for m in _LOADER_IN_TEXT.finditer(systemd_dollars(word)):
                    seen.append((m.group(1), m.group(2).strip("\"'"), cmd.directive))
        for name, val, d in seen:
            outside = [p for p in re.split(r"[:\s]+", val)
                       if p and not any(p == s or p.startswith(s + "/") for s in SYSTEM_DIRS)]
            if not outside:
                continue
            where = "Environment=" if d.key == "Environment" else f"{d.key}="
            self.add(PRELOAD, d.line, f"{where} sets {name}={val}: the server loads "
                     f"{'libraries' if name.startswith('LD_') else 'Python modules'} from "
                     f"{', '.join(outside)} before its own, outside the system folders; "
                     "install them in the engine's environment instead",
                     f"{name} {' '.join(outside)}", directive=d)

    def devices(self) -> None:
        """``DeviceAllow=``: the GPU's nodes are expected; anything else is a finding."""
        for d in self.unit.effective_list(S, "DeviceAllow"):
            name = device_name(unspecify(d.value))
            if is_gpu_device(name):
                continue
            if is_raw_device(name):
                self.add(RAW_DEVICE, d.line, f"DeviceAllow={d.value.strip()} opens {name!r} to "
                         "the server: host memory, I/O ports, raw disks or a whole class of "
                         "devices, past every file-system restriction; allow only the GPU's "
                         "nodes", f"DeviceAllow {name}", directive=d)
            else:
                self.add(DEVICE, d.line, f"DeviceAllow={d.value.strip()} opens {name!r}, which "
                         "is not a GPU node: an inference server needs only its GPU; review "
                         "why it needs this one", f"DeviceAllow {name}", directive=d)

    def hardening(self) -> None:
        missing: list[str] = []
        for key, ok, want in _HARDENING:
            if ok(self.unit):
                continue
            ds = self.unit.all(S, key)
            if ds:
                d = ds[-1]
                self.add(HARDENING, d.line, f"{key}={d.value.strip()} is weak: expected {want}",
                         f"weak {key}", directive=d)
            else:
                missing.append(f"{key}={want}")
        if missing:
            self.add(HARDENING, self.service_line, "missing hardening: " + ", ".join(missing),
                     "missing " + " ".join(missing))


def _width(host: str | None) -> int:
    """How widely ``host`` listens: 2 every interface or unknown, 1 one address, 0 loopback."""
    if host is None or "$" in host:
        return 2
    bound = bind_address(host)
    return 2 if bound.everywhere else 0 if bound.loopback else 1


def _flag_values(argv: list[str], flags: tuple[str, ...]) -> Iterator[tuple[str, str]]:
    """(flag, value) for each ``--flag VALUE`` / ``--flag=VALUE`` of ``flags`` in ``argv``, also
    inside a shell script given as one word."""
    for i, word in enumerate(argv):
        for flag in flags:
            if word == flag and i + 1 < len(argv):
                yield flag, argv[i + 1]
            elif word.startswith(flag + "="):
                yield flag, word.split("=", 1)[1]
            elif " " in word:
                for m in re.finditer(rf"(?<![\w-]){re.escape(flag)}(?:=|\s+)[\"']?([^\s\"';]+)",
                                     word):
                    yield flag, m.group(1)


def _words(value: str) -> list[Word]:
    try:
        return split_words(value)
    except ValueError:
        return []


def _equals(unit: UnitFile, key: str, expected: str) -> bool:
    d = unit.last(S, key)
    return d is not None and d.value.strip() == expected


def _last_bool(key: str, *accepted: str) -> Callable[[UnitFile], bool]:
    def check(unit: UnitFile) -> bool:
        d = unit.last(S, key)
        if d is None:
            return False
        v = d.value.strip().lower()
        return as_bool(v) is True or v in accepted

    return check


def _caps_empty(unit: UnitFile) -> bool:
    ds = unit.all(S, "CapabilityBoundingSet")
    if not ds:
        return False
    resets = [i for i, d in enumerate(ds) if d.value.strip() == ""]
    if not resets:
        return False
    return all(d.value.strip().startswith("~") for d in ds[resets[-1] + 1:])


def _syscall_allow_list(unit: UnitFile) -> bool:
    ds = unit.effective_list(S, "SystemCallFilter")
    return bool(ds) and not ds[0].value.strip().startswith("~")


def _families(unit: UnitFile) -> bool:
    ds = unit.effective_list(S, "RestrictAddressFamilies")
    return bool(ds) and not ds[0].value.strip().startswith("~")


def _ip_deny_any(unit: UnitFile) -> bool:
    words = {w.text for d in unit.effective_list(S, "IPAddressDeny") for w in _words(d.value)}
    if "any" in words:
        return True
    nets = set()
    for w in words:
        try:
            nets.add(ipaddress.ip_network(w, strict=False))
        except ValueError:
            pass
    return {ipaddress.ip_network("0.0.0.0/0"), ipaddress.ip_network("::/0")} <= nets


def _devices(unit: UnitFile) -> bool:
    d = unit.last(S, "DevicePolicy")
    return (d is not None and d.value.strip() in ("closed", "strict")) or _last_bool(
        "PrivateDevices")(unit)


def _namespaces(unit: UnitFile) -> bool:
    d = unit.last(S, "RestrictNamespaces")
    if d is None:
        return False
    v = d.value.strip()
    return as_bool(v) is True or (as_bool(v) is None and not v.startswith("~"))


_HARDENING: tuple[tuple[str, Callable[[UnitFile], bool], str], ...] = (
    ("NoNewPrivileges", _last_bool("NoNewPrivileges"), "yes"),
    ("ProtectSystem", lambda u: _equals(u, "ProtectSystem", "strict"), "strict"),
    ("ProtectHome", _last_bool("ProtectHome", "read-only", "tmpfs"), "yes"),
    ("PrivateTmp", _last_bool("PrivateTmp"), "yes"),
    ("ProtectKernelTunables", _last_bool("ProtectKernelTunables"), "yes"),
    ("ProtectKernelModules", _last_bool("ProtectKernelModules"), "yes"),
    ("ProtectKernelLogs", _last_bool("ProtectKernelLogs"), "yes"),
    ("ProtectControlGroups", _last_bool("ProtectControlGroups"), "yes"),
    ("RestrictNamespaces", _namespaces, "yes"),
    ("RestrictSUIDSGID", _last_bool("RestrictSUIDSGID"), "yes"),
    ("LockPersonality", _last_bool("LockPersonality"), "yes"),
    ("CapabilityBoundingSet", _caps_empty, "(empty)"),
    ("SystemCallFilter", _syscall_allow_list, "@system-service"),
    ("SystemCallArchitectures", lambda u: _equals(u, "SystemCallArchitectures", "native"),
     "native"),
    ("RestrictAddressFamilies", _families, "AF_UNIX AF_INET AF_INET6"),
    ("DevicePolicy", _devices, "closed (with DeviceAllow= for the GPU)"),
    ("IPAddressDeny", _ip_deny_any, "any (with IPAddressAllow= for the clients)"),
)


def lint_unit(unit: UnitFile, profile: EngineProfile) -> list[Finding]:
    """Every finding of the rules above, in rule order."""
    if not unit.has_section(S):
        raise InputError(f"{unit.path}: no [Service] section: not a service unit")
    linter = _Linter(unit, profile)
    steps: tuple[Callable[[], None], ...] = (
        linter.key_on_argv, linter.key_in_unit, linter.exposure, linter.root_user, linter.umask,
        linter.telemetry, linter.request_logging, linter.restart, linter.directory_modes,
        linter.dev_shm, linter.launch_flags, linter.loaders, linter.devices, linter.hardening)
    for step in steps:
        step()
    return linter.findings
