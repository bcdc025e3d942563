"""The one validation layer of mlcalc: inputs checked before they are used, results before they are returned.

Every failure is a ValueError that names the parameter (or the result), its value and what is allowed.

Inputs
    A number is an ``int``, a ``float`` or any other ``numbers.Real`` (numpy scalars such as
    ``np.int64(8)`` and ``np.float32(0.5)`` register themselves there, so numpy is never imported
    here); ``bool`` is refused (``True`` is not a count). Its range and finiteness are checked on the
    value as given, *before* it is converted to float, so ``10**400`` is refused with a message,
    not an OverflowError. Whole numbers given as floats must be exact (at most 2**53).
Results
    :func:`result` checks a size, time, count or rate a function is about to return: finite and
    non-negative, else ValueError naming what overflowed (never an inf or NaN shown to a reader).
Bounds
    :func:`bounded_int` and the ``maximum`` arguments put a stated upper bound on numbers that size a
    loop, a table or a drawing.
"""

from __future__ import annotations

import collections.abc as abc
import functools
import inspect
import math
import numbers
import types
import typing
from collections.abc import Iterable
from typing import Any

# The largest magnitude any input may have. Far above every physical quantity the book uses
# (a training run's FLOPs are ~1e25) and far below float overflow (1.8e308), so that products of
# a few inputs still overflow *detectably* (checked by ``result``) instead of silently.
MAX_MAGNITUDE = 1e300
# Whole numbers given as floats: above 2**53 a float no longer holds every integer.
MAX_EXACT_INT = 2**53


def _fmt(value: Any) -> str:
    """``repr`` of a value, shortened (a 400-digit int or a huge list must not flood the message)."""
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - a caller's object whose repr fails is still named
        text = f"<{type(value).__name__}>"
    return text if len(text) <= 60 else text[:40] + "..." + text[-10:]


def _refuse(name: str, value: Any, allowed: str) -> ValueError:
    return ValueError(f"{name}={_fmt(value)} is not allowed: {allowed}")


def _is_number(value: Any) -> bool:
    # bool is an int subclass; numpy's bool_ is not a numbers.Real: both are refused.
    if type(value) is float or type(value) is int:  # the common case, without the ABC machinery
        return True
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _number(name: str, value: Any, allowed: str = "it must be a number") -> float:
    """``value`` as a finite float of magnitude at most MAX_MAGNITUDE, checked before conversion."""
    if type(value) is float and math.isfinite(value) and abs(value) <= MAX_MAGNITUDE:  # the common case
        return value
    if not _is_number(value):
        raise _refuse(name, value, allowed)
    if isinstance(value, numbers.Integral):
        try:
            as_int = int(value)  # exact: no float conversion yet
        except Exception as exc:  # a caller's Integral that cannot be an int
            raise _refuse(name, value, allowed) from exc
        if abs(as_int) > MAX_MAGNITUDE:
            raise _refuse(name, value, f"{allowed} of magnitude at most {MAX_MAGNITUDE:g}")
        return float(as_int)
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError, ArithmeticError) as exc:  # e.g. Fraction(10**400)
        raise _refuse(name, value, f"{allowed} of magnitude at most {MAX_MAGNITUDE:g}") from exc
    if not math.isfinite(number):
        raise _refuse(name, value, f"{allowed}, finite")
    if abs(number) > MAX_MAGNITUDE:
        raise _refuse(name, value, f"{allowed} of magnitude at most {MAX_MAGNITUDE:g}")
    return number


def number(name: str, value: Any, maximum: float | None = None) -> float:
    """Return ``value`` as a float if it is a finite number (any sign), else raise ValueError."""
    out = _number(name, value)
    if maximum is not None and abs(out) > maximum:
        raise _refuse(name, value, f"it must be a number of magnitude at most {maximum:g}")
    return out


def _upper(name: str, value: Any, number_: float, maximum: float | None, what: str) -> float:
    if maximum is not None and number_ > maximum:
        raise _refuse(name, value, f"{what} at most {maximum:g}")
    return number_


