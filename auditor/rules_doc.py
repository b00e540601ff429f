"""The rule pages (``docs/rules/<id>.md``) and the rule help the SARIF log carries.

One page per semgrep rule and per bandit test the scan runs, generated from the rule's own
metadata (its message, category, severity and help) with a hostile and a benign example taken from
the rule's fixtures (``policies/semgrep/fixtures``: the line after ``ruleid:`` / ``ok:``); one page
per family of the other stages' rules (``provenance``, ``build``, ``dependency``, ``service``,
``review.*``, ``policy.*``, the builtin scanner's) and one per category, so every rule id has a page:
:func:`page_for` picks the rule's own page, else the longest dotted prefix that has one, else its
category's.

The pages are committed; ``tests/core/test_rules_doc.py`` checks that they are what this module
writes. Regenerate them with ``python -m auditor.rules_doc docs/rules``.

Where the pages live: SARIF wants absolute URIs for ``tool.driver.informationUri`` and a rule's
``helpUri`` (SARIF 2.1.0 §3.19.17, §3.49.12; ``originalUriBaseIds`` resolves artifact locations,
not help links), so both are :data:`HOMEPAGE` (``[project.urls] Homepage`` in pyproject.toml) plus
the page's path in the repository. The full page text also rides in ``help.markdown``, so a viewer
shows it without following the link.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from auditor.model import Category, Severity

#: the project's home (pyproject.toml ``[project.urls] Homepage``; a test keeps the two equal).
#: ``.invalid`` is reserved (RFC 2606): whoever publishes the project sets the real address here.
HOMEPAGE = "https://auditor.invalid/"
DOCS_PATH = "docs/rules"
#: the longest example line shown on a page
EXAMPLE_MAX = 160

WHY: Mapping[Category, str] = {
    Category.NETWORK: "An inference server holds prompts, completions and credentials; an outbound "
                      "connection its operator did not configure can carry any of them away, or "
                      "fetch code to run.",
    Category.SECRET_ACCESS: "The server's API key, hub tokens and cloud credentials are in its "
                            "environment and files; code that reads them and sends, logs or "
                            "writes them hands the server to someone else.",
    Category.PROMPT_LOGGING: "Prompts and completions are the users' data; written to a log, the "
                             "console or a file they outlive the request and leave the server.",
    Category.UNSAFE_DESERIALIZATION: "pickle-like loaders run code while they load: data from a "
                                     "socket, shared memory or a download becomes code running "
                                     "with the server's GPUs, keys and models.",
    Category.TELEMETRY: "Usage statistics leave the server by design; a patch that adds, redirects "
                        "or un-disables them sends deployment details to a third party.",
    Category.PROCESS_EXEC: "Running processes, evaluating strings or loading native code lets a "
                           "patch do anything the server's user can, out of sight of a code "
                           "review of the Python.",
    Category.OBFUSCATION: "Code that hides what it does (decoded blobs executed, names built at "
                          "run time) is written to pass review; legitimate engine code has no "
                          "reason to.",
    Category.BINARY_ARTIFACT: "A prebuilt binary cannot be reviewed and was not built from the "
                              "audited source; on a GPU server it runs with everything the "
                              "server holds.",
    Category.CONTAINER_PRIVILEGE: "A privileged container, host namespaces or the Docker socket "
                                  "give the engine's container the host: its GPUs, other tenants' "
                                  "models and keys.",
    Category.API_EXPOSURE: "An OpenAI-compatible API without a key on a public interface is free "
                           "compute and data for anyone who finds it; a key on the command line "
                           "is readable in /proc and logs.",
    Category.FILESYSTEM: "Fixed names in shared temporary folders and world-writable modes let "
                         "another local user swap or read what the server writes (models, "
                         "sockets, caches).",
    Category.DEPENDENCY: "A new, repinned or vulnerable dependency, or a new package index, brings "
                         "code nobody reviewed into the server's environment.",
    Category.POLICY: "The audit's own policy decides what blocks; a waiver past its date or one "
                     "that names nothing means the accepted risk is no longer what was reviewed.",
    Category.SERVICE: "The systemd unit is the server's last line of defence: without hardening a "
                      "compromised engine owns the host.",
    Category.PROVENANCE: "What is deployed must be exactly upstream plus the reviewed commits; "
                         "anything else in the bundle was never reviewed.",
}


@dataclass(frozen=True)
class RuleDoc:
    id: str
    title: str  # one sentence: what the rule finds
    category: Category | None
    severity: Severity | None
    what: str
    check: str  # what a reviewer should check or do
    hostile: str = ""
    benign: str = ""
    language: str = ""  # of the examples (a fence info string)
    family: bool = False  # the page covers every rule id under this one
    why_text: str = ""  # when the category's reason is not this rule's

    @property
    def why(self) -> str:
        if self.why_text:
            return self.why_text
        return WHY[self.category] if self.category is not None else ""


_METAVAR = re.compile(r"\$[A-Z_][A-Z0-9_]*")


def plain(text: str) -> str:
    """A rule message as prose: one line, semgrep's metavariables (``$CALL``) as "…"."""
    return _METAVAR.sub("…", " ".join(text.split()))


