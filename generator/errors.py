"""Problems found in the inputs, collected and reported together."""

from __future__ import annotations

import click


class Problems:
    """Collects every problem of a build, each as `path:line: id: field: message`."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def add(self, path: str, line: int, ident: str, field: str, message: str) -> None:
        self.lines.append(f"{path}:{line}: {ident}: {field}: {message}")

    def add_raw(self, text: str) -> None:
        self.lines.append(text)

    def raise_if_any(self) -> None:
        if self.lines:
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
