"""Command lines held by other formats, read as shell at the lines where they sit.

A command line in a Makefile recipe, a Procfile, a systemd unit's ``Exec*=``, tox ``commands``,
supervisord ``command=``, a compose ``command:``/``entrypoint:``, a pre-commit ``entry:``, a CI
workflow's ``run:``/``script:``, a CMake ``execute_process``/``add_custom_command`` or a Python
``os.system``/``subprocess`` call runs in a shell (or as an argv) just as a ``.sh`` file does.
:func:`reading` writes those command lines as one shell text at the file's own line numbers (every
other line blank) so the shell rules fire there with the severity they have in a script. An argv
(``["sh", "-c", SCRIPT]``, CMake ``COMMAND`` arguments, a Python list) becomes its script or its
words joined; several CMake ``COMMAND``s of one ``execute_process`` are the pipeline they are.
Nothing here raises on odd input.
"""

from __future__ import annotations

import ast
import posixpath
import re
import shlex
from collections.abc import Callable, Sequence

import yaml

from auditor.lines import line_ranges as _ranges
from auditor.lines import split_lines
from auditor.scan import cmake, pyast
from auditor.scan.dockerfile import Reading

_SHELLS = frozenset({"sh", "bash", "dash", "ash", "zsh", "ksh"})
_UNIT_SUFFIXES = (".service", ".socket", ".timer", ".path", ".mount", ".swap", ".target")
_EXEC_KEY = re.compile(r"^(\s*)(Exec[A-Za-z]*\s*=\s*)([-@:+!|]*)(.*)$")
_MAKE_ASSIGN = re.compile(r"^(?:export\s+|override\s+)?(\.?[A-Za-z_][A-Za-z0-9_.-]*)\s*"
                          r"([:?+!]*=)\s*(.*)$")
_MAKE_REF = re.compile(r"\$(?:\(([^()]*)\)|\{([^{}]*)\})")
_PROC = re.compile(r"^([A-Za-z0-9_.-]+)(\s*:\s*)(.*)$")
_INI_KEY = re.compile(r"^(\s*)([A-Za-z_][A-Za-z0-9_.-]*)(\s*[=:]\s*)(.*)$")
#: INI keys that hold command lines (tox, supervisord, setup.cfg aliases)
_INI_COMMANDS = frozenset({"commands", "commands_pre", "commands_post", "install_command",
                           "list_dependencies_command", "command", "exec"})
#: YAML keys whose value is a script (each item of a list is a command line)
_YAML_SCRIPTS = frozenset({"run", "script", "scripts", "before_script", "after_script",
                           "before_install", "install", "after_success", "after_failure",
                           "commands", "cmds", "entry", "pre", "post", "shell_command",
                           "pre_build", "post_build", "build_command"})
#: YAML keys whose value is an argv (a list is one command's words)
_YAML_ARGV = frozenset({"command", "entrypoint", "test", "cmd"})
#: JSON files whose keys name commands: npm/composer ``scripts`` (install hooks run on
#: ``npm install``), dev container lifecycle commands (``initializeCommand`` runs on the host),
#: editor tasks
_JSON_NAMES = frozenset({"package.json", "composer.json", "tasks.json", "devcontainer.json",
                         ".devcontainer.json"})
_JSON_COMMANDS = frozenset({"initializeCommand", "onCreateCommand", "updateContentCommand",
                            "postCreateCommand", "postStartCommand", "postAttachCommand",
                            "command"})
#: TOML tables of task runners whose values are command lines
_TOML_TASKS = re.compile(r"^\s*\[\s*(?:tool\.(?:poe\.tasks|pdm\.scripts|taskipy\.tasks|"
                         r"rye\.scripts|hatch\.envs\.[^\]]+\.scripts)|(?:feature\.[^\]]+\.)?"
                         r"tasks|target\.[^\]]+\.tasks)(?:\.[^\]]*)?\s*\]\s*$")
_TOML_STRING = re.compile(r"\"((?:\\.|[^\"\\])*)\"|'([^']*)'")
#: Python calls whose string or list argument is a command line
_PY_CALLS = frozenset({"system", "popen", "call", "run", "check_call", "check_output", "Popen",
                       "spawn", "getoutput", "getstatusoutput", "spawn_process", "run_command"})
