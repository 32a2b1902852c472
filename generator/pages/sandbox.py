"""The sandbox content templates run in: Jinja's ImmutableSandboxedEnvironment, bounded in size and time.

Jinja's sandbox bounds `range()` (MAX_RANGE) but not arithmetic: `{{ 7**(7**10) }}` is one power
computed in C, which holds the interpreter (its HTTP thread, its signal handlers) for minutes. So:

- **Size.** The operators that can make a large value from small ones (`**`, `*`, `+`, `%`) go
  through Jinja's own hook, `call_binop` with `intercepted_binops`, which refuses a result past
  MAX_DIGITS digits or MAX_LENGTH characters or items before computing it; so do `~` (compiled to a
  call of ContentSandbox.joined, through Jinja's code_generator_class) and the string methods and
  filters that pad to a width (`center`, `ljust`, `format`, `indent`...). A content
  file's whole text is bounded too (MAX_OUTPUT), piece by piece as Template.generate yields it.
- **Time.** What is left is a loop of small steps, which the clock stops: a timer raises Stopped
  in the rendering thread once one content file has rendered for SECONDS (CPython's
  PyThreadState_SetAsyncExc, through ctypes, as timeout libraries do), at its next step, and the
  message names the line of the content template that was running. A trace function
  (sys.settrace) would do the same from inside the thread, but slows every build's content
  rendering by a third (measured); the timer costs a thread start per content file.

A refusal is a jinja2 SecurityError, shown as "not allowed in content: ...". Hand-written: Jinja
documents these hooks for exactly this, and no library we know bounds a sandbox's results.
"""

from __future__ import annotations

import contextlib
import ctypes
import math
import re
import threading
import traceback
from collections.abc import Callable, Generator, Iterator
from types import CodeType
from typing import Any, cast

import jinja2
from jinja2 import nodes
from jinja2.compiler import CodeGenerator, Frame
from jinja2.runtime import markup_join, str_join
from jinja2.sandbox import ImmutableSandboxedEnvironment, SecurityError

MAX_DIGITS = 1_000  # an integer content may compute: far past any figure, far below a slow one
MAX_LENGTH = 1_000_000  # characters of a string, or items of a list, that an operator may build
MAX_OUTPUT = 10_000_000  # characters of one content file's rendered text (a page's is some 50,000)
SECONDS = 10.0  # the longest one content file may take to render (a few milliseconds in practice)
WIDTH_FILTERS = ("center", "indent", "format")  # the filters whose numbers are widths of what they write
# A printf-style conversion's width and precision (a number, or * for one taken from the values).
PERCENT_SPEC = re.compile(r"%(?:\([^)]*\))?[-#0 +]*(\*|\d+)?(?:\.(\*|\d+))?")
BRACE_SPEC = re.compile(r"\{[^{}]*:([^{}]*)\}")  # str.format's {field:spec}


