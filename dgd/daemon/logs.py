"""The daemon's logs: one line per event, JSON by default, with where it happened and no secrets.

Every line has ``time`` (RFC 3339, UTC, milliseconds), ``level``, ``logger`` and ``message``; a line
logged by an actor also has its ``actor`` path, and, inside a reconciling actor or one of its
children, the ``controller``, the ``namespace`` and ``name`` of the object reconciled and the
``reconcileID`` of the reconcile running (``namespace/name#n``: its n-th in this process). They come
from context, not from the call: the actor runtime's ``current_actor`` context variable says which
actor is running. A failure adds ``exception`` (the traceback). The fields a call gives as
``extra={...}`` (the operator's writes give ``dgd``, ``verb``, ``object`` and ``why``) are keys of
the JSON object, and ``key=value`` pairs after the message in text.

No secret value reaches a line, whatever the caller logged: the arguments are redacted before the
message is formatted (a Secret's ``data`` and ``stringData``, values under keys that name
credentials), and the formatted text is redacted again (private keys in PEM form, bearer tokens,
``token=...``-style pairs, a Secret's data blocks), and so is a traceback.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any, Literal, TextIO

import msgspec

from dgd.daemon.metrics import reconciler, reconciler_of
from dgd.runtime.ref import current_actor

Format = Literal["json", "text"]
FORMATS: tuple[Format, ...] = ("json", "text")
LEVELS = ("debug", "info", "warning", "error", "critical")

REDACTED = "<redacted>"

#: Keys whose values are credentials, wherever they appear in a logged mapping.
_SENSITIVE_KEYS = re.compile(
    r"^(?:token|access[-_]?token|refresh[-_]?token|id[-_]?token|password|passwd|secret|client[-_]?secret"
    r"|api[-_]?key|authorization|private[-_.]?key|ssh[-_]?privatekey|tls\.key|bearer[-_]?token)$",
    re.IGNORECASE,
)
_PEM = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|$)", re.DOTALL
)
_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9\-._~+/]+=*")
_QUOTED_PAIR = re.compile(
    r"""(?i)(["']?\b(?:token|access_token|password|passwd|secret|client_secret|api[-_]?key|authorization)"""
    r"""["']?\s*[:=]\s*)(["'])(?:(?!\2).)*\2"""
)
_BARE_PAIR = re.compile(r"(?i)(\b(?:token|password|passwd|client_secret|api[-_]?key)=)[^\s&,;'\"]+")
_SECRET_DATA = re.compile(r"""(["']?\b(?:data|stringData)["']?\s*:\s*)\{[^{}]*\}""")


def redact_text(text: str) -> str:
    """``text`` with every credential pattern (see the module) replaced by ``<redacted>``."""
    text = _PEM.sub(f"{REDACTED} private key", text)
    text = _BEARER.sub(rf"\g<1>{REDACTED}", text)
    text = _QUOTED_PAIR.sub(rf"\g<1>\g<2>{REDACTED}\g<2>", text)
    text = _BARE_PAIR.sub(rf"\g<1>{REDACTED}", text)
    if "Secret" in text:
        text = _SECRET_DATA.sub(rf"\g<1>{{{REDACTED}}}", text)
    return text


def redact_value(value: Any, depth: int = 0) -> Any:
    """A copy of a logged argument with a Secret's data and credential-named values redacted
    (containers are walked up to a small depth; anything deeper is redacted whole)."""
    if depth > 8:
        return REDACTED
    if isinstance(value, str):
        return redact_text(value)
    if isinstance(value, dict):
        secret = value.get("kind") == "Secret"
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if secret and key in ("data", "stringData") and isinstance(item, dict):
                out[key] = dict.fromkeys(item, REDACTED)
            elif isinstance(key, str) and _SENSITIVE_KEYS.match(key):
                out[key] = REDACTED
            else:
                out[key] = redact_value(item, depth + 1)
        return out
    if isinstance(value, list | tuple):
        items = [redact_value(item, depth + 1) for item in value]
        return items if isinstance(value, list) else tuple(items)
    return value


class ContextFilter(logging.Filter):
    """Adds the actor context to every record and redacts its arguments and message (see the module).

    ``reconcile_id`` maps a reconciling actor's path to the id of the reconcile it runs.
    """

    def __init__(self, reconcile_id: Callable[[str], str | None] | None = None) -> None:
        super().__init__()
        self._reconcile_id = reconcile_id

    def filter(self, record: logging.LogRecord) -> bool:
        # Where: the running actor, and the object its reconciling ancestor (or itself) owns.
        cell = current_actor.get()
        path = cell.path if cell is not None else None
        context: dict[str, str | None] = dict.fromkeys((attribute for attribute, _ in _CONTEXT), None)
        context["actor"] = path
        owner = reconciler_of(path) if path else None
        found = reconciler(owner) if owner else None
        if owner is not None and found is not None:
            context["controller"], context["dgd_namespace"], context["dgd_name"] = found
            if self._reconcile_id is not None:
                context["reconcile_id"] = self._reconcile_id(owner)
        record.__dict__.update(context)
        # What: the message formatted from redacted arguments, then redacted as text.
        try:
            args = record.args
            if isinstance(args, dict):
                record.args = redact_value(args)
            elif args:
                record.args = tuple(redact_value(arg) for arg in args)
            message = record.getMessage()
        except Exception:  # a bad format string: log what there is rather than lose the line
            message = f"{record.msg!r} {record.args!r}"
        record.msg, record.args = redact_text(message), ()
        return True


def _time(record: logging.LogRecord) -> str:
    stamp = datetime.fromtimestamp(record.created, UTC)
    return stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z"


_CONTEXT = (
    ("controller", "controller"),
    ("dgd_namespace", "namespace"),
    ("dgd_name", "name"),
    ("actor", "actor"),
    ("reconcile_id", "reconcileID"),
)


#: The attributes every record has: anything else on a record is a field the call gave (``extra``).
_STANDARD = frozenset(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {
    "message",
    "asctime",
    "taskName",
    *(attribute for attribute, _ in _CONTEXT),
}


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """The fields the call that logged ``record`` gave as ``extra``, in order, redacted."""
    return {
        key: redact_value(value)
        for key, value in record.__dict__.items()
        if key not in _STANDARD and not key.startswith("_")
    }


def _pair(key: str, value: Any) -> str:
    """``key=value``, the value quoted when it would not read as one word."""
    text = value if isinstance(value, str) else msgspec.json.encode(value).decode()
    if not text or any(c.isspace() or c in '"=' for c in text):
        text = msgspec.json.encode(text).decode()
    return f"{key}={text}"


class JsonFormatter(logging.Formatter):
    """One JSON object per line (see the module for the keys)."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": _time(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for attribute, key in _CONTEXT:
            value = getattr(record, attribute, None)
            if value is not None:
                line[key] = value
        for key, value in fields(record).items():
            line.setdefault(key, value)
        if record.exc_info:
            line["exception"] = redact_text(self.formatException(record.exc_info))
        return msgspec.json.encode(line).decode()


class TextFormatter(logging.Formatter):
    """``time LEVEL logger: message [field=value ...] [[key=value ...]]`` for people at a terminal:
    the call's fields, then the actor context in brackets."""

    def format(self, record: logging.LogRecord) -> str:
        context = " ".join(
            f"{key}={value}"
            for attribute, key in _CONTEXT
            if (value := getattr(record, attribute, None)) is not None
        )
        line = f"{_time(record)} {record.levelname:<7} {record.name}: {record.getMessage()}"
        for key, value in fields(record).items():
            line += " " + _pair(key, value)
        if context:
            line += f" [{context}]"
        if record.exc_info:
            line += "\n" + redact_text(self.formatException(record.exc_info))
        return line


def log_handler(
    format: Format, *, stream: TextIO | None = None, reconcile_id: Callable[[str], str | None] | None = None
) -> logging.Handler:
    """A handler writing records to ``stream`` (standard error) in ``format``, with context and redaction."""
    handler = logging.StreamHandler(stream if stream is not None else sys.stderr)
    handler.addFilter(ContextFilter(reconcile_id))
    handler.setFormatter(JsonFormatter() if format == "json" else TextFormatter())
    return handler


def configure(
    format: Format,
    level: str,
    *,
    stream: TextIO | None = None,
    reconcile_id: Callable[[str], str | None] | None = None,
) -> logging.Handler:
    """Send every log record at ``level`` or above through one ``log_handler``; replaces the root
    logger's handlers. Returns the handler."""
    handler = log_handler(format, stream=stream, reconcile_id=reconcile_id)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level.upper())
    return handler