def sentence(text: str) -> str:
    """``text`` as one sentence: its first line up to the first full stop, with a final period."""
    one = plain(text)
    m = re.search(r"(?<=[a-z0-9)\]'\"])\.\s", one)
    if m:
        one = one[:m.start()]
    one = one.rstrip(". ")
    if one.endswith("…"):  # a metavariable at the end: "the variable $NAME" -> "the variable."
        one = one[:-1].rstrip(" .")
    if not one:
        return ""
    code_first = re.match(r"\S*[._(*]", one) is not None  # "torch.load …" stays as spelled
    return (one if code_first else one[:1].upper() + one[1:]) + "."


# ---------------------------------------------------------------- semgrep rules and fixtures

_ANNOTATION = re.compile(r"(?:#|//|--|;)\s*(ruleid|ok)\s*:\s*([a-z0-9.,_ -]+)")


def fixture_examples(fixtures_dir: Path) -> dict[str, dict[str, tuple[str, str]]]:
    """rule id -> {"ruleid"|"ok": (line, language)}: the first line each annotation stands before."""
    out: dict[str, dict[str, tuple[str, str]]] = {}
    for path in sorted(p for p in fixtures_dir.rglob("*") if p.is_file()):
        lang = _fence(path)
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        for n, line in enumerate(lines):
            m = _ANNOTATION.match(line.lstrip())
            if not m:
                continue
            nxt = next((x for x in lines[n + 1:]
                        if x.strip() and not _ANNOTATION.match(x.lstrip())), "")
            for rule in (r.strip() for r in m.group(2).split(",")):
                if rule and nxt:
                    out.setdefault(rule, {}).setdefault(m.group(1), (_cut(nxt.strip()), lang))
    return out


def _fence(path: Path) -> str:
    name = path.name
    for end, lang in ((".py", "python"), (".sh", "sh"), (".dockerfile", "dockerfile"),
                      (".yaml", "yaml"), (".yml", "yaml"), (".cpp", "cpp"), (".c", "c"),
                      (".cu", "cpp"), (".cmake", "cmake"), (".txt", "text")):
        if name.endswith(end):
            return lang
    return "text"


def _cut(line: str) -> str:
    return line if len(line) <= EXAMPLE_MAX else line[:EXAMPLE_MAX - 1] + "…"


def semgrep_docs() -> list[RuleDoc]:
    from auditor.scan.rules import FIXTURES_DIR, RULES_DIR, load_rule_meta

    examples = fixture_examples(FIXTURES_DIR)
    out = []
    for rule_id, meta in sorted(load_rule_meta(RULES_DIR).items()):
        ex = examples.get(rule_id, {})
        hostile, lang = ex.get("ruleid", ("", ""))
        benign, lang_ok = ex.get("ok", ("", ""))
        out.append(RuleDoc(id=rule_id, title=sentence(meta.message), category=meta.category,
                           severity=meta.severity, what=plain(meta.message),
                           check=" ".join(meta.help.split()), hostile=hostile, benign=benign,
                           language=lang or lang_ok,
                           family=rule_id.endswith(".package-source")))
    return out


