"""Array parameters of the PostgreSQL searches, written as array literals.

psycopg adapts a Python list element by element in Python (finding each element's
dumper, then dumping it): for a search's few tokens or its dozen candidate ids that
cost 10-16 us a statement, measured, more than PostgreSQL takes to parse the same
array from one text parameter (``%s::int8[]``, ``%s::text[]``).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["int8_array", "text_array"]


def int8_array(values: Iterable[int]) -> str:
    """``values`` as an ``int8[]`` literal (``{1,2,3}``)."""
    return "{" + ",".join(map(str, values)) + "}"


def text_array(tokens: Sequence[str]) -> str:
    """Index ``tokens`` (letters and digits only: nothing to escape) as a ``text[]``
    literal, each element quoted so that a token such as ``null`` stays text."""
    return '{"' + '","'.join(tokens) + '"}' if tokens else "{}"
