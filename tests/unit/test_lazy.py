"""archsim.lazy: the packages' PEP 562 public names."""

from __future__ import annotations

import pytest

from archsim.lazy import lazy_names


def test_a_name_resolves_once_and_is_stored_in_the_namespace():
    namespace: dict[str, object] = {}
    getattr_, dir_ = lazy_names("pkg", {"sqrt": "math", "dumps": "json"}, namespace)
    import math

    assert getattr_("sqrt") is math.sqrt
    assert namespace == {"sqrt": math.sqrt}  # later look-ups bypass __getattr__
    assert dir_() == ["dumps", "sqrt"]


def test_an_unknown_name_raises_attribute_error_naming_the_package():
    getattr_, _ = lazy_names("archsim.config", {}, {})
    with pytest.raises(AttributeError, match="module 'archsim.config' has no attribute 'nope'"):
        getattr_("nope")


def test_every_package_resolves_its_public_names():
    import importlib

    for package in ("config", "datapath", "report", "accelerators", "explore"):
        module = importlib.import_module(f"archsim.{package}")
        for name in module.__all__:
            assert getattr(module, name) is not None, (package, name)
