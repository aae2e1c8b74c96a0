"""Broken for the SDK tests: two Plugin instances."""
from benchbook.plugin import Plugin

first = Plugin(id="first", name="First")
second = Plugin(id="second", name="Second")
