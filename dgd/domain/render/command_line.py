"""Reading and rewriting a container's command line (podspec §2 detection, §7.1 flag injection).

Pure functions over a container's ``command``/``args`` lists. Regular expressions follow Go RE2
semantics: ``\\s`` is ASCII whitespace and ``$`` is the end of the text.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from dgd.domain.pod_merge import JSON

FRAMEWORKS = ("vllm", "sglang", "trtllm")
_WS = r"[\t\n\f\r ]"
_PYTHON = re.compile(r"^(.*/)?python\d*(\.\d+)*$")
_DETECT = {
    fw: re.compile(rf"python[0-9.]*{_WS}+[^|&;]*-m{_WS}+[^|&;]*dynamo\.{fw}[^|&;]*") for fw in FRAMEWORKS
}
_BASH_C_SPECIAL = frozenset(" \t\n'\"\\{}[]$`!")
_POSIX_SAFE = re.compile(r"^[A-Za-z0-9_@%+=:,./-]+$")


class DetectionError(ValueError):
    """A worker command line names more than one backend framework."""


def command(container: JSON) -> list[str]:
    return [str(c) for c in container.get("command") or []]


def args(container: JSON) -> list[str]:
    return [str(a) for a in container.get("args") or []]


def detect_framework(container: JSON) -> str | None:
    """The ``dynamo.<framework>`` module a container runs (``python -m dynamo.vllm``), if any."""
    line = " ".join([*command(container), *args(container)])
    found = [fw for fw, pattern in _DETECT.items() if pattern.search(line)]
    if len(found) > 1:
        raise DetectionError(f"the command line runs several backend frameworks ({', '.join(found)})")
    return found[0] if found else None


def is_python_command(executable: str) -> bool:
    return executable in ("python", "python3") or _PYTHON.match(executable) is not None


def expanded(tokens: Sequence[str]) -> list[str]:
    """Tokens split on whitespace (a single ``"python3 -m dynamo.vllm"`` item becomes three)."""
    return [part for token in tokens for part in token.split()]


def has_flag(tokens: Sequence[str], flag: str) -> bool:
    return flag in tokens


def has_arg(tokens: Sequence[str], flag: str, value: str) -> bool:
    """Whether ``flag value`` or ``flag=value`` appears, inside one token or as two adjacent ones."""
    joined, equals = f"{flag} {value}".strip(), f"{flag}={value}"
    for index, token in enumerate(tokens):
        if joined in token or (value and equals in token):
            return True
        following = tokens[index + 1] if index + 1 < len(tokens) else None
        if token == flag and (not value or following == value):
            return True
    return False


def command_line_has_arg(container: JSON, flag: str, value: str) -> bool:
    line = [*command(container), *args(container)]
    return has_arg(line, flag, value) or has_arg(expanded(line), flag, value)


def flag_value(tokens: Sequence[str], flag: str) -> int:
    """The integer after the first ``flag`` that has one, else 1."""
    for index, token in enumerate(tokens[:-1]):
        if token == flag:
            try:
                return int(tokens[index + 1])
            except ValueError:
                continue
    return 1


def quote_bash_c(token: str) -> str:
    """Quote a token for ``sh -c`` the way upstream does: double quotes when anything is special."""
    if not any(c in _BASH_C_SPECIAL for c in token):
        return token
    escaped = token.replace("\\", "\\\\").replace('"', '\\"').replace("$", "\\$").replace("`", "\\`")
    return '"' + escaped.replace("'", "'\"'\"'") + '"'


def quote_posix(token: str) -> str:
    """Single-quote a token unless it is plainly safe (elastic expert parallelism launch)."""
    if _POSIX_SAFE.match(token):
        return token
    return "'" + token.replace("'", "'\\''") + "'"


def inject_flags(container: JSON, flags: str, *, needs_shell: bool, framework: str) -> JSON:
    """The container with ``flags`` added to its engine command line (podspec §7.1); a new object."""
    out = dict(container)
    cmd, arguments = command(container), args(container)
    if cmd and is_python_command(cmd[0]):
        if not needs_shell:
            out["args"] = [*arguments, *flags.split()]
            return out
        line = " ".join(quote_bash_c(t) for t in cmd)
        if arguments:
            line += " " + " ".join(quote_bash_c(a) for a in arguments)
        out["command"], out["args"] = ["sh", "-c"], [f"exec {line} {flags}"]
        return out
    # A shell command: insert after the last framework word of the first python segment that has one.
    pattern = re.compile(rf"(python[0-9.]*{_WS}+[^|&;]*{framework}[^|&;]*?)({_WS}|\Z|[|&;])")
    for index, arg in enumerate(arguments):
        modified = pattern.sub(lambda m: f"{m.group(1)} {flags}{m.group(2)}", arg)
        if modified != arg:
            out["args"] = [*arguments[:index], modified, *arguments[index + 1 :]]
            return out
    return out