def positive(name: str, value: Any, maximum: float | None = None) -> float:
    """Return ``value`` as a float if it is a finite number > 0 (and <= ``maximum``), else raise ValueError."""
    out = _number(name, value, "it must be a number greater than 0")
    if not out > 0:
        raise _refuse(name, value, "it must be a number greater than 0")
    return _upper(name, value, out, maximum, "it must be a number greater than 0 and")


def non_negative(name: str, value: Any, maximum: float | None = None) -> float:
    """Return ``value`` as a float if it is a finite number >= 0 (and <= ``maximum``), else raise ValueError."""
    out = _number(name, value, "it must be a number of at least 0")
    if out < 0:
        raise _refuse(name, value, "it must be a number of at least 0")
    return _upper(name, value, out + 0.0, maximum, "it must be a number of at least 0 and")  # -0.0 -> 0.0


def at_least(name: str, value: Any, minimum: float, maximum: float | None = None) -> float:
    """Return ``value`` as a float if it is finite and >= ``minimum`` (and <= ``maximum``), else raise ValueError."""
    out = _number(name, value, f"it must be a number of at least {minimum:g}")
    if out < minimum:
        raise _refuse(name, value, f"it must be at least {minimum:g}")
    return _upper(name, value, out, maximum, f"it must be at least {minimum:g} and")


def in_range(name: str, value: Any, low: float, high: float) -> float:
    """Return ``value`` as a float if ``low <= value <= high``, else raise ValueError."""
    out = _number(name, value, f"it must be a number in [{low:g}, {high:g}]")
    if not low <= out <= high:
        raise _refuse(name, value, f"it must be a number in [{low:g}, {high:g}]")
    return out


def fraction(name: str, value: Any) -> float:
    """Return ``value`` if it lies in (0, 1], else raise ValueError."""
    out = _number(name, value, "it must be a number in (0, 1]")
    if not 0 < out <= 1:
        raise _refuse(name, value, "it must be in (0, 1]")
    return out


def _whole(name: str, value: Any, minimum: int, maximum: int | None) -> int:
    if (type(value) is int and value >= minimum and (maximum is None or value <= maximum)
            and abs(value) <= MAX_MAGNITUDE):  # the common case: no message to write, no ABC machinery
        return value
    bound = f" and at most {maximum:,}" if maximum is not None else ""
    allowed = f"it must be a whole number of at least {minimum}{bound}"
    if type(value) is int:
        if value < minimum or (maximum is not None and value > maximum):
            raise _refuse(name, value, allowed)
        if abs(value) > MAX_MAGNITUDE:
            raise _refuse(name, value, f"{allowed}, of magnitude at most {MAX_MAGNITUDE:g}")
        return value
    if not _is_number(value):
        raise _refuse(name, value, allowed)
    if isinstance(value, numbers.Integral):
        try:
            out = int(value)
        except Exception as exc:
            raise _refuse(name, value, allowed) from exc
    else:
        try:
            as_float = float(value)
        except (OverflowError, ValueError, TypeError, ArithmeticError) as exc:
            raise _refuse(name, value, allowed) from exc
        # A float above 2**53 is not an exact count (1e30 "is_integer" but means nothing as a count).
        if not math.isfinite(as_float) or not as_float.is_integer() or abs(as_float) > MAX_EXACT_INT:
            raise _refuse(name, value, allowed)
        out = int(as_float)
    if out < minimum or (maximum is not None and out > maximum):
        raise _refuse(name, value, allowed)
    if abs(out) > MAX_MAGNITUDE:
        raise _refuse(name, value, f"{allowed}, of magnitude at most {MAX_MAGNITUDE:g}")
    return out


def positive_int(name: str, value: Any, maximum: int | None = None) -> int:
    """Return ``value`` as an int if it is a whole number >= 1 (and <= ``maximum``), else raise ValueError."""
    return _whole(name, value, 1, maximum)


def non_negative_int(name: str, value: Any, maximum: int | None = None) -> int:
    """Return ``value`` as an int if it is a whole number >= 0 (and <= ``maximum``), else raise ValueError."""
    return _whole(name, value, 0, maximum)


def bounded_int(name: str, value: Any, minimum: int, maximum: int) -> int:
    """A whole number that sizes a loop, a table or a drawing: ``minimum <= value <= maximum``."""
    return _whole(name, value, minimum, maximum)


