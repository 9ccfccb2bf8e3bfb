"""The parameters cells' contracts (palviz.params): every example value passes, every wrong value
fails with a message naming the parameter, and unknown or missing names are errors."""

from __future__ import annotations

import pytest

from palviz.params import SCHEMAS, check_parameters

CASES = [(nb, name) for nb, schema in SCHEMAS.items() for name in schema]


def _defaults(notebook: str) -> dict:
    return {name: p.examples[0] for name, p in SCHEMAS[notebook].items()}


@pytest.mark.parametrize(("notebook", "name"), CASES)
def test_examples_pass_and_the_wrong_value_names_the_parameter(notebook, name):
    parameter = SCHEMAS[notebook][name]
    assert parameter.examples, f"{notebook} {name}: no example values"
    for value in parameter.examples:
        check_parameters(notebook, **{**_defaults(notebook), name: value})
    with pytest.raises(ValueError, match=rf"^{name}\b"):
        check_parameters(notebook, **{**_defaults(notebook), name: parameter.wrong})


def test_unknown_and_missing_names_are_errors():
    with pytest.raises(ValueError, match=r"no parameter \['EPOCH'\]"):
        check_parameters("06", **_defaults("06"), EPOCH=3)
    values = _defaults("07")
    values.pop("LR")
    with pytest.raises(ValueError, match=r"\['LR'\] were not passed"):
        check_parameters("07", **values)
