"""`python -m dfslab.cli`."""

from . import main

main()
