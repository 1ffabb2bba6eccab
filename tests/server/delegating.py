"""Test doubles that wrap a real port (a room log, a storage) and replace some of its methods.

What a test injects where replacing a method on the instance, or subclassing the adapter, would
not reach the compiled build (``HALFMOON_COMPILE=1``, docs/server.md): compiled code does not
look a method up on the instance, and an interpreted class cannot inherit from a compiled one.
The server takes its ports by their protocols, so a wrapper is as good as the real adapter to it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class Delegating:
    """Everything not defined here (or by a subclass) is ``inner``'s."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def replaced(inner: Any, **methods: Callable[..., Any]) -> Any:
    """``inner`` with the methods named replaced (by plain functions: no ``self``)."""
    wrapper = Delegating(inner)
    for name, method in methods.items():
        setattr(wrapper, name, method)
    return wrapper