class RenderTimeout(Exception):
    """A content file took longer than its bound to render; `line` is its line that was running (0: unknown)."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.line = line


def _digits(number: int) -> int:
    return len(str(abs(number))) if number.bit_length() < 64 else int(number.bit_length() * math.log10(2)) + 1


def _number(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _named(value: Any) -> str:
    """A number as a message shows it: itself, or how many digits it has."""
    return f"{value}" if _digits(value) <= 20 else f"a number of {_digits(value):,} digits"


def _too_many_digits(operator: str, left: Any, right: Any) -> str | None:
    """Why an integer power or product would pass MAX_DIGITS, or None."""
    if not (_number(left) and _number(right)):
        return None
    if operator == "**":
        digits = right * math.log10(abs(left)) if right > 0 and abs(left) > 1 else 0
    else:
        digits = (left.bit_length() + right.bit_length()) * math.log10(2) if operator == "*" else 0
    if digits <= MAX_DIGITS:
        return None
    return f"{_named(left)} {operator} {_named(right)} would have about {int(digits):,} digits (at most {MAX_DIGITS:,})"


def _too_long(operator: str, left: Any, right: Any) -> str | None:
    """Why a repetition or a concatenation would pass MAX_LENGTH, or None."""
    sequences = (str, list, tuple)
    if operator == "*" and isinstance(left, sequences) != isinstance(right, sequences):
        sequence, times = (left, right) if isinstance(left, sequences) else (right, left)
        if not _number(times):
            return None
        length, what = len(sequence) * times, f"{_sized(sequence)} * {_named(times)}"
    elif operator == "+" and isinstance(left, sequences) and isinstance(right, sequences):
        length, what = len(left) + len(right), f"{_sized(left)} + {_sized(right)}"
    else:
        return None
    unit = "characters" if isinstance(left, str) or isinstance(right, str) else "items"
    return f"{what} would be {length:,} {unit} long (at most {MAX_LENGTH:,})" if length > MAX_LENGTH else None


def _sized(sequence: str | list[Any] | tuple[Any, ...]) -> str:
    """A string or list as a message names it: 'a string of 3 characters'."""
    kind, unit = ("string", "character") if isinstance(sequence, str) else ("list", "item")
    return f"a {kind} of {len(sequence):,} {unit}{'' if len(sequence) == 1 else 's'}"


def _widths(text: str, values: Any) -> Iterator[int]:
    """The widths and precisions a format string asks for, those taken from its values included."""
    for spec in PERCENT_SPEC.finditer(text):
        yield from (int(number) for number in spec.groups() if number and number != "*")
        if "*" in spec.groups():
            yield from (value for value in (values if isinstance(values, tuple) else (values,)) if _number(value))
    for spec in BRACE_SPEC.finditer(text):
        yield from (int(number) for number in re.findall(r"\d+", spec.group(1)))


def _too_wide(widths: Iterator[int], what: str) -> str | None:
    widest = max(widths, default=0)
    return f"{what} of {_named(widest)} (at most {MAX_LENGTH:,})" if widest > MAX_LENGTH else None


def _refuse(reason: str | None) -> None:
    if reason is not None:
        raise SecurityError(reason)


def _padding(call: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> str | None:
    """Why a string method's call would pad past MAX_LENGTH ("x".center(10**9), "{:>99999999}".format(1)), or None."""
    method: Any = getattr(call, "__wrapped__", call)  # the sandbox's own wrapper of str.format
    if not isinstance(getattr(method, "__self__", None), str):
        return None
    numbers = [value for value in (*args, *kwargs.values()) if _number(value)]
    if method.__name__ in ("format", "format_map"):
        numbers += _widths(method.__self__, ())
    return _too_wide(iter(numbers), f"str.{method.__name__} with a width")


def _bounded_filter(name: str, filter_function: Callable[..., Any]) -> Callable[..., Any]:
    """A filter that writes to a width (center, indent, format), refusing one past MAX_LENGTH."""

    def bounded(value: Any, *args: Any, **kwargs: Any) -> Any:
        numbers = [item for item in (*args, *kwargs.values()) if _number(item)]
        if name == "format" and isinstance(value, str):
            numbers += _widths(value, args or tuple(kwargs.values()))
        _refuse(_too_wide(iter(numbers), f"the {name} filter with a width"))
        return filter_function(value, *args, **kwargs)

    return bounded


class _CheckedConcat(CodeGenerator):
    """Jinja's code generator, but `a ~ b` calls the environment's `joined`, which checks the pieces'
    length before joining them (Jinja joins them with a function of its runtime, which no hook reaches)."""

    def visit_Concat(self, node: nodes.Concat, frame: Frame) -> None:
        escaping = "context.eval_ctx.volatile" if frame.eval_ctx.volatile else repr(bool(frame.eval_ctx.autoescape))
        self.write("environment.joined((")
        for piece in node.nodes:
            self.visit(piece, frame)
            self.write(", ")
        self.write(f"), {escaping})")


