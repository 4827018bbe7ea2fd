"""Arguments checked by name: a bad one is an error that names it and says what it
takes, not an OverflowError from deep inside a conversion."""

from __future__ import annotations

from typing import Any, Optional


def whole(name: str, value: Any, lo: int, hi: int, none: bool = False) -> Optional[int]:
    """``value`` when it is a whole number in ``lo..hi`` (or None, when ``none``);
    otherwise a TypeError or ValueError naming ``name`` and the range."""
    if value is None and none:
        return None
    expected = f"expected a whole number from {lo} to {hi}"
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name}={value!r}: {expected}")
    if not lo <= value <= hi:
        raise ValueError(f"{name}={value}: {expected}")
    return value
