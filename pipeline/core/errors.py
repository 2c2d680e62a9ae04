"""One root for every error tokfidelity raises about its input: ``TokfidelityError``.

Like httpx's ``HTTPError`` carries its request, a ``TokfidelityError`` carries where the problem is:
``path`` (a file, or None), ``line`` (1-based; 0 for a whole file or no file), ``field`` (a dotted
name, or None) and ``message`` (what is wrong and what to do, without the location). Code that
needs a part reads the attribute; nothing parses ``str(e)``. ``str(e)`` renders them in one shape:

    path:line: field 'f': message      path: message      field 'f': message      message

Each kind derives from the root and from the built-in class callers already catch (``ValueError``
for bad data, ``FileNotFoundError`` for a missing tokenizer), so ``except ValueError`` still works.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["TokfidelityError", "located"]


class TokfidelityError(Exception):
    """Bad input, located: ``path``, ``line``, ``field`` and the bare ``message``."""

    def __init__(self, message: str, *, path: os.PathLike | str | None = None, line: int = 0, field: str | None = None):
        self.message = message
        self.path = Path(path) if path is not None else None
        self.line = line
        self.field = field
        super().__init__(message)

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        what = f"field {self.field!r}: " if self.field else ""
        return f"{where}{what}{self.message}"

    def __reduce__(self):  # picklable whatever a subclass's __init__ takes (judging processes send errors back)
        return _rebuild, (type(self), self.__dict__.copy())


def _rebuild(cls: type, state: dict) -> TokfidelityError:
    error = cls.__new__(cls)
    Exception.__init__(error, state.get("message", ""))
    error.__dict__.update(state)
    return error


def located(error: TokfidelityError, cls: type[TokfidelityError] | None = None, **where) -> TokfidelityError:
    """A copy of ``error`` (as ``cls``, default its own class) with location parts set: ``path``, ``line``, ``field``."""
    cls = cls or type(error)
    copy = cls.__new__(cls)
    Exception.__init__(copy, error.message)
    copy.__dict__.update(error.__dict__)
    for key, value in where.items():
        setattr(copy, key, Path(value) if key == "path" and value is not None else value)
    return copy
