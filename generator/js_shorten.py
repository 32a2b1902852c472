"""The site's JavaScript made shorter token by token: every variable, parameter and function declared
inside a function gets the shortest name free in that function, the most used first, and no space is
kept that two tokens do not need to stay two (what every JavaScript minifier does; the calculator's
scripts lose a quarter of their bytes).

Line breaks all stay, so automatic semicolon insertion sees the same code. Each function names its
own bindings, outer functions first; a name is free in a function when the file does not keep it
(a global, a property, a keyword) and no outer binding the function uses has it, so every reference
still finds the same declaration (sibling functions reuse the same short names). Property names
(`a.name`, `{name: …}`) and names declared outside any function (globals another script may read)
keep theirs. The reader is for ES5, the scripts' dialect: a file holding later syntax it does not
follow (arrow functions, let/const, classes, template literals, spreads, optional chaining,
shorthand properties) or accessors (`get x() {}`) is returned as it is.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from itertools import count, product
from string import ascii_letters

_TOKEN = re.compile(
    r"""(?P<space>\s+)
    |(?P<comment>//[^\n]*|/\*[\s\S]*?\*/)
    |(?P<string>"(?:\\[\s\S]|[^"\\\n])*"|'(?:\\[\s\S]|[^'\\\n])*')
    |(?P<name>[A-Za-z_$][\w$]*)
    |(?P<number>0[xX][0-9a-fA-F]+|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
    |(?P<later>=>|\.\.\.|\?\.(?!\d)|`)
    |(?P<punct>>>>=?|<<=|>>=?|===|!==|\*\*=?|&&=?|\|\|=?|\?\?=?|[-+*%&|^<>!=]=|\+\+|--|<<|[{}()\[\];,.<>+\-*%&|^!~?:=/])""",
    re.X,
)
_REGEX = re.compile(r"/(?:\\.|\[(?:\\.|[^\]\\\n])*\]|[^/\\\[\n])+/[A-Za-z]*")
KEYWORDS = frozenset(
    "break case catch continue debugger default delete do else finally for function if in instanceof new return switch "
    "this throw try typeof var void while with null true false undefined NaN Infinity arguments eval "
    "class const enum export extends import super implements interface let package private protected public static yield "
    "await async of get set".split()
)
_LATER = frozenset({"let", "const", "class"})
# After these a `/` opens a regular expression; after a name, a number or a closing bracket it divides.
_DIVIDES_AFTER = frozenset({")", "]", "}"})
# After these a `{` opens a block (a function's or a statement's body); elsewhere an object literal.
_BEFORE_BLOCK = frozenset({")", ";", "{", "}", "else", "try", "finally", "do"})
_KEYWORD_BEFORE_EXPRESSION = frozenset({"return", "typeof", "case", "do", "else", "in", "instanceof", "new", "delete", "void", "throw"})


class Unreadable(Exception):
    """Syntax this reader does not follow: the file is published with its own names."""


@dataclass(eq=False)
class _Scope:
    """A function's scope (or the file's): the names declared in it."""

    parent: _Scope | None
    names: set[str] = field(default_factory=set)

    @property
    def global_(self) -> bool:
        return self.parent is None

    @property
    def depth(self) -> int:
        return 0 if self.parent is None else self.parent.depth + 1

    def binding(self, name: str) -> _Scope | None:
        scope: _Scope | None = self
        while scope is not None and name not in scope.names:
            scope = scope.parent
        return scope


def tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) of every token, spaces and comments included; raises Unreadable."""
    found: list[tuple[str, str]] = []
    at = 0
    while at < len(text):
        if text[at] == "/" and text[at + 1 : at + 2] not in ("/", "*") and _opens_regex(found):
            match = _REGEX.match(text, at)
            if not match:
                raise Unreadable(f"a regular expression at {at}")
            found.append(("regex", match.group(0)))
        else:
            match = _TOKEN.match(text, at)
            if not match or match.lastgroup == "later":
                raise Unreadable(f"{text[at : at + 20]!r} at {at}")
            kind = match.lastgroup or ""
            if kind == "name" and match.group(0) in _LATER:
                raise Unreadable(match.group(0))
            found.append((kind, match.group(0)))
        at = match.end()
    return found


def _opens_regex(found: list[tuple[str, str]]) -> bool:
    previous = next((t for t in reversed(found) if t[0] not in ("space", "comment")), None)
    if previous is None:
        return True
    kind, text = previous
    if kind == "name":
        return text in _KEYWORD_BEFORE_EXPRESSION
    return kind == "punct" and text not in _DIVIDES_AFTER


def shorten(text: str) -> str:
    """The script with its local names shortened and its needless spaces and comments left out, or as it is
    when it holds syntax this reader does not follow."""
    renamed = _renamed(text)
    return text if renamed is None else "".join(_spaced(renamed))


def shorten_names(text: str) -> str:
    """The script with its local names shortened (spaces and comments as they are), or as it is."""
    renamed = _renamed(text)
    return text if renamed is None else "".join(token for _, token in renamed)


def _renamed(text: str) -> list[tuple[str, str]] | None:
    """The script's tokens with the local names shortened, or None when it holds syntax this reader does not follow."""
    try:
        found = tokens(text)
        renames = _renames(found)
    except Unreadable:
        return None
    return [(kind, renames.get(i, token)) for i, (kind, token) in enumerate(found)]


def _spaced(found: list[tuple[str, str]]):
    """The tokens without comments and with a space only where two tokens would otherwise read as one: two words
    (names, keywords, numbers), a word and a pattern, or two signs (`a - -b`, `a / /b/`); line breaks all kept."""
    previous: tuple[str, str] | None = None  # the last token written on this line
    gap = False
    for kind, token in found:
        breaks = token.count("\n") if kind in ("space", "comment") else 0
        if breaks:
            yield "\n" * breaks
            previous, gap = None, False
        elif kind in ("space", "comment"):
            gap = True
        else:
            if gap and previous is not None and _joined(previous, (kind, token)):
                yield " "
            yield token
            previous, gap = (kind, token), False


def _joined(left: tuple[str, str], right: tuple[str, str]) -> bool:
    """Whether two tokens written side by side would read as something else."""
    words = ("name", "number", "regex")  # a pattern's flags are a word too
    if left[0] in words and right[0] in words:
        return True
    if left[0] == "number" and right[1].startswith("."):
        return True
    last, first = left[1][-1], right[1][0]
    return (last in "+-/" and first == last) or (last == "<" and first == "!")


def _renames(found: list[tuple[str, str]]) -> dict[int, str]:
    """New text of each token that names a local binding, by token index."""
    code = [i for i, (kind, _) in enumerate(found) if kind not in ("space", "comment")]
    scopes = _declare(found, code)
    local: dict[int, tuple[_Scope, str]] = {}  # by token: its binding (the declaring scope and the name)
    seen: dict[_Scope, set[tuple[_Scope, str]]] = {}  # by function: the outer bindings referenced in it
    kept: set[str] = set(KEYWORDS)
    pending = [0]  # `?` waiting for their `:`, per bracket level
    brackets = [""]  # the open brackets, a block's brace as "block" (an object literal's as "{")
    for n, i in enumerate(code):
        kind, text = found[i]
        if kind == "punct":
            if text in "([{":
                pending.append(0)
                block = text == "{" and (not n or found[code[n - 1]][1] in _BEFORE_BLOCK)
                brackets.append("block" if block else text)
            elif text in ")]}" and len(pending) > 1:
                pending.pop()
                brackets.pop()
            elif text == "?":
                pending[-1] += 1
            elif text == ":" and pending[-1]:
                pending[-1] -= 1
            continue
        if kind != "name":
            continue
        before = found[code[n - 1]][1] if n else ""
        after = found[code[n + 1]][1] if n + 1 < len(code) else ""
        if before in ("{", ",") and after in (",", "}") and brackets[-1] == "{" or before in ("get", "set") and after == "(":
            raise Unreadable(f"{text}: a shorthand property or an accessor")
        is_key = after == ":" and before in ("{", ",") and not pending[-1]
        binding = None if before == "." or is_key or text in KEYWORDS else scopes[i].binding(text)
        if binding is None or binding.global_:
            kept.add(text)
            continue
        local[i] = (binding, text)
        scope = scopes[i]
        while scope is not binding:  # every function between the reference and its declaration sees the binding
            seen.setdefault(scope, set()).add((binding, text))
            scope = scope.parent  # type: ignore[assignment]
    return {i: name for i, name in zip(local, _new_names(local.values(), seen, kept), strict=True)}


def _new_names(references, seen: dict[_Scope, set[tuple[_Scope, str]]], kept: set[str]) -> list[str]:
    """The new name of each reference's binding: per function, outer ones first, the shortest names that are neither
    kept nor those of the outer bindings it sees (sibling functions reuse the same short names)."""
    references = list(references)
    uses = Counter(references)
    by_scope: dict[_Scope, list[tuple[_Scope, str]]] = {}
    for binding in sorted(uses, key=lambda b: (-uses[b], b[1])):
        by_scope.setdefault(binding[0], []).append(binding)
    new: dict[tuple[_Scope, str], str] = {}
    for scope in sorted(by_scope, key=lambda s: s.depth):
        taken = kept | {new[b] for b in seen.get(scope, ()) if b in new}
        fresh = (name for name in _short_names() if name not in taken)
        new.update((binding, next(fresh)) for binding in by_scope[scope])
    return [new[binding] for binding in references]


def _declare(found: list[tuple[str, str]], code: list[int]) -> dict[int, _Scope]:
    """The function scope each token stands in, every scope holding the names declared in it (var, function, parameters, catch)."""
    top = _Scope(None)
    at: dict[int, _Scope] = {}
    scope = top
    bodies: list[tuple[int, _Scope]] = []  # (bracket depth of the body, the scope outside it)
    depth = 0
    declaring: int | None = None  # the bracket depth of a `var` statement being read
    opening: _Scope | None = None  # the scope of a function whose parameters or body come next
    expect_name = False
    for n, i in enumerate(code):
        kind, text = found[i]
        at[i] = opening if opening is not None and kind == "name" and not expect_name else scope
        before = found[code[n - 1]][1] if n else ""
        if text == "function" and kind == "name" and before != ".":
            opening, expect_name = _Scope(scope), True
            continue
        if expect_name:
            expect_name = False
            if kind == "name":
                scope.names.add(text)
                at[i] = scope
                continue
        if kind == "name" and opening is not None:
            opening.names.add(text)  # a parameter
        elif kind == "name" and declaring == depth and before in ("var", ","):
            scope.names.add(text)
        elif kind == "name" and before == "(" and n > 1 and found[code[n - 2]][1] == "catch":
            scope.names.add(text)
        elif text == "var" and kind == "name":
            declaring = depth
        if kind != "punct":
            continue
        if text in "([":
            depth += 1
        elif text == "{":
            depth += 1
            if opening is not None:
                bodies.append((depth, scope))
                scope, opening = opening, None
        elif text in ")]}":
            if declaring is not None and depth <= declaring:
                declaring = None
            if text == "}" and bodies and bodies[-1][0] == depth:
                scope = bodies.pop()[1]
            depth -= 1
        elif text == ";" and declaring == depth:
            declaring = None
    return at


def _short_names():
    """a, b, …, Z, _, $, then two characters, three, … (keywords are left out by the caller)."""
    first = ascii_letters + "_$"
    rest = first + "0123456789"
    yield from first
    for size in count(1):
        for head, *tail in product(first, *[rest] * size):
            yield head + "".join(tail)
