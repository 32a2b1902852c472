"""`python -m gpumem`: the `gpumem` command."""

from .entry import command

command()