# os's exec*/spawn* family: where the program's argv starts among a call's arguments, and
# whether it is spelled out there (l: one argument per word) or handed as one list (v)
_OS_EXEC = {
    **{n: (1, "l") for n in ("execl", "execle", "execlp", "execlpe")},
    **{n: (1, "v") for n in ("execv", "execve", "execvp", "execvpe", "fexecve",
                             "posix_spawn", "posix_spawnp")},
    **{n: (2, "l") for n in ("spawnl", "spawnle", "spawnlp", "spawnlpe")},
    **{n: (2, "v") for n in ("spawnv", "spawnve", "spawnvp", "spawnvpe")},
}
_PY_HINT = re.compile(r"\b(?:os|subprocess|system|popen|spawn|check_call|check_output|"
                      r"getoutput|session|run_command)\b")


def kind_of(path: str, family: str | None) -> str | None:
    """Which command-line format a file is (None: it holds none we read)."""
    name = posixpath.basename(path).lower()
    if family == "python":
        return "python"
    if family == "yaml":
        return "yaml"
    if family == "json" and (name in _JSON_NAMES or ".devcontainer/" in path
                             or name.endswith("devcontainer.json")):
        return "json"
    if name.endswith(".toml"):
        return "toml"
    if name in ("justfile", ".justfile") or name.endswith(".just"):
        return "just"
    if name == "jenkinsfile" or name.endswith((".jenkinsfile", ".groovy")):
        return "jenkins"
    if cmake.is_cmake(path):
        return "cmake"
    if name in ("makefile", "gnumakefile") or name.endswith(".mk") or name.startswith(
            "makefile."):
        return "make"
    if name == "procfile" or name.startswith("procfile."):
        return "procfile"
    if name.endswith(_UNIT_SUFFIXES) or (name.endswith(".conf") and ".service.d/" in path):
        return "systemd"
    if family is None and name.endswith((".ini", ".cfg", ".conf")):
        return "ini"
    return None


def reading(path: str, text: str, family: str | None) -> Reading | None:
    """The shell reading of the command lines ``text`` holds, or None when it holds none."""
    kind = kind_of(path, family)
    if kind is None:
        return None
    lines = split_lines(text)
    out = [""] * len(lines)
    readers: dict[str, Callable[[str, list[str], list[str]], None]] = {
        "python": _python, "yaml": _yaml, "cmake": _cmake, "make": _make,
        "procfile": _procfile, "systemd": _systemd, "ini": _ini, "json": _json,
        "toml": _toml, "just": _just, "jenkins": _jenkins}
    readers[kind](text, lines, out)
    carried = [n + 1 for n, ln in enumerate(out) if ln.strip()]
    if not carried:
        return None
    return Reading("bash", "".join(ln + "\n" for ln in out), _ranges(carried))


def _put(out: list[str], line: int, command: str) -> None:
    """A command at 1-based ``line`` (joined with one already there), on one line."""
    if not 1 <= line <= len(out) or not command.strip():
        return
    flat = command.replace("\r", " ").replace("\n", " ; ")
    out[line - 1] = f"{out[line - 1]} ; {flat}" if out[line - 1].strip() else flat


def argv_line(words: Sequence[str]) -> str:
    """The command an argv runs: the script of ``sh -c SCRIPT`` (or ``CMD-SHELL``), else the
    words joined as a shell line."""
    w = list(words)
    if w and w[0] == "CMD-SHELL":
        return " ".join(w[1:])
    if w and w[0] in ("CMD", "NONE"):
        w = w[1:]
    if w and posixpath.basename(w[0]) == "env":
        w = w[1:]
    if len(w) >= 3 and posixpath.basename(w[0]) in _SHELLS and "-c" in w[1:-1]:
        return w[w.index("-c") + 1]
    return shlex.join(w)


# -- Makefiles ---------------------------------------------------------------------------------

