"""The cluster engine of the cluster tests (submitit): imported, or the test is skipped, or,
under ``PALVIZ_REQUIRE_CLUSTER=1`` (``make test`` sets it, and its test extra installs it),
failed, so that CI never skips them silently."""

from __future__ import annotations

import importlib
import os
from types import ModuleType

INSTALL_HINT = "pip install -e '.[cluster]' (the test extra includes it)"


def require_engine(module: str) -> ModuleType:
    """The engine's module ``module``, or skip the test (fail it when
    ``PALVIZ_REQUIRE_CLUSTER=1``)."""
    import pytest

    try:
        return importlib.import_module(module)
    except ImportError as err:
        message = f"the cluster test needs {module}, which does not import ({err}): {INSTALL_HINT}"
        if os.environ.get("PALVIZ_REQUIRE_CLUSTER") == "1":
            pytest.fail(f"PALVIZ_REQUIRE_CLUSTER=1 but {message}", pytrace=False)
        pytest.skip(message)