# ---------------------------------------------------------------- bandit tests

#: bandit test -> (what it finds, a hostile line, a benign line)
_BANDIT: Mapping[str, tuple[str, str, str]] = {
    "B102": ("Runs exec() on a string.", "exec(base64.b64decode(blob))", "exec_prefix = sys.exec_prefix"),
    "B103": ("Sets a mode with chmod that lets others write or execute.",
             "os.chmod(sock_path, 0o777)", "os.chmod(key_path, 0o600)"),
    "B108": ("A fixed path in a shared temporary folder.",
             'open("/tmp/vllm_kv.bin", "wb")', "tempfile.mkstemp(dir=private_dir)"),
    "B113": ("Calls requests: an outbound HTTP request (also flagged without a timeout).",
             'requests.post("https://collector.example.net", json=stats)',
             "urllib.parse.urlsplit(base_url)"),
    "B202": ("Extracts with tarfile.extractall without a filter: members may write outside the folder.",
             "tarfile.open(path).extractall(dest)",
             'tarfile.open(path).extractall(dest, filter="data")'),
    "B301": ("Loads data with pickle (or cPickle, dill, shelve).", "pickle.loads(sock.recv(65536))",
             "json.loads(sock.recv(65536))"),
    "B302": ("Loads data with marshal.", "marshal.loads(payload)", "json.loads(payload)"),
    "B306": ("Takes a temporary name with tempfile.mktemp: another process can take it first.",
             "path = tempfile.mktemp()", "fd, path = tempfile.mkstemp()"),
    "B307": ("Runs eval() on a string.", "eval(request.args['expr'])",
             "ast.literal_eval(config_text)"),
    "B310": ("Opens a URL with urllib.request.urlopen: an outbound request to any scheme.",
             "urllib.request.urlopen(report_url, data=body)", "urllib.parse.quote(name)"),
    "B312": ("Opens a cleartext remote session (telnetlib).", "telnetlib.Telnet(host)",
             "socket.gethostname()"),
    "B321": ("Transfers files in cleartext (ftplib).", "ftplib.FTP(host).login()",
             "shutil.copyfile(src, dst)"),
    "B506": ("Loads YAML without a safe loader: YAML tags can build objects.",
             "yaml.load(text, Loader=yaml.Loader)", "yaml.safe_load(text)"),
    "B601": ("Runs a command on another host (paramiko exec_command).",
             "client.exec_command(cmd)", "shlex.quote(cmd)"),
    "B602": ("Runs a subprocess with shell=True.", "subprocess.run(cmd, shell=True)",
             'subprocess.run(["nvidia-smi", "-L"])'),
    "B603": ("Runs a subprocess without a shell (still a process the engine starts).",
             'subprocess.Popen(["curl", url])', "shutil.which(\"nvcc\")"),
    "B604": ("A function called with shell=True.", "run_tool(cmd, shell=True)",
             "run_tool(cmd, shell=False)"),
    "B605": ("Runs a command through the shell (os.system, os.popen).",
             'os.system("curl " + url + " | sh")', "os.getpid()"),
    "B606": ("Starts a process without a shell (os.exec*, os.spawn*).",
             'os.execv("/bin/sh", ["sh", "-c", cmd])', "os.cpu_count()"),
    "B607": ("A process started by a partial path (found on PATH).",
             'subprocess.run(["curl", url])', 'subprocess.run(["/usr/bin/nvidia-smi"])'),
    "B609": ("A wildcard in a shell command (argument injection).",
             'os.system("tar czf out.tgz *")', 'subprocess.run(["tar", "czf", "out.tgz", dirname])'),
    "B612": ("Listens on a socket for logging configuration, which is code (logging.config.listen).",
             "logging.config.listen(9999).start()", "logging.config.dictConfig(conf)"),
    "B613": ("Bidirectional control characters that make code read differently than it runs "
             "(trojan source).", r'access = "user\u202e \u2066# admin\u2069 \u2066"  (the characters, not escapes)',
             'access = "user"'),
    "B614": ("Loads a checkpoint with torch.load without weights_only=True: pickle runs.",
             "torch.load(path)", "torch.load(path, weights_only=True)"),
}