def _make(text: str, lines: list[str], out: list[str]) -> None:
    variables: dict[str, str] = {}
    prefix = "\t"
    in_recipe = False
    continued = False
    for n, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r")
        if continued and in_recipe:
            out[n - 1] = _make_words(line, variables)
            continued = line.endswith("\\")
            continue
        if line.startswith(prefix) and in_recipe:
            body = line[len(prefix):].lstrip(" \t@-+")
            out[n - 1] = _make_words(body, variables)
            continued = line.endswith("\\")
            continue
        continued = False
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        m = _MAKE_ASSIGN.match(stripped)
        if m:
            name, value = m.group(1), m.group(3)
            if name == ".RECIPEPREFIX":
                prefix = value[:1] or "\t"
            variables[name] = value
            if m.group(2) == "!=":  # VAR != command: a shell command at parse time
                _put(out, n, _make_words(value, variables))
            else:
                for sm in re.finditer(r"\$\(shell\s+", value):
                    inner = _make_balanced(value, sm.end())
                    _put(out, n, _make_words(inner, variables))
            in_recipe = False
            continue
        if ":" in stripped and not stripped.startswith(("ifeq", "ifneq", "ifdef", "ifndef",
                                                         "else", "endif", "include", "-include",
                                                         "define", "endef", "export", "vpath")):
            in_recipe = True
            head, _, rest = stripped.partition(";")
            if rest.strip():
                _put(out, n, _make_words(rest, variables))
            for sm in re.finditer(r"\$\(shell\s+", head):
                _put(out, n, _make_words(_make_balanced(head, sm.end()), variables))
            continued = rest.endswith("\\")


def _make_balanced(s: str, i: int) -> str:
    depth = 1
    j = i
    while j < len(s):
        if s[j] == "(":
            depth += 1
        elif s[j] == ")":
            depth -= 1
            if depth == 0:
                return s[i:j]
        j += 1
    return s[i:]


def _make_words(body: str, variables: dict[str, str], depth: int = 0) -> str:
    """A recipe line as the shell gets it: make's references expanded, ``$$`` made ``$``."""
    def ref(m: re.Match[str]) -> str:
        inner = m.group(1) if m.group(1) is not None else m.group(2)
        if inner.startswith("shell "):
            return "$(" + _make_words(inner[6:], variables, depth + 1) + ")"
        if inner in variables and depth < 4:
            return _make_words(variables[inner], variables, depth + 1)
        return "${MAKE_" + re.sub(r"[^A-Za-z0-9_]", "_", inner)[:40] + "}"

    body = body.replace("$$", "\0")
    body = _MAKE_REF.sub(ref, body)
    return body.replace("\0", "$")


# -- Procfile, systemd units, INI files ---------------------------------------------------------

def _procfile(text: str, lines: list[str], out: list[str]) -> None:
    for n, line in enumerate(lines, start=1):
        m = _PROC.match(line)
        if m and not line.lstrip().startswith("#"):
            out[n - 1] = " " * (len(m.group(1)) + len(m.group(2))) + m.group(3)


def _systemd(text: str, lines: list[str], out: list[str]) -> None:
    continued = False
    for n, line in enumerate(lines, start=1):
        if continued:
            out[n - 1] = line
            continued = line.rstrip().endswith("\\")
            continue
        m = _EXEC_KEY.match(line)
        if m:
            out[n - 1] = " " * (len(m.group(1)) + len(m.group(2)) + len(m.group(3))) + m.group(4)
            continued = line.rstrip().endswith("\\")


def _ini(text: str, lines: list[str], out: list[str]) -> None:
    """``commands =`` and ``command=`` keys with their indented continuation lines."""
    key_indent: int | None = None
    for n, line in enumerate(lines, start=1):
        stripped = line.strip()
        indent = len(line) - len(line.lstrip())
        if key_indent is not None and stripped and indent > key_indent and not stripped.startswith(
                ("#", ";")):
            out[n - 1] = line
            continue
        if stripped and not stripped.startswith(("#", ";")):
            key_indent = None
        m = _INI_KEY.match(line)
        if m and m.group(2).lower() in _INI_COMMANDS:
            key_indent = len(m.group(1))
            out[n - 1] = " " * (len(m.group(1)) + len(m.group(2)) + len(m.group(3))) + m.group(4)


# -- YAML: compose, CI workflows, pre-commit, task runners ----------------------------------------

