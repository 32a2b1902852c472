"""Problems found in the inputs, collected and reported together."""

from __future__ import annotations

import sys


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


NOTHING_WRITTEN = "nothing was written."
SITE_KEPT = "the previous site is left as it was."


class BuildError(Exception):
    """One clean message per problem, then what became of the output folder; exit code 1.

    `outcome` ends the summary line and must be true: problems found before the writer starts
    leave NOTHING_WRITTEN; a write that fails after it started says what the writer left, for
    example SITE_KEPT. A plain exception, so the no-change check loads without click; the command
    line shows it as click shows its own errors (cli.Commands).
    """

    exit_code = 1

    def __init__(self, lines: list[str], outcome: str = NOTHING_WRITTEN) -> None:
        self.lines = list(lines)
        self.outcome = outcome
        count = len(self.lines)
        summary = f"{count} problem{'s' if count != 1 else ''} found; {outcome}"
        self.message = "\n".join([*self.lines, summary])
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def format_message(self) -> str:
        return self.message

    def show(self, file=None) -> None:  # noqa: ANN001 - a text stream, stderr by default
        print(self.format_message(), file=file or sys.stderr)
