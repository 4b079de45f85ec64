"""Allow ``python -m afkit``."""

from afkit.cli import main

raise SystemExit(main())
