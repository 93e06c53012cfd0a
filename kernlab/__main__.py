"""``python -m kernlab``: the ``kernlab`` console command (see kernlab/cli.py)."""
from .cli import main

raise SystemExit(main())
