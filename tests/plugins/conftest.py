"""Fixtures the SDK's test modules share: ``scratch`` and ``start`` (a plugin process under the
SDK, every frame it sends checked), defined with the SDK's own tests in :mod:`tests.plugins.test_sdk`."""
from tests.plugins.test_sdk import scratch, start

__all__ = ["scratch", "start"]