def _yaml(text: str, lines: list[str], out: list[str]) -> None:
    try:
        docs = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except (yaml.YAMLError, ValueError, RecursionError):
        _yaml_lines(lines, out)
        return
    seen: set[int] = set()
    for doc in docs:
        if doc is not None:
            _walk(doc, lines, out, seen)
    for k, ln in enumerate(out):  # a CI expression (`${{ matrix.python }}`) is a value
        if "${{" in ln:
            out[k] = _CI_EXPR.sub("${CI_EXPRESSION}", ln)


def _walk(node: yaml.Node, lines: list[str], out: list[str], seen: set[int]) -> None:
    if id(node) in seen:
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys = {k.value: v for k, v in node.value if isinstance(k, yaml.ScalarNode)}
        skip = _not_shell(keys)
        for k, v in node.value:
            name = k.value if isinstance(k, yaml.ScalarNode) else None
            if name in skip:
                continue
            if name in _YAML_SCRIPTS:
                _script(v, lines, out)
            elif name in _YAML_ARGV:
                args = keys.get("args") if name in ("command", "entrypoint") else None
                _argv(v, args, out)
            if isinstance(v, (yaml.MappingNode, yaml.SequenceNode)):
                _walk(v, lines, out, seen)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            _walk(item, lines, out, seen)


def _not_shell(keys: dict[str, yaml.Node]) -> frozenset[str]:
    """Keys of a GitHub Actions step that hold no shell: the inputs of actions/github-script
    (JavaScript), and ``run:`` under a ``shell:`` that is no POSIX shell (python, pwsh, cmd)."""
    skip: set[str] = set()
    uses, shell = keys.get("uses"), keys.get("shell")
    if isinstance(uses, yaml.ScalarNode) and "github-script" in str(uses.value):
        skip.add("with")
    if isinstance(shell, yaml.ScalarNode):
        prog = str(shell.value).split()[0] if str(shell.value).split() else ""
        if posixpath.basename(prog) not in _SHELLS:
            skip.add("run")
    return frozenset(skip)


def _script(node: yaml.Node, lines: list[str], out: list[str]) -> None:
    if isinstance(node, yaml.SequenceNode):
        for item in node.value:
            if isinstance(item, yaml.ScalarNode):
                _scalar(item, lines, out)
    elif isinstance(node, yaml.ScalarNode):
        _scalar(node, lines, out)


def _scalar(node: yaml.ScalarNode, lines: list[str], out: list[str]) -> None:
    """A script scalar: a block scalar line by line at its own lines, any other on its first."""
    if node.style in ("|", ">"):
        first, last = node.start_mark.line + 1, node.end_mark.line  # 0-based, body lines
        body = lines[first:last + 1]
        indent = next((len(b) - len(b.lstrip()) for b in body if b.strip()), 0)
        # the body ends before the first line indented less (the end mark may sit on it)
        cut = next((k for k, b in enumerate(body)
                    if b.strip() and len(b) - len(b.lstrip()) < indent), len(body))
        body = body[:cut]
        for k, b in enumerate(body):
            if not b.strip():
                continue
            text = b[indent:]
            if node.style == ">" and k + 1 < len(body) and body[k + 1].strip():
                text += " \\"
            if first + k < len(out):
                out[first + k] = text
        return
    _put(out, node.start_mark.line + 1, str(node.value))


def _argv(node: yaml.Node, args: yaml.Node | None, out: list[str]) -> None:
    words = _strings(node)
    if words is None:
        return
    if isinstance(node, yaml.ScalarNode) and args is None:
        _put(out, node.start_mark.line + 1, words[0])
        return
    extra = _strings(args) if args is not None else None
    _put(out, node.start_mark.line + 1, argv_line(words + (extra or [])))


def _strings(node: yaml.Node) -> list[str] | None:
    if isinstance(node, yaml.ScalarNode):
        return [str(node.value)]
    if isinstance(node, yaml.SequenceNode):
        return [str(i.value) for i in node.value if isinstance(i, yaml.ScalarNode)]
    return None


_CI_EXPR = re.compile(r"\$\{\{.*?\}\}")
_YAML_KEY = re.compile(r"^\s*(?:-\s+)?[\"']?([A-Za-z_][A-Za-z0-9_-]*)[\"']?\s*:\s+(\S.*)$")


