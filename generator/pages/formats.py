"""Numbers, prices, dates and interface strings written the way the page's language writes them:
Babel's locale data and patterns, and gettext catalogs compiled from the project's .po files.
Used by the renderer (pages/render.py) and the table rows; computes no figure.
"""

from __future__ import annotations

import copy
import functools
import gettext
import io
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path
from typing import Any, Literal

from babel import Locale
from babel.dates import format_date, format_time
from babel.lists import format_list
from babel.messages.mofile import write_mo
from babel.numbers import format_currency, format_percent, get_currency_precision, get_decimal_symbol, get_group_symbol
from markupsafe import Markup, escape

from gpumem.catalog.load import parsed_messages
from gpumem.pages.rows import escape as safe_text


class FormatError(ValueError):
    """A placeholder asked to format something that is not a number, a price or a date."""


def _checked(value: Any) -> float:
    """A finite number, or a FormatError saying what a placeholder passed instead."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FormatError(f"expected a number to format, got {value!r:.80}")
    return value


_STEPS = [Decimal(1).scaleb(-digits) for digits in range(8)]


def _remembered(function: Callable[..., str]) -> Callable[..., str]:
    """`function` with its results kept per argument and type (True is not 1); an unhashable
    argument (a placeholder passing a list) goes through uncached, to fail as it should."""
    cached = functools.lru_cache(maxsize=None, typed=True)(function)

    def call(*args: Any, **kwargs: Any) -> str:
        try:
            return cached(*args, **kwargs)
        except TypeError:  # unhashable (the cache raises before calling), or the function's own: either way, called plainly
            return function(*args, **kwargs)

    return call


@dataclass(frozen=True)
class Money:
    """How a language writes an amount of one currency: the text before and after the number, and
    the number's decimals."""

    prefix: str
    suffix: str
    places: int

    PROBE = 1234567.25  # every digit group and the decimals apart

    @classmethod
    def probed(cls, formats: Formats, currency: str, digits: int | None) -> Money | None:
        """The shape of Babel's output for the probe, or None when its number is not written the way
        _money writes it (another grouping, another numbering system)."""
        places = get_currency_precision(currency) if digits is None else digits
        if places >= len(_STEPS):
            return None
        written = formats._babel_money(cls.PROBE, digits, currency)
        rounded = Decimal(repr(cls.PROBE)).quantize(_STEPS[places], rounding=ROUND_HALF_EVEN)
        number = f"{rounded:,f}".translate(formats._separators)
        before, found, after = written.partition(number)
        return cls(before, after, places) if found and number not in after else None