class ContentSandbox(ImmutableSandboxedEnvironment):
    """The content templates' environment: the immutable sandbox, with every value bounded in size
    and one file's rendering in time (see the module docstring)."""

    intercepted_binops = frozenset({"**", "*", "+", "%"})
    code_generator_class = _CheckedConcat
    # What the compiled code depends on besides the source: part of its key in the bytecode cache, so
    # that code compiled before (which computes these operators unchecked) is never taken from it.
    compiled_as = "checked:" + ",".join(sorted(intercepted_binops)) + ",~"

    def __init__(self, *args: Any, seconds: float | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.seconds = SECONDS if seconds is None else seconds

    def bound_filters(self) -> None:
        """Wrap the filters that write to a width (call it once the filters are all in place)."""
        for name in WIDTH_FILTERS:
            self.filters[name] = _bounded_filter(name, self.filters[name])

    def call_binop(self, context: jinja2.runtime.Context, operator: str, left: Any, right: Any) -> Any:
        _refuse(_too_many_digits(operator, left, right) or _too_long(operator, left, right))
        if operator == "%" and isinstance(left, str):
            _refuse(_too_wide(_widths(left, right), "a format width"))
            values = right if isinstance(right, tuple) else tuple(right.values()) if isinstance(right, dict) else (right,)
            length = len(left) + sum(len(value) for value in values if isinstance(value, str))
            _refuse(f"a format of {length:,} characters (at most {MAX_LENGTH:,})" if length > MAX_LENGTH else None)
        return super().call_binop(context, operator, left, right)

    def joined(self, pieces: tuple[Any, ...], escaping: bool) -> str:
        """`a ~ b ~ ...` joined as Jinja joins it, unless its text would pass MAX_LENGTH."""
        length = sum(len(piece if isinstance(piece, str) else str(piece)) for piece in pieces)
        if length > MAX_LENGTH:
            raise SecurityError(f"joining {len(pieces)} pieces of {length:,} characters with ~ (at most {MAX_LENGTH:,})")
        return markup_join(pieces) if escaping else str_join(pieces)

    def call(__self, __context: jinja2.runtime.Context, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805 - Jinja's signature
        _refuse(_padding(__obj, args, kwargs))
        return super().call(__context, __obj, *args, **kwargs)

    def render_file(self, code: CodeType, names: dict[str, Any], path: str) -> str:
        """A content template compiled from `path`, rendered with `names` within the bounds on its text
        and time; a RenderTimeout names the template's line that was running."""
        template = self.template_class.from_code(self, code, self.globals)
        pieces, length = [], 0
        try:
            with _time_bound(self.seconds):
                generator = cast(Generator[str, None, None], template.generate(names))  # typed as an Iterator; it is a generator
                for piece in generator:
                    length += len(piece)
                    if length > MAX_OUTPUT:  # thrown in where the template is, so that the message names its line
                        generator.throw(SecurityError(f"its text would pass {MAX_OUTPUT:,} characters"))
                    pieces.append(piece)
        except Stopped as stopped:
            message = f"stopped after {self.seconds:g} s, the longest one content file may take to render"
            raise RenderTimeout(message, _running_line(template, stopped, path)) from None
        return "".join(pieces)


def _running_line(template: jinja2.Template, error: BaseException, path: str) -> int:
    """The template's line that was running when `error` was raised (not rewritten by Jinja: a
    BaseException), or 0 when it was raised outside the template."""
    lines = [f.lineno or 0 for f in traceback.extract_tb(error.__traceback__) if f.filename == path]
    return template.get_corresponding_lineno(lines[-1]) if lines else 0


class Stopped(BaseException):
    """Raised in the rendering thread when its time is up: a BaseException, so that no `except Exception`
    on the way (Jinja's own, a format's) takes it for an error of its own."""


@contextlib.contextmanager
def _time_bound(seconds: float) -> Iterator[None]:
    """Raise Stopped in this thread if the block is still running after `seconds`."""
    thread, lock, running = threading.get_ident(), threading.Lock(), [True]

    def stop() -> None:
        with lock:
            if running[0]:
                _raise_in(thread, Stopped)

    timer = threading.Timer(seconds, stop)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        with lock:
            running[0] = False
        timer.cancel()
        _raise_in(thread, None)  # a Stopped set in the instant the block ended, not raised yet, is dropped


def _raise_in(thread: int, exception: type[BaseException] | None) -> None:
    """Have `thread` raise `exception` at its next step (None: drop the one pending), through CPython's C API."""
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread), ctypes.py_object(exception) if exception else None)