def _yaml_lines(lines: list[str], out: list[str]) -> None:
    """YAML that does not parse (templated): ``key: command`` lines of the command keys."""
    for n, line in enumerate(lines, start=1):
        m = _YAML_KEY.match(line)
        if m and m.group(1) in (_YAML_SCRIPTS | _YAML_ARGV) and m.group(2)[:1] not in "|>":
            value = m.group(2).strip()
            if value[:1] in "\"'" and value[-1:] == value[:1]:
                value = value[1:-1]
            _put(out, n, value)


# -- CMake ---------------------------------------------------------------------------------------

def _cmake(text: str, lines: list[str], out: list[str]) -> None:
    variables: dict[str, str] = {}
    for c in cmake.commands(text):
        if c.name == "set" and c.args:
            variables[c.args[0].value] = " ".join(a.value for a in c.args[1:])
            continue
        pipeline = c.name == "execute_process"
        groups = _command_groups(c)
        words = [[_cmake_expand(a.value, variables) for a in g] for g in groups]
        if pipeline and words:
            _put(out, groups[0][0].line, " | ".join(argv_line(w) for w in words if w))
            continue
        for g, w in zip(groups, words, strict=True):
            if w:
                _put(out, g[0].line, argv_line(w))


def _command_groups(c: cmake.Command) -> list[list[cmake.Arg]]:
    """The argument lists after each ``COMMAND`` (or ``*_COMMAND``) keyword."""
    groups: list[list[cmake.Arg]] = []
    current: list[cmake.Arg] | None = None
    for a in c.args:
        if not a.quoted and (a.value == "COMMAND" or a.value.endswith("_COMMAND")):
            current = []
            groups.append(current)
        elif cmake.is_keyword(a):
            current = None
        elif current is not None:
            current.append(a)
    return [g for g in groups if g]


def _cmake_expand(value: str, variables: dict[str, str]) -> str:
    return re.sub(r"\$\{([A-Za-z0-9_]+)\}",
                  lambda m: variables.get(m.group(1), m.group(0)), value)


# -- Python: os.system, subprocess, spawn -----------------------------------------------------------

def _python(text: str, lines: list[str], out: list[str]) -> None:
    """The command lines a Python file runs, at the lines of the calls that run them. Only
    what a call runs is read: a message that is only shown (``raise ValueError("... vllm serve
    ...")``, a log line, help text, a docstring) is no command. A name given to the call is
    followed to the list or string last assigned to it before the call (with its ``+=``,
    ``.append`` and ``.extend`` additions)."""
    if not _PY_HINT.search(text):
        return
    try:
        tree = pyast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return
    names = _py_assignments(tree)
    for node in pyast.walk(tree):
        if isinstance(node, ast.Call):
            command = _py_command(node, names)
            if command is not None:
                _put(out, node.lineno, command)


#: a name's values: (line, words or None for a string, the string)
_Values = dict[str, list[tuple[int, list[str] | None, str | None]]]


def _py_assignments(tree: ast.AST) -> _Values:
    """Lists and strings assigned to plain names, in line order, with their later additions."""
    found: list[tuple[int, str, str, ast.expr]] = []  # (line, name, how, value)
    for node in pyast.walk(tree):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
                node.targets[0], ast.Name):
            found.append((node.lineno, node.targets[0].id, "=", node.value))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and \
                node.value is not None:
            found.append((node.lineno, node.target.id, "=", node.value))
        elif isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and \
                isinstance(node.op, ast.Add):
            found.append((node.lineno, node.target.id, "+", node.value))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                isinstance(node.func.value, ast.Name) and node.func.attr in (
                    "append", "extend") and len(node.args) == 1:
            value = node.args[0]
            if node.func.attr == "append":
                value = ast.List(elts=[value], ctx=ast.Load())
            found.append((node.lineno, node.func.value.id, "+", value))
    out: _Values = {}
    for line, name, how, value in sorted(found, key=lambda f: f[0]):
        words = _py_words(value)
        string = _py_str(value) if words is None else None
        if how == "=":
            if words is None and string is None:
                out.setdefault(name, []).append((line, None, None))  # something else now
            else:
                out.setdefault(name, []).append((line, words, string))
        elif out.get(name) and words is not None and out[name][-1][1] is not None:
            last = out[name][-1]
            out[name].append((line, [*(last[1] or []), *words], None))
    return out