def choice(name: str, value: Any, allowed: Iterable[Any]) -> Any:
    """Return ``value`` if it is one of ``allowed``, else raise ValueError listing them."""
    kind = type(value)
    if kind is bool and isinstance(allowed, (tuple, list)):
        for o in allowed:  # True or False among plain options (the general test finds only a bool equal to it)
            if o is value:
                return value
    elif kind is str or kind is int:
        if isinstance(allowed, (tuple, list)):
            for o in allowed:  # the common case (a text or a whole number among plain options), without the general test
                if type(o) is kind and o == value:
                    return value
        elif kind is str and isinstance(allowed, (dict, types.MappingProxyType, frozenset, set, abc.KeysView)):
            # a text among the keys of a mapping or a set: found by hash. A key found equals the text, so the
            # general test below would find it too (no bool equals a text); not found: the general test decides
            try:
                if value in allowed:
                    return value
            except TypeError:  # an odd container: the general test decides
                pass
    options = list(allowed)
    try:  # True is not the option 1; an array's == is not a truth value: neither is found
        found = any(isinstance(value, bool) == isinstance(o, bool) and bool(value == o) for o in options)
    except Exception:  # noqa: BLE001 - odd values are simply not among the options
        found = False
    if not found:
        shown = ", ".join(map(repr, options[:30])) + (", ..." if len(options) > 30 else "")
        raise _refuse(name, value, f"choose one of {shown}")
    return value


def result(name: str, value: Any) -> float:
    """Check a size, time, count or rate about to be returned: finite and >= 0, else ValueError.

    The message names the result, so "busbw inf GB/s" becomes "busbw_bytes_per_s overflowed ...".
    """
    try:
        out = float(value)
    except (OverflowError, ValueError, TypeError) as exc:
        raise ValueError(f"{name} cannot be computed: it is {_fmt(value)} (the inputs are out of range)") from exc
    if math.isnan(out):
        raise ValueError(f"{name} cannot be computed for these inputs (it is not a number): "
                         "check that none is extreme")
    if math.isinf(out):
        raise ValueError(f"{name} overflowed (beyond the largest float, 1.8e308): the inputs are too large or "
                         "too small for it; use values closer to real hardware")
    if out < 0:
        raise ValueError(f"{name}={out!r} is negative for these inputs: a size, time, count or rate cannot be")
    return out + 0.0


def finite(name: str, value: Any) -> float:
    """Check a signed result about to be returned: finite, else ValueError naming it."""
    try:
        out = float(value)
    except (OverflowError, ValueError, TypeError) as exc:
        raise ValueError(f"{name} cannot be computed: it is {_fmt(value)} (the inputs are out of range)") from exc
    if not math.isfinite(out):
        raise ValueError(f"{name} overflowed or is not a number ({out!r}) for these inputs")
    return out


def results(name: str, values: Iterable[Any]) -> tuple[float, ...]:
    """:func:`result` for each of several values (``name[i]`` in the message)."""
    return tuple(result(f"{name}[{i}]", v) for i, v in enumerate(values))


def positive_result(name: str, value: Any) -> float:
    """:func:`result`, and greater than 0 (a time or rate a caller divides by): ValueError if it underflowed."""
    out = result(name, value)
    if not out > 0:
        raise ValueError(f"{name} underflowed to 0 for these inputs (they are too small or too far apart); "
                         "use values closer to real hardware")
    return out


def fields(name: str, value: Any) -> Any:
    """Check every number of a NamedTuple, dataclass or mapping result with :func:`result`; return it unchanged."""
    if hasattr(value, "_asdict"):
        items = value._asdict().items()
    elif hasattr(value, "__dataclass_fields__"):
        items = ((f, getattr(value, f)) for f in value.__dataclass_fields__)
    elif isinstance(value, dict) or hasattr(value, "items"):
        items = value.items()
    else:
        result(name, value)
        return value
    for key, item in items:
        if type(item) is float and item >= 0 and item != math.inf:  # what result() passes (nan fails >= 0): no name
            continue
        if isinstance(item, bool) or item is None or isinstance(item, str):
            continue
        if _is_number(item):
            result(f"{name}.{key}", item)
        elif hasattr(item, "items"):
            fields(f"{name}.{key}", item)
    return value