def bandit_docs() -> list[RuleDoc]:
    from auditor.scan.bandit import TESTS

    out = []
    for test_id, (category, short) in sorted(TESTS.items()):
        what, hostile, benign = _BANDIT.get(test_id, (f"bandit {test_id} ({short}).", "", ""))
        out.append(RuleDoc(
            id=f"{category.value}.bandit.{test_id.lower()}-{short}", title=sentence(what),
            category=category, severity=None, what=f"bandit's test {test_id} ({short}): {what}",
            check="See where the value comes from and where it goes; bandit's severity is the "
                  "finding's. bandit complements the semgrep rules of the same category.",
            hostile=hostile, benign=benign, language="python"))
    return out


# ---------------------------------------------------------------- the other stages' rules

_REVIEW_WHY = ("Every changed line of the series reaches the GPU server. The scanners find known "
               "patterns; a reviewer who read the hunk vouches for its intent, and a hunk nobody "
               "read is code nobody vouched for.")


_FAMILIES: tuple[RuleDoc, ...] = (
    RuleDoc("provenance", "The bundle carries something the tree proof flags for a reviewer.",
            Category.PROVENANCE, None,
            "The verify stage's anomalies: a binary or opaque file added, an executable, setuid, "
            "setgid or sticky bit, a symlink, a gitlink, .gitattributes, an LFS pointer, a .git "
            "folder in the bundle, an archive entry that changes another, a world-writable mode "
            "(`provenance.<kind>`).",
            "Open the file in the bundle and its commit; a mode change needs a reason.",
            "100755 scripts/run_docker.sh   (executable bit set by the series)",
            "100644 scripts/run_docker.sh   (run as `sh scripts/run_docker.sh`)", "text", True),
    RuleDoc("build", "The build stage found something the audited source does not explain.",
            Category.BINARY_ARTIFACT, None,
            "`build.bundle-binary`: a binary of the series that nothing builds (left out of the "
            "wheel); `build.toolchain-mismatch`: the toolchain differs from the recipe's pin; "
            "`build.unclaimed-native-source`: native source no build target claims; "
            "`build.abi-weak-symbols-missing`: the built module lacks symbols the official one has; "
            "`build.abi-kernel-symbols-hidden`: CUDA kernels (and their host stubs) the official "
            "module exports are hidden in the built one, and nothing else in the wheel imports them; "
            "`build.differs-from-official`: the built module's registered ops, exported symbols, "
            "needed libraries or GPU archs differ from the official module's (read statically).",
            "Build the module from source or remove the binary; pin the recipe's toolchain.",
            "tinyllm/_C_sm86.so   (85 bytes, added by the series, built by no recipe target)",
            "csrc/rmsnorm.cu   (compiled here by the recipe's nvcc target)", "text", True),
    RuleDoc("dependency", "A dependency of the deployed surface changed or is at risk.",
            Category.DEPENDENCY, None,
            "The deps stage: `dependency.added`, `removed`, `changed`, `downgraded`, `loosened`, "
            "`repinned`, `direct-url`, `new-index`, `typosquat`, `vulnerable` (an OSV advisory), "
            "`unpinned-fetch` (CMake/URL fetches without a hash), `not-in-lock`, `lock-drift`; "
            "the builtin scanner's `dependency.builtin.*` read pip/uv/conda configuration.",
            "Check the package, its version and where it comes from; pin it with a hash.",
            "fasttok @ https://files.example.net/fasttok-0.1.tar.gz", "fasttok==0.4.2 --hash=sha256:…",
            "text", True),
    RuleDoc("service", "The service unit lacks a hardening setting or exposes the key.",
            Category.SERVICE, None,
            "The unit stage's lint of the rendered (or given) systemd unit (`service.<setting>`), "
            "with `systemd-analyze security` for the exposure score.",
            "Set the directive the finding names, or say in a waiver why the host needs it.",
            "ExecStart=/opt/vllm/bin/vllm serve --api-key sk-live-…", "EnvironmentFile=/etc/vllm/api-key.env",
            "ini", True),
    RuleDoc("review.unsigned", "Changed hunks of one area that no reviewer signed off.",
            Category.POLICY, Severity.MEDIUM,
            "With `[review] required = true`, one finding per review area "
            "(`review.unsigned.<area>`) stands for every hunk of that area without a sign-off "
            "that counts; the report lists the hunks (file, lines, commit). It is not a finding "
            "in upstream code: the hunks are the series'.",
            "`auditor review plan` makes the packets; `auditor review sign` records a sign-off. "
            "A sign-off counts only for the hunk's current content.",
            "hunk 535086ddf0c462be tinyllm/shm.py:1-12 (no sign-off)",
            '[[signoff]]  reviewer = "alice", hunk = "535086ddf0c462be", verdict = "ok" (its digest '
            "matching)", "text", True, _REVIEW_WHY),
    RuleDoc("review.concern", "A reviewer marked a hunk as a concern.", Category.POLICY,
            Severity.MEDIUM, "A counted sign-off with `verdict = \"concern\"`: a finding to review "
            "at the hunk's lines.", "Read the note; answer it, then sign the hunk again.",
            'verdict = "concern", note = "why does this post to an outside host?"',
            'verdict = "ok"', "toml", why_text=_REVIEW_WHY),
    RuleDoc("review.blocker", "A reviewer marked a hunk as a blocker.", Category.POLICY,
            Severity.HIGH, "A counted sign-off with `verdict = \"blocker\"`: a blocking finding "
            "at the hunk's lines.", "The series cannot ship until the hunk changes or the "
            "reviewer signs it again.", 'verdict = "blocker", note = "sends the API key out"',
            'verdict = "ok"', "toml", why_text=_REVIEW_WHY),
    RuleDoc("policy.waiver-expired", "A waiver that matched a finding is past its date.",
            Category.POLICY, Severity.HIGH, "The waiver no longer applies; the finding it named "
            "weighs again, and this blocking finding says so.",
            "Re-review the finding, then renew the waiver (a new `expires`) or remove it.",
            "expires = 2020-01-01", "expires = 2027-03-31", "toml"),
    RuleDoc("policy.waiver-unused", "A waiver matches no finding of the audit.", Category.POLICY,
            Severity.INFO, "An info finding per waiver whose rule, path and fingerprint name "
            "nothing any stage found: the code changed, the finding is gone, or the waiver has a "
            "typo.", "Remove the stanza, or write it again with `auditor waive`.",
            'fingerprint = "0123456789abcdef0123456789abcdef"   (matches nothing)',
            'fingerprint = "f3f5550365653727107bf543419580ff"   (a finding of audit.json)',
            "toml"),
)

