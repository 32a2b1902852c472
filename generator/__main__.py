"""`python -m gpumem`: the `gpumem` command."""

from .cli import main

main()
