"""palviz is imported before torch, as every palviz process does: the tests' runs are pinned
to AVX2 like the rest (palviz.cpu)."""

import palviz  # noqa: F401
