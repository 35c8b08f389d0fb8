"""Broken-manifest corpus cases too large to commit, generated at test time (issue 32): annotations of
1 MiB and 5 MiB, and a 4 MiB environment variable. Each is ``invalid/annotation-oversized.yaml``
(300 KiB) made larger, headed as a corpus file is: its ``# expect:`` lines state the errors ``validate``
prints.

The 5 MiB and 4 MiB cases are more than the real API server reads in one request (3 MiB,
``--max-request-bytes``): it answers 413 before it validates anything, so it names no field; ``validate``
and ``sim apply`` say how large the request is and what is allowed, and name the annotations' own limit.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import yaml

from dgd.domain.admission.defaulting import WORKLOAD_PROVIDER
from dgd.messages.meta_validation import REQUEST_LIMIT

INVALID = Path(__file__).resolve().parent / "invalid"
#: The committed case the generated ones enlarge; its annotation, and where the worker's container ends.
_BASE = INVALID / "annotation-oversized.yaml"
_ANNOTATION_KEY = "example.com/notes"
_ANNOTATION = re.compile(r'^(?P<key>    example\.com/notes): "x+"$', re.MULTILINE)
_ANNOTATIONS = re.compile(r'^  annotations:\n    example\.com/notes: "x+"\n', re.MULTILINE)
_WORKER_LIMITS = "              resources:\n"
#: What defaulting adds to the annotations before ``validate`` counts them: the workload provider it
#: chooses (Grove), key and value.
_DEFAULTED = len(WORKLOAD_PROVIDER) + len("grove")
_MIB = 1024 * 1024
#: What ``validate`` says of a DGD of ``{size}`` bytes as JSON, over the request limit.
_REQUEST_TOO_LARGE = (
    "Too large: the DynamoGraphDeployment is {size} bytes as JSON, and the API server reads no request "
    "over 3145728 bytes (3 MiB)"
)
#: Where a generated case's large value goes, before it is filled.
_FILL = "@fill@"


class GeneratedCase(NamedTuple):
    """A generated broken manifest: its name, the errors ``validate`` prints (numbers as it counts),
    its text (a corpus file's, header and all), and whether the request is over the API server's limit."""

    name: str
    expected: tuple[str, ...]
    text: str
    too_large: bool

    def write(self, directory: Path) -> Path:
        """The case as a file in ``directory``, for commands that read files."""
        path = directory / f"{self.name}.yaml"
        path.write_text(self.text, encoding="utf-8")
        return path


def _case(name: str, what: str, body: str, size: int, expected: list[str]) -> GeneratedCase:
    """The case ``name``: the base document's ``body`` (from ``kind:`` on) renamed, with ``size`` bytes
    where it says ``_FILL``, headed by ``expected`` (after the request's own error if it is too large)."""
    renamed = body.replace("name: annotation-oversized", f"name: {name}", 1)
    document = f"apiVersion: nvidia.com/v1beta1\n{renamed}"
    # As JSON, the filling counts once, byte for byte: the document's JSON size, without parsing it all.
    as_json = len(json.dumps(yaml.safe_load(document.replace(_FILL, "")), separators=(",", ":"))) + size
    if as_json > REQUEST_LIMIT:
        expected.insert(0, _REQUEST_TOO_LARGE.format(size=as_json))
    header = "".join(f"# expect: {line}\n" for line in expected)
    text = f"{header}# {what}, generated\n{document.replace(_FILL, 'x' * size)}"
    return GeneratedCase(name, tuple(expected), text, as_json > REQUEST_LIMIT)


def _base() -> tuple[str, str]:
    """The base case's stated error, and its document from ``kind:`` on."""
    header, body = _BASE.read_text(encoding="utf-8").split("\napiVersion: nvidia.com/v1beta1\n", 1)
    return header.splitlines()[0].removeprefix("# expect: "), body


def _annotation(name: str, size: int) -> GeneratedCase:
    """The base case with one annotation of ``size`` bytes."""
    error, body = _base()
    body = _ANNOTATION.sub(lambda m: f'{m["key"]}: "{_FILL}"', body, count=1)
    # The base case's error, of the annotations as they are here.
    held = len(_ANNOTATION_KEY) + size + _DEFAULTED
    expected = [re.sub(r"they hold \d+ bytes$", f"they hold {held} bytes", error)]
    return _case(name, f"one {size // _MIB} MiB annotation", body, size, expected)


def _environment(name: str, size: int) -> GeneratedCase:
    """The base case without its annotation, and an environment variable of ``size`` bytes in the worker."""
    body = _ANNOTATIONS.sub("", _base()[1], count=1)
    variable = f'              env:\n                - name: NOTES\n                  value: "{_FILL}"\n'
    body = body.replace(_WORKER_LIMITS, variable + _WORKER_LIMITS, 1)
    return _case(name, f"a {size // _MIB} MiB environment variable", body, size, [])


def generated_cases() -> Iterator[GeneratedCase]:
    """Every generated case."""
    yield _annotation("annotation-1mib", _MIB)
    yield _annotation("annotation-5mib", 5 * _MIB)
    yield _environment("pod-template-env-4mib", 4 * _MIB)
