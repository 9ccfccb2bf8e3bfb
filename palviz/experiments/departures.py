"""Every departure from the reference code, declared once: :data:`DEPARTURES`, read from the
package's ``departures.toml``. The table of docs/departures.md, written by hand, has one row per
departure; a test checks that it names each one declared here, and no other."""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources


@dataclass(frozen=True)
class Departure:
    """One way palviz differs from the reference code it follows: ``topic``, what the
    ``reference`` (repository and file) does, what palviz does instead, and the section of
    docs/reference.md that explains it."""

    topic: str
    reference: str
    palviz: str
    section: str


_DATA = resources.files(__package__) / "departures.toml"
#: Every departure from the reference code, in the order of docs/reference.md; docs/departures.md
#: has one row per departure, named by its ``topic``.
DEPARTURES: tuple[Departure, ...] = tuple(
    Departure(**d) for d in tomllib.loads(_DATA.read_text(encoding="utf-8"))["departure"]
)
