"""What the commands read and write by name: manifests, traces, configuration, world settings, kubeconfigs.

Every command reads its files here, so the same bad file gets the same message and exit code in
every command: one that cannot be read as what it should be (missing, a folder, not permitted, not
UTF-8, not YAML or JSON) or written is :class:`BadFile` (exit 2) naming the file (and the flag that named
it), the line and column; one that was read but holds a wrong value is ``Invalid`` (exit 1) naming
the field. ``-`` names standard input wherever a command takes files.
"""

from __future__ import annotations

import errno
import os
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec
import yaml

from dgd.cli.exits import Invalid, Usage, field_problem
from dgd.domain.admission.config import load_config
from dgd.domain.manifests import ManifestError, load_manifests
from dgd.messages.config import ConfigError, OperatorConfig, parse_duration

if TYPE_CHECKING:  # the daemon reads no world: it does not import the simulation
    from dgd.sim import WorldSettings

#: The file name that stands for standard input.
STDIN = "-"


class BadFile(Usage):
    """A file that cannot be read as what it should be, or written: ``where`` (the file, after the flag
    that named it) and ``reason``."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}")
        self.where = where
        self.reason = reason


def shown(name: str | Path) -> str:
    """A file name as messages show it (``<stdin>`` for ``-``)."""
    return "<stdin>" if str(name) == STDIN else str(name)


def _where(name: str | Path, flag: str | None) -> str:
    return f"{flag} {shown(name)}" if flag else shown(name)


def read_bytes(name: str | Path, *, flag: str | None = None) -> bytes:
    """The bytes of file ``name`` (``-``: standard input); ``flag`` is the option that named it."""
    if str(name) == STDIN:
        # The bytes, so that their encoding is checked as a file's; a text stream put in stdin's place
        # (a program that calls ``main``) has none to give.
        buffer = getattr(sys.stdin, "buffer", None)
        return buffer.read() if buffer is not None else sys.stdin.read().encode("utf-8")
    try:
        return Path(name).read_bytes()
    except OSError as exc:
        raise BadFile(_where(name, flag), os_problem(exc)) from None


def read_text(name: str | Path, *, flag: str | None = None) -> str:
    """The UTF-8 text of file ``name`` (see :func:`read_bytes`)."""
    data = read_bytes(name, flag=flag)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        why = (
            f"not UTF-8 text (byte {exc.start}, on line {line}, is {data[exc.start]:#04x}); save it as UTF-8"
        )
        raise BadFile(_where(name, flag), why) from None


def read_manifests(name: str | Path, *, flag: str | None = None) -> list[Any]:
    """Every document of the YAML or JSON manifest file ``name`` (``-``: standard input)."""
    text = read_text(name, flag=flag)
    try:
        return load_manifests(text)
    except ManifestError as exc:
        raise BadFile(_where(name, flag), str(exc)) from None


def add_config_flag(parser: Any) -> None:
    """Add ``--config FILE`` (what ``read_config`` reads) to ``parser`` or an argument group of it."""
    parser.add_argument("--config", metavar="FILE", type=Path, help="operator configuration file (YAML)")


def read_config(path: Path | None) -> OperatorConfig:
    """The operator configuration in ``--config``'s file (the defaults without one)."""
    return parse_config(read_text(path, flag="--config"), path) if path is not None else OperatorConfig()


def parse_config(text: str, path: Path | None) -> OperatorConfig:
    """The operator configuration in ``text``, read from ``--config``'s ``path``."""
    try:
        return load_config(text)
    except ConfigError as exc:
        if isinstance(exc.__cause__, yaml.YAMLError):
            raise BadFile(_where(str(path), "--config"), yaml_problem(exc.__cause__)) from None
        raise Invalid(f"--config {path}: {field_problem(str(exc))}") from None


def read_world(path: Path | None) -> WorldSettings:
    """The world settings in ``--world``'s file (the defaults without one)."""
    from dgd.sim import WorldSettings

    if path is None:
        return WorldSettings()
    text = read_text(path, flag="--world")
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BadFile(_where(path, "--world"), yaml_problem(exc)) from None
    try:
        return msgspec.convert({} if raw is None else raw, WorldSettings)
    except msgspec.ValidationError as exc:
        raise Invalid(f"--world {path}: {field_problem(str(exc))}") from None