def family_docs() -> list[RuleDoc]:
    out = list(_FAMILIES)
    for cat in Category:
        out.append(RuleDoc(
            id=f"{cat.value}.builtin", title=f"The builtin scanner's {cat.value} findings.",
            category=cat, severity=None, family=True,
            what=f"Rules of auditor's own scanner (`{cat.value}.builtin.*`): encoded literals, "
                 "source codings, .pth imports, logger and do-not-track settings, package "
                 "configuration — readings semgrep cannot make.",
            check="Open the file at the line and check what it does."))
    return out


def category_docs() -> list[RuleDoc]:
    from auditor.report.sarif import CATEGORY_HELP

    return [RuleDoc(id=cat.value, title=sentence(CATEGORY_HELP[cat]), category=cat, severity=None,
                    what=" ".join(CATEGORY_HELP[cat].split()),
                    check="Open the file at the finding's line and the commit that brought it; "
                          "decide whether the behaviour belongs in an inference server, then "
                          "remove it or waive the finding with a reason.", family=True)
            for cat in Category]


@lru_cache(maxsize=1)
def catalogue() -> Mapping[str, RuleDoc]:
    """Every page, by the rule id (or family prefix) it documents."""
    out: dict[str, RuleDoc] = {}
    for doc in (*category_docs(), *family_docs(), *bandit_docs(), *semgrep_docs()):
        out[doc.id] = doc
    return out


