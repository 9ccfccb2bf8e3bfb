"""``python -m palviz`` is the ``palviz`` command."""

from palviz.cli import main

raise SystemExit(main())
