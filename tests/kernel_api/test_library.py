"""harness.kernel_api.returned: what a library's own function returned while an entry ran, the function itself
untouched in behaviour and put back after."""

from __future__ import annotations

import types

import pytest

from harness.kernel_api import returned


def test_every_return_is_recorded_as_returned_and_the_function_put_back():
    lib = types.SimpleNamespace(get_config=lambda m: ({"BLOCK": 64 if m <= 64 else 128, "kernel_type": "b"}, True))
    real = lib.get_config

    def entry(m):  # the library's op: looks up, then changes what it got (AITER pops kernel_type)
        cfg, _ = lib.get_config(m)
        cfg.pop("kernel_type")
        return cfg["BLOCK"]

    with returned(lib, "get_config") as seen:
        assert entry(32) == 64 and entry(100) == 128
    assert seen == [({"BLOCK": 64, "kernel_type": "b"}, True), ({"BLOCK": 128, "kernel_type": "b"}, True)]
    assert lib.get_config is real


def test_put_back_after_an_error_and_an_optional_name_may_be_missing():
    lib = types.SimpleNamespace(f=lambda: 1)
    real = lib.f
    with pytest.raises(RuntimeError), returned(lib, "f"):
        raise RuntimeError("the op failed")
    assert lib.f is real
    with returned(lib, "older_checkout_lacks_it", optional=True) as seen:
        pass
    assert seen == [] and not hasattr(lib, "older_checkout_lacks_it")
    with pytest.raises(AttributeError), returned(lib, "g"):
        pass
