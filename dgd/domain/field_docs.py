"""What each model field means: the docstring written under the field, read back from the class source.

A field is documented where it is declared, by a string on the line after it (the attribute
docstring of PEP 257, which Sphinx and editors show too; the models write it in triple quotes)::

    class Restart(Model, frozen=True):
        id: str
        "Any new value asks for one more restart of the graph."

Python keeps no such string at runtime, so ``field_docs`` parses the class's source. The CRD
generator (``crd_schema``) puts the result into each property's ``description``, which is what
``kubectl explain`` shows.
"""

from __future__ import annotations

import ast
import functools
import inspect
import itertools
import textwrap
from collections.abc import Mapping

import msgspec


@functools.cache
def field_docs(cls: type[msgspec.Struct]) -> Mapping[str, str]:
    """Python field name -> docstring, for every documented field ``cls`` declares or inherits.

    The declaration nearest to ``cls`` in its method resolution order wins, as it does for the
    field itself. Each docstring is one line per paragraph: the source's line breaks are layout.
    Raises ``OSError`` when the source of a model class cannot be read.
    """
    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        # Only Struct classes that declare fields have field docstrings (not Struct, Generic, object).
        if (
            issubclass(klass, msgspec.Struct)
            and klass is not msgspec.Struct
            and "__annotations__" in vars(klass)
        ):
            docs.update(_declared(klass))
    return docs


def _declared(klass: type) -> dict[str, str]:
    (definition,) = ast.parse(textwrap.dedent(inspect.getsource(klass))).body
    assert isinstance(definition, ast.ClassDef), klass
    body = definition.body
    # A docstring is the string expression right after an annotated field.
    return {
        field.target.id: _paragraphs(doc.value.value)
        for field, doc in itertools.pairwise(body)
        if isinstance(field, ast.AnnAssign)
        and isinstance(field.target, ast.Name)
        and isinstance(doc, ast.Expr)
        and isinstance(doc.value, ast.Constant)
        and isinstance(doc.value.value, str)
    }


def _paragraphs(text: str) -> str:
    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(paragraph.split()) for paragraph in paragraphs if paragraph.strip())