# --------------------------------------------------------------------------- object parameters

_SCALARS = (int, float, str, bool, bytes, complex, type(None))


def _kinds(annotation: Any) -> tuple[type, ...] | None:
    """The classes an annotation allows, for an isinstance check; None where it allows anything or
    only scalars (those are checked inside each function, by the functions above)."""
    if annotation is Any or annotation is inspect.Parameter.empty or isinstance(annotation, str):
        return None
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = typing.get_args(annotation)
        parts = [_kinds(a) for a in args]
        if all(p is None for p in parts):
            return None
        kinds: tuple[type, ...] = ()
        for a, p in zip(args, parts):
            if p is not None:
                kinds += p
            elif a is float:
                kinds += (numbers.Real,)
            elif a is int:
                kinds += (numbers.Integral,)
            elif isinstance(a, type):
                kinds += (a,)
            else:
                return None  # a part that cannot be checked: check nothing
        return kinds
    if origin is not None:  # Iterable[...], Sequence[...], Mapping[...]: the abstract kind; list/tuple not
        return (origin,) if origin in (abc.Iterable, abc.Sequence, abc.Mapping, abc.Collection) else None
    if (isinstance(annotation, type) and annotation not in _SCALARS and annotation is not object
            and not getattr(annotation, "_is_protocol", False)):
        return (annotation,)
    return None


class ParameterTypeError(TypeError, ValueError):
    """A parameter of the wrong type: a TypeError, and a ValueError like every other refusal (the
    calculators' shells show a ValueError's message inline)."""


def _object_parameters(fn: Any) -> tuple[tuple[int, str, tuple[type, ...]], ...]:
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # noqa: BLE001 - an annotation that does not resolve: nothing checked
        return ()
    out = []
    for i, p in enumerate(inspect.signature(fn).parameters.values()):
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            break
        kinds = _kinds(hints.get(p.name, p.annotation))
        if not kinds:
            continue
        try:
            isinstance(None, kinds)
        except TypeError:  # a protocol or generic isinstance cannot check
            continue
        if p.default is not p.empty and not isinstance(p.default, kinds):
            kinds = kinds + (type(p.default),)  # the default (often None) is allowed as given
        if any(issubclass(k, tuple) and hasattr(k, "_fields") for k in kinds):
            kinds = kinds + (tuple,)  # a NamedTuple parameter also takes a plain tuple of its fields
        index = i if p.kind != p.KEYWORD_ONLY else -1
        out.append((index, p.name, kinds))
    return tuple(out)


def guard(namespace: dict[str, Any]) -> None:
    """Check the object parameters of every public function of a module by type, before it runs.

    Called once at the end of a module (``_check.guard(globals())``): a function whose parameter is
    annotated with a class (``model: ModelConfig``, ``fab: Fabric``, ``offers: Iterable[Offer]``) then
    refuses anything else with a TypeError naming the parameter, its value and the type allowed,
    instead of an AttributeError from deep inside. Numbers and text are checked by the functions above.
    """
    module = namespace.get("__name__")
    for name, fn in list(namespace.items()):
        if (name.startswith("_") or not callable(fn) or getattr(fn, "__module__", None) != module
                or not hasattr(fn, "__code__") or getattr(fn, "__mlcalc_guarded__", False)):
            continue
        checks = _object_parameters(fn)
        if not checks:
            continue

        def wrapper(*args: Any, __fn: Any = fn, __checks: Any = checks, **kwargs: Any) -> Any:
            for index, pname, kinds in __checks:
                if 0 <= index < len(args):
                    value = args[index]
                elif pname in kwargs:
                    value = kwargs[pname]
                else:
                    continue
                if not isinstance(value, kinds):
                    allowed = " or ".join(k.__name__ for k in kinds if k is not type(None))
                    raise ParameterTypeError(f"{pname}={_fmt(value)} is not allowed: it must be a {allowed}")
            return __fn(*args, **kwargs)

        wrapped = functools.wraps(fn)(wrapper)
        wrapped.__mlcalc_guarded__ = True  # type: ignore[attr-defined]
        namespace[name] = wrapped