def check_kubeconfig(given: str | None) -> None:
    """Check, before the kube adapter reads it, that the kubeconfig it will use is YAML it can read:
    ``given`` (``--kubeconfig``), else ``$KUBECONFIG`` (paths separated by ``:``; missing ones are
    skipped, as kubectl does), else none inside a pod, else ``~/.kube/config``."""
    listed = os.environ.get("KUBECONFIG", "")
    if given:
        paths, flag = [given], "--kubeconfig"
    elif listed:
        paths = [path for path in listed.split(os.pathsep) if path and Path(path).exists()]
        flag = "$KUBECONFIG"
        if not paths:
            raise BadFile(f"$KUBECONFIG {listed}", "no such file")
    elif os.environ.get("KUBERNETES_SERVICE_HOST"):
        return
    else:
        default = Path("~/.kube/config").expanduser()
        if not default.exists():
            raise Usage(
                "no cluster to connect to: pass --kubeconfig PATH or set $KUBECONFIG "
                f"({default} does not exist, and this is not a pod)"
            )
        paths, flag = [str(default)], "kubeconfig"
    for path in paths:
        text = read_text(path, flag=flag)
        try:
            yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise BadFile(_where(path, flag), yaml_problem(exc)) from None


def writable(path: Path | None, flag: str) -> Path | None:
    """``path``, checked writable now rather than found unwritable when the run ends."""
    if path is None:
        return None
    folder = path.parent
    if path.is_dir():
        raise BadFile(_where(path, flag), "is a folder, not a file")
    if not folder.is_dir():
        raise BadFile(_where(path, flag), f"the folder {folder} does not exist")
    if not os.access(folder, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise BadFile(_where(path, flag), "cannot be written: permission denied")
    return path


def write_output(path: Path, data: bytes, *, flag: str) -> None:
    """Write ``data`` to ``flag``'s file ``path``."""
    try:
        path.write_bytes(data)
    except OSError as exc:
        raise BadFile(_where(path, flag), f"cannot be written: {os_problem(exc)}") from None


def yaml_problem(exc: yaml.YAMLError) -> str:
    """A YAML error as ``line L, column C: not valid YAML: what``."""
    mark = getattr(exc, "problem_mark", None)
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    return f"{where}not valid YAML: {getattr(exc, 'problem', None) or exc}"


def os_problem(exc: OSError) -> str:
    """Why a file could not be read or written, in words (not ``[Errno 2] …``)."""
    if exc.errno == errno.ENOENT:
        return "no such file"
    if exc.errno == errno.EISDIR:
        return "is a folder, not a file"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    return (exc.strerror or type(exc).__name__).lower()


#: What a namespace name is (an RFC 1123 label).
DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
#: Where a pod finds its own namespace (the default namespace of its lease).
POD_NAMESPACE_FILE = Path("/var/run/secrets/kubernetes.io/serviceaccount/namespace")


def duration(flag: str, text: str) -> float:
    """Seconds of a duration flag (``30s``, ``1m30s`` or plain seconds); ``Usage`` when it is not a
    positive duration."""
    try:
        seconds = float(text) if text.replace(".", "", 1).isdigit() else parse_duration(text)
    except ValueError as exc:
        raise Usage(f"{flag}: {exc}") from exc
    if seconds <= 0:
        raise Usage(f"{flag}: {text!r} must be positive")
    return seconds


def namespace_problem(name: str) -> str:
    """Why ``name`` cannot be a namespace (an RFC 1123 label), or ``""``."""
    if not name:
        return "is empty: a namespace name is required"
    if len(name) > 63:
        return f"is {len(name)} characters long: a namespace name has at most 63"
    if not DNS_LABEL.fullmatch(name):
        return (
            "is not a valid namespace name: lower-case letters, digits and '-', "
            "starting and ending alphanumeric"
        )
    return ""
