"""Problems found in the inputs, collected and reported together."""

from __future__ import annotations

import click


class Problems:
    """Collects every problem of a build, each as `path:line: id: field: message`."""

    def __init__(self) -> None:
        self.found: list[tuple[str, int, str]] = []

    def add(self, path: str, line: int, ident: str, field: str, message: str) -> None:
        self.found.append((path, line, f"{path}:{line}: {ident}: {field}: {message}"))

    def add_raw(self, text: str, path: str = "", line: int = 0) -> None:
        self.found.append((path, line, text))

    @property
    def lines(self) -> list[str]:
        """Problems grouped by file, in the order files were read, then by line."""
        order = {path: index for index, (path, _, _) in reversed(list(enumerate(self.found)))}
        ranked = sorted(enumerate(self.found), key=lambda item: (order[item[1][0]], item[1][1], item[0]))
        return [text for _, (_, _, text) in ranked]

    def raise_if_any(self) -> None:
        if self.found:
            raise BuildError(self.lines)


class BuildError(click.ClickException):
    """The inputs are wrong: one clean message per problem, exit code 1."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = list(lines)
        count = len(self.lines)
        summary = f"{count} problem{'s' if count != 1 else ''} found; nothing was written."
        super().__init__("\n".join([*self.lines, summary]))

    def format_message(self) -> str:
        return self.message

    def show(self, file=None) -> None:  # noqa: ANN001 - click's signature
        click.echo(self.format_message(), err=True, file=file)