def page_for(rule: str) -> RuleDoc | None:
    """The rule's own page, else the longest dotted prefix with a page, else its category's."""
    docs = catalogue()
    parts = rule.split(".")
    for n in range(len(parts), 0, -1):
        doc = docs.get(".".join(parts[:n]))
        if doc is not None:
            return doc
    return None


def page_path(doc: RuleDoc) -> str:
    return f"{DOCS_PATH}/{doc.id}.md"


def help_uri(doc: RuleDoc) -> str:
    return HOMEPAGE + page_path(doc)


# ---------------------------------------------------------------- the page


def _fenced(text: str, lang: str) -> list[str]:
    fence = "```"
    while fence in text:
        fence += "`"
    return [f"{fence}{lang}", text, fence]


def render_page(doc: RuleDoc) -> str:
    out = [f"# `{doc.id}`" + (" (and the rules under it)" if doc.family else ""), "", doc.title, ""]
    facts = []
    if doc.category is not None:
        facts.append(f"category `{doc.category.value}`")
    if doc.severity is not None:
        facts.append(f"severity `{doc.severity.value}`")
    if facts:
        out += ["- " + ", ".join(facts) + " (the action comes from the policy, "
                "`policies/default.toml`)", ""]
    out += ["## What it finds", "", doc.what or doc.title, ""]
    if doc.why:
        out += ["## Why it matters for an inference server", "", doc.why, ""]
    out += ["## What to check", "", doc.check, ""]
    if doc.hostile or doc.benign:
        out += ["## Examples", ""]
        if doc.hostile:
            out += ["Flagged:", "", *_fenced(doc.hostile, doc.language), ""]
        if doc.benign:
            out += ["Not flagged:", "", *_fenced(doc.benign, doc.language), ""]
    rule = f"rule `{doc.id}`" if not doc.family else "the finding's own rule id"
    out += ["## How to waive", "",
            "Accept one finding, with a reason, an owner and an end date: copy its fingerprint "
            "from report.md, report.html, audit.json or the SARIF `partialFingerprints`, and run",
            "", "```sh",
            "auditor waive audit-out/audit.json --finding FINGERPRINT \\",
            '  --reason "why this is acceptable" --owner you@example.org --expires 2027-03-31 \\',
            "  -o policies/waivers.toml", "```", "",
            f"It writes a `[[waiver]]` stanza ({rule}, the path, the fingerprint) into the "
            "file `[scan] waivers` names. A waiver of a finding merged from several rules on one "
            "line covers them; a waiver that matches nothing is reported as "
            "`policy.waiver-unused`; one past its date blocks (`policy.waiver-expired`).", ""]
    return "\n".join(out)


def render_index(docs: Iterable[RuleDoc]) -> str:
    out = ["# Rules", "", "One page per rule (generated by `python -m auditor.rules_doc docs/rules` "
           "from the rules' metadata and fixtures; do not edit by hand).", "",
           "| rule | finds |", "|---|---|"]
    out += [f"| [`{d.id}`]({d.id}.md) | {d.title} |" for d in sorted(docs, key=lambda d: d.id)]
    return "\n".join(out) + "\n"


def pages() -> dict[str, str]:
    """file name -> content, for every page and the index."""
    docs = catalogue()
    out = {f"{d.id}.md": render_page(d) for d in docs.values()}
    out["README.md"] = render_index(docs.values())
    return out


def write_pages(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    want = pages()
    for old in folder.glob("*.md"):
        if old.name not in want:
            old.unlink()
    for name, text in sorted(want.items()):
        (folder / name).write_text(text, encoding="utf-8")


if __name__ == "__main__":  # python -m auditor.rules_doc docs/rules
    write_pages(Path(sys.argv[1] if len(sys.argv) > 1 else DOCS_PATH))
