"""`python -m glassformer` is the `glassformer` command."""

from glassformer.cli import main

raise SystemExit(main())
