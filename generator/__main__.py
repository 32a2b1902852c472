"""`python -m gpumem`: the `gpumem` command."""

from gpumem.cli.main import run

run()