def _py_words(node: ast.expr, names: _Values | None = None, line: int = 0) -> list[str] | None:
    """An argv list's words (a value the file does not spell is ``${PY_VALUE}``;
    ``sys.executable`` is the interpreter; a name holding a string, that string)."""
    if not isinstance(node, (ast.List, ast.Tuple)):
        return None
    words: list[str] = []
    for e in node.elts:
        if isinstance(e, ast.Starred):
            words.append("${PY_VALUE}")
            continue
        w = _py_str(e)
        if w is None and isinstance(e, ast.Name) and names:
            w = _py_value(e, names, line)[1]
        if w is None and isinstance(e, ast.Attribute) and e.attr == "executable":
            w = "python3"
        words.append("${PY_VALUE}" if w is None else w)
    return words


def _py_value(node: ast.expr, names: _Values, line: int) -> tuple[list[str] | None, str | None]:
    """(argv words, shell string) a call's argument holds: spelled there, or the value last
    assigned to the name before the call."""
    if isinstance(node, ast.Name):
        before = [v for v in names.get(node.id, []) if v[0] < line]
        if before:
            return before[-1][1], before[-1][2]
        return None, None
    words = _py_words(node, names, line)
    return (words, None) if words is not None else (None, _py_str(node))


def _py_command(node: ast.Call, names: _Values | None = None) -> str | None:
    """The command line a call runs: a string (a shell line), a list (an argv), or several
    string arguments (``session.run("pip", "install", ...)``, ``os.execlp``)."""
    func = node.func
    name = func.attr if isinstance(func, ast.Attribute) else (
        func.id if isinstance(func, ast.Name) else "")
    if name in _OS_EXEC:
        return _os_exec_command(name, node, names or {})
    if name not in _PY_CALLS:
        return None
    args = list(node.args)
    if not args:
        args = [k.value for k in node.keywords if k.arg in ("args", "cmd", "command")][:1]
    if not args:
        return None
    words, command = _py_value(args[0], names or {}, node.lineno)
    if words is not None:
        spelled = [w for w in words if w != "${PY_VALUE}"]
        return argv_line(words) if spelled else None
    if command is None:
        return None
    rest = [r for r in (_py_str(a) for a in node.args[1:]) if r is not None]
    if name in ("run", "run_command") and rest and len(rest) == len(node.args) - 1:
        return argv_line([command, *rest])
    return command


def _os_exec_command(name: str, node: ast.Call, names: _Values) -> str | None:
    """The argv an ``os.exec*``/``os.spawn*``/``os.posix_spawn*`` call starts: the words from
    where its argv begins (``execl(path, arg0, ...)``, ``spawnv(mode, path, argv)``), without
    the environment the ``e`` forms take last; a word that is not spelled out is a placeholder."""
    start, form = _OS_EXEC[name]
    if form == "v":
        if len(node.args) <= start:
            return None
        words, _ = _py_value(node.args[start], names, node.lineno)
    else:
        given = node.args[start:-1] if "e" in name[5:] else node.args[start:]
        words = [w if w is not None else "${PY_VALUE}" for w in (_py_str(a) for a in given)]
    if not words or all(w == "${PY_VALUE}" for w in words):
        return None
    return argv_line(words)


def _py_str(node: ast.expr) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.Constant) and isinstance(node.value, bytes):
        # a C function's argument (ctypes: ``libc.system(b"...")``), or os's bytes paths
        return node.value.decode("utf-8", "replace")
    if isinstance(node, ast.JoinedStr):
        parts: list[str] = []
        for v in node.values:
            if isinstance(v, ast.Constant) and isinstance(v.value, str):
                parts.append(v.value)
            else:
                parts.append("${PY_VALUE}")
        return "".join(parts)
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Add, ast.Mod)):
        left = _py_str(node.left)
        right = _py_str(node.right) if isinstance(node.op, ast.Add) else ""
        if left is not None:
            return left + (right if right is not None else "${PY_VALUE}")
    return None


