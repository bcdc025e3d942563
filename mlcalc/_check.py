"""Input checks shared by the calculators: each raises ValueError naming the parameter."""

from __future__ import annotations

import math
from collections.abc import Iterable


def positive(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a finite number > 0, else raise ValueError."""
    number = _number(name, value)
    if not number > 0:
        raise ValueError(f"{name}={value!r} is not allowed: it must be a number greater than 0")
    return number


def non_negative(name: str, value: float) -> float:
    """Return ``value`` as a float if it is a finite number >= 0, else raise ValueError."""
    number = _number(name, value)
    if number < 0:
        raise ValueError(f"{name}={value!r} is not allowed: it must be a number of at least 0")
    return number


def at_least(name: str, value: float, minimum: float) -> float:
    """Return ``value`` as a float if it is finite and >= ``minimum``, else raise ValueError."""
    number = _number(name, value)
    if number < minimum:
        raise ValueError(f"{name}={value!r} is not allowed: it must be at least {minimum:g}")
    return number


def fraction(name: str, value: float) -> float:
    """Return ``value`` if it lies in (0, 1], else raise ValueError."""
    number = _number(name, value)
    if not 0 < number <= 1:
        raise ValueError(f"{name}={value!r} is not allowed: it must be in (0, 1]")
    return number


def positive_int(name: str, value: int) -> int:
    """Return ``value`` if it is a whole number >= 1, else raise ValueError."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not float(value).is_integer():
        raise ValueError(f"{name}={value!r} is not allowed: it must be a whole number of at least 1")
    if value < 1:
        raise ValueError(f"{name}={value!r} is not allowed: it must be a whole number of at least 1")
    return int(value)


def choice(name: str, value: str, allowed: Iterable[str]) -> str:
    """Return ``value`` if it is one of ``allowed``, else raise ValueError listing them."""
    options = list(allowed)
    if value not in options:
        raise ValueError(f"{name}={value!r} is not allowed: choose one of {', '.join(map(repr, options))}")
    return value


def _number(name: str, value: float) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ValueError(f"{name}={value!r} is not allowed: it must be a number")
    number = float(value)
    if not math.isfinite(number):
        raise ValueError(f"{name}={value!r} is not allowed: it must be a finite number")
    return number
