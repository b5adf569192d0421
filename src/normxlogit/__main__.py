"""``python -m normxlogit`` runs the command line."""

from .cli import main

main()