# -- JSON: package scripts, dev containers, editor tasks --------------------------------------

def _json(text: str, lines: list[str], out: list[str]) -> None:
    try:
        doc = yaml.compose(text, Loader=yaml.SafeLoader)
    except (yaml.YAMLError, ValueError, RecursionError):
        doc = None
    if doc is None:
        _yaml_lines(lines, out)
        return
    stack: list[yaml.Node] = [doc]
    seen: set[int] = set()
    while stack:
        node = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, yaml.SequenceNode):
            stack.extend(node.value)
        if not isinstance(node, yaml.MappingNode):
            continue
        for k, v in node.value:
            name = k.value if isinstance(k, yaml.ScalarNode) else None
            if name == "scripts" and isinstance(v, yaml.MappingNode):
                for _k, script in v.value:
                    _script(script, lines, out)
            elif name in _JSON_COMMANDS:
                targets = [x for _k, x in v.value] if isinstance(v, yaml.MappingNode) else [v]
                for t in targets:
                    _argv(t, None, out)
            stack.append(v)


# -- TOML task runners, justfiles, Jenkinsfiles -------------------------------------------------

def _toml(text: str, lines: list[str], out: list[str]) -> None:
    """The string values of task-runner tables (poe, pdm, hatch, taskipy, rye, pixi)."""
    in_tasks = False
    for n, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped.startswith("["):
            in_tasks = bool(_TOML_TASKS.match(line))
            continue
        if not in_tasks or not stripped or stripped.startswith("#"):
            continue
        key, eq, value = stripped.partition("=")
        if eq and re.match(r"^\s*(?:help|description|env|cwd|deps|depends[-_]on|inputs|"
                           r"outputs|args|envfile|capture_stdout)\s*$", key):
            continue
        if eq and ("{" in value or not value.strip().startswith("[")):
            # `t = "cmd"`, `t = {cmd = "..."}`, `cmd = "..."` inside a task's own table
            inner = re.search(r"(?:\b(?:cmd|shell|script|call)\s*=\s*|^\s*)(\"(?:\\.|[^\"\\])*\"|"
                              r"'[^']*')", value)
            if inner:
                _put(out, n, _toml_str(inner.group(1)))
            continue
        for m in _TOML_STRING.finditer(value if eq else stripped):  # a list: one per item
            _put(out, n, m.group(1) if m.group(1) is not None else m.group(2))


def _toml_str(quoted: str) -> str:
    if quoted.startswith("'"):
        return quoted[1:-1]
    return re.sub(r"\\(.)", lambda m: {"n": " ; ", "t": " "}.get(m.group(1), m.group(1)),
                  quoted[1:-1])


def _just(text: str, lines: list[str], out: list[str]) -> None:
    """Recipe bodies: the indented lines after a ``name args:`` line."""
    in_recipe = False
    for n, line in enumerate(lines, start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        if line[:1] in " \t" and in_recipe:
            body = line.strip().lstrip("@-")
            out[n - 1] = re.sub(r"\{\{.*?\}\}", "${JUST_VALUE}", body)
            continue
        in_recipe = bool(re.match(r"^@?[A-Za-z_][\w-]*[^=]*:(?!=)", line))


_GROOVY_SH = re.compile(r"\b(?:sh|bash)\s*\(?\s*(?:script\s*:\s*)?('\''|\"\"\"|'|\")")


def _jenkins(text: str, lines: list[str], out: list[str]) -> None:
    """``sh '...'``, ``sh \"\"\"...\"\"\"``, ``sh(script: '...')`` steps: each body line at its
    line."""
    for m in _GROOVY_SH.finditer(text):
        quote = m.group(1)
        start = m.end()
        end = text.find(quote, start)
        while end > 0 and len(quote) == 1 and text[end - 1] == "\\":
            end = text.find(quote, end + 1)
        body = text[start:end if end >= 0 else len(text)]
        first = text.count("\n", 0, start)
        for k, ln in enumerate(body.split("\n")):
            if ln.strip() and first + k < len(out):
                _put(out, first + k + 1, re.sub(r"\$\{[^}]*\}", "${GROOVY_VALUE}", ln.strip()))
