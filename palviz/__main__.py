"""``python -m palviz`` is the ``palviz`` command."""

from palviz.cli import main

if __name__ == "__main__":  # not when a spawned worker process imports this module
    raise SystemExit(main())
