"""The API server's rules for an object's labels and annotations (apimachinery's ``ValidateLabels``,
``ValidateAnnotations`` and ``IsQualifiedName``), with its limits (and the size of a request), in one place.

The memory API server refuses a write with them, and ``validate`` and admission report them, so what
``validate`` passes the real API server, ``sim apply`` and ``sim serve`` store, and the other way round.
Each problem names the field, the bad value and what is allowed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping

#: The most bytes an object's annotations (keys and values together) may hold, as the API server counts.
ANNOTATIONS_LIMIT = 256 * 1024
#: The largest request body the API server reads (``--max-request-bytes``' default, 3 MiB): it answers a
#: larger one 413 before it decodes or validates anything.
REQUEST_LIMIT = 3 * 1024 * 1024
#: The longest DNS-1123 subdomain (a key's prefix), and the longest name part or label value.
SUBDOMAIN_LIMIT, NAME_LIMIT = 253, 63

_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_NAME = re.compile(r"[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?")
_NAME_WORDS = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character"
)
_SUBDOMAIN_WORDS = (
    "must be a lowercase RFC 1123 subdomain: lower case alphanumeric characters, '-' or '.', starting and "
    "ending with an alphanumeric character"
)


@functools.lru_cache(maxsize=4096)
def qualified_name_problem(key: str) -> str:
    """Why ``key`` is not a qualified name (an optional DNS-subdomain prefix and ``/``, then a name of at
    most 63 characters), or ``""``. (Remembered: every write checks the same few keys again.)"""
    prefix, slash, name = key.rpartition("/")
    if slash and not prefix:
        return "prefix part must be non-empty"
    if prefix and len(prefix) > SUBDOMAIN_LIMIT:
        return f"prefix part must be no more than {SUBDOMAIN_LIMIT} characters (it has {len(prefix)})"
    if prefix and not _SUBDOMAIN.fullmatch(prefix):
        return f"prefix part {_SUBDOMAIN_WORDS}"
    if not name:
        return "name part must be non-empty"
    if len(name) > NAME_LIMIT:
        return f"name part must be no more than {NAME_LIMIT} characters (it has {len(name)})"
    if not _NAME.fullmatch(name):
        return f"name part {_NAME_WORDS}"
    return ""


def qualified_name(key: str) -> bool:
    """Whether ``key`` is a qualified name: a label, annotation or finalizer key."""
    return not qualified_name_problem(key)


@functools.lru_cache(maxsize=4096)
def label_value_problem(value: str) -> str:
    """Why ``value`` cannot be a label value, or ``""``: empty, or at most 63 characters of a name."""
    if len(value) > NAME_LIMIT:
        return f"must be no more than {NAME_LIMIT} characters (it has {len(value)})"
    if value and not _NAME.fullmatch(value):
        return f"a label value must be empty or {_NAME_WORDS.removeprefix('must ')}"
    return ""


def label_problems(labels: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """(field, message) for every label the API server refuses."""
    for key, value in labels.items():
        why = qualified_name_problem(key)
        if why:
            yield f"metadata.labels[{key}]", f"{_shown(key)} is not a valid label key: {why}"
        why = label_value_problem(value)
        if why:
            yield f"metadata.labels[{key}]", f"value {_shown(value)} is not a valid label value: {why}"


def annotation_problems(annotations: Mapping[str, str]) -> Iterator[tuple[str, str]]:
    """(field, message) for every annotation key the API server refuses (it checks keys lower-cased),
    then for annotations that hold more than 256 KiB together."""
    for key in annotations:
        why = qualified_name_problem(key.lower())
        if why:
            yield f"metadata.annotations[{key}]", f"{_shown(key)} is not a valid annotation key: {why}"
    size = sum(len(key.encode()) + len(value.encode()) for key, value in annotations.items())
    if size > ANNOTATIONS_LIMIT:
        yield (
            "metadata.annotations",
            f"Too long: may not be more than {ANNOTATIONS_LIMIT} bytes (256 KiB, keys and values "
            f"together); they hold {size} bytes",
        )


def request_too_large(kind: str, size: int) -> str:
    """What is said of an object of ``kind`` that is ``size`` bytes as JSON, over the request limit."""
    return (
        f"Too large: the {kind} is {size} bytes as JSON, and the API server reads no request over "
        f"{REQUEST_LIMIT} bytes (3 MiB)"
    )


def _shown(text: str) -> str:
    """A key or value as a message shows it: quoted, and cut short when long."""
    return f'"{text}"' if len(text) <= 80 else f'"{text[:60]}..." ({len(text)} characters)'
