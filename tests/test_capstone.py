"""helpers.capstone: the public names notebook 06 and scripts/ use are the modules' own
objects (re-exports, not copies), and the public contract keeps its shape."""

from __future__ import annotations

import inspect

import helpers.capstone as capstone
from helpers import capstone_evaluation, capstone_model, capstone_recipe


def test_every_public_name_is_a_re_export_of_one_module():
    modules = (capstone_recipe, capstone_model, capstone_evaluation)
    for name in capstone.__all__:
        owners = [m for m in modules if getattr(m, name, None) is getattr(capstone, name)
                  and name in vars(m) and not inspect.ismodule(getattr(m, name))]
        assert owners, f"helpers.capstone.{name} is not one of the capstone modules' names"
    assert set(capstone.__all__) == {n for n in vars(capstone) if not n.startswith("_")
                                     and not inspect.ismodule(getattr(capstone, n))} - {
        "annotations"}


def test_the_public_contract_keeps_its_shape():
    assert list(inspect.signature(capstone.train_denoiser).parameters) == ["loss", "seed"]
    assert inspect.signature(capstone.train_denoiser).parameters["loss"].default == "masked"
    assert list(inspect.signature(capstone.denoise).parameters)[:2] == ["model", "noisy"]
    assert capstone.LOSSES == ("masked", "seed")