class Formats:
    """Numbers, prices and dates written the way the page's language writes them."""

    def __init__(self, lang: str, currency: str, gb_unit: str = "GB") -> None:
        self.lang, self.currency, self.gb_unit = lang, currency, gb_unit
        # French sets a narrow no-break space before two-part punctuation (Lexique des règles
        # typographiques en usage à l'Imprimerie nationale); Babel's locale data has no such rule.
        space = "\u202f" if self.lang.split("-")[0] == "fr" else ""
        self.colon, self.semicolon = space + ":", space + ";"
        self.locale = lang.replace("-", "_")  # Babel's form of a BCP 47 code: pt-BR -> pt_BR
        locale = Locale.parse(self.locale)
        self._separators = str.maketrans({",": get_group_symbol(locale=locale), ".": get_decimal_symbol(locale=locale)})
        # A page formats the same few hundred values again and again (Babel's currency pattern costs
        # some 40 µs a call): each language's Formats remembers what it wrote.
        self.number = _remembered(self._number)  # type: ignore[method-assign]
        self.money = _remembered(self._money)  # type: ignore[method-assign]
        self.percent = _remembered(self._percent)  # type: ignore[method-assign]
        self._lists: dict[tuple[tuple[str, ...], str], str] = {}  # (names, style) -> the list in words
        self._shapes: dict[tuple[str, int | None], Money | None] = {}  # (currency, digits) -> its pattern

    def _number(self, value: float, digits: int = 0) -> str:
        """Grouped, with up to `digits` decimals, rounded half to even: what Babel's '#,##0.#' writes.

        A float is read as its shortest decimal form (repr), as Babel and the browser's
        Intl.NumberFormat both read it: 0.05 is 0.05, not the binary 0.05000000000000000277.
        """
        rounded = Decimal(repr(_checked(value))).quantize(_STEPS[digits], rounding=ROUND_HALF_EVEN)
        text = f"{rounded:,f}"
        if "." in text:
            text = text.rstrip("0").rstrip(".")
        return ("0" if text in ("-0", "") else text).translate(self._separators)

    def gb(self, value: float) -> str:
        """Decimal gigabytes with at most one decimal, in the language's unit: '1.120 GB', '42,9 Go'."""
        return f"{self.number(value, 1)}\u00a0{self.gb_unit}"

    def tokens(self, value: float) -> str:
        """A context length in the short form axes use: '8k', '128k'."""
        return f"{self.number(value / 1024)}k" if value >= 1024 else self.number(value)

    def _money(self, value: float, digits: int | None = None, currency: str = "") -> str:
        """A price in the snapshot's currency (or the one named: a price check is in US dollars), with
        the currency's decimals or `digits` of them, in the language's currency pattern.

        What Babel writes (_babel_money), in a tenth of the time: the number is grouped and rounded
        as _number does, with a fixed count of decimals, and put between the prefix and suffix that
        Babel's own output for a probe shows for this currency (Money). A negative amount, and a
        currency or language whose pattern the probe does not show, go to Babel.
        """
        code = currency or self.currency
        key = (code, digits)
        if key not in self._shapes:
            self._shapes[key] = Money.probed(self, code, digits)
        shape, number = self._shapes[key], _checked(value)
        if shape is None or math.copysign(1.0, number) < 0:
            return self._babel_money(number, digits, code)
        rounded = Decimal(repr(number)).quantize(_STEPS[shape.places], rounding=ROUND_HALF_EVEN)
        return f"{shape.prefix}{f'{rounded:,f}'.translate(self._separators)}{shape.suffix}"

    def _babel_money(self, value: float, digits: int | None, currency: str) -> str:
        if digits is None:
            return format_currency(value, currency, locale=self.locale)
        pattern = copy.copy(Locale.parse(self.locale).currency_formats["standard"])
        pattern.frac_prec = (digits, digits)
        return pattern.apply(value, Locale.parse(self.locale), currency=currency, currency_digits=False)

    def _percent(self, value: float) -> str:
        return format_percent(_checked(value), locale=self.locale)

    def date(self, moment: datetime) -> str:
        return format_date(moment, "medium", locale=self.locale)

    def time(self, moment: datetime) -> str:
        return format_time(moment, "HH:mm", locale=self.locale)

    def either(self, names: Iterable[str]) -> str:
        """'L40S, RTX 6000 Ada or RTX A6000' in the page's language."""
        return self._list(tuple(names), "or")

    def both(self, names: Iterable[str]) -> str:
        return self._list(tuple(names), "standard")

    def _list(self, names: tuple[str, ...], style: Literal["standard", "or"]) -> str:
        # Babel's list patterns cost some 40 µs a call, and a page names the same GPUs in many cells.
        if (names, style) not in self._lists:
            self._lists[(names, style)] = format_list(list(names), style=style, locale=self.locale)
        return self._lists[(names, style)]


def compile_translations(translations_dir: Path, lang: str) -> bytes:
    """A language's .po file compiled in memory: the bytes of its .mo."""
    path = translations_dir / lang / "LC_MESSAGES" / "messages.po"
    catalog = parsed_messages(path.read_text(encoding="utf-8"), lang.replace("-", "_"))  # as the build checked it
    compiled = io.BytesIO()
    write_mo(compiled, catalog)
    return compiled.getvalue()


def load_translations(translations_dir: Path, lang: str, compiled: bytes | None = None) -> gettext.NullTranslations:
    """A language's gettext catalog, from its .po file (or from `compiled`, its .mo bytes)."""
    return gettext.GNUTranslations(io.BytesIO(compiled if compiled is not None else compile_translations(translations_dir, lang)))


def gettext_functions(translations: gettext.NullTranslations) -> dict[str, Callable[..., Markup]]:
    """`_` and `ngettext` for templates: translated, escaped, then filled with %(name)s values."""

    @functools.cache
    def plain(message: str) -> Markup:
        return escape(translations.gettext(message))

    def _(message: str, **values: Any) -> Markup:
        return filled(plain(message), values) if values else plain(message)

    def ngettext(singular: str, plural: str, n: int, **values: Any) -> Markup:
        return filled(escape(translations.ngettext(singular, plural, n)), {"num": n, **values})

    return {"_": _, "ngettext": ngettext}


def filled(pattern: Markup, values: dict[str, Any]) -> Markup:
    """`pattern % values` as Markup writes it (each value escaped), in half the time: every placeholder
    of the templates and translations is %(name)s, which takes a value escaped beforehand as it is;
    any other (%(name)d) is left to Markup."""
    try:
        return Markup(str.__mod__(pattern, {name: safe_text(value) for name, value in values.items()}))
    except TypeError:
        return pattern % values
