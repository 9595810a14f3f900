"""`python -m ctxplug` runs the command line."""

from ctxplug.cli import main

raise SystemExit(main())
