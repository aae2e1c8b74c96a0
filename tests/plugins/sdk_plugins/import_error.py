"""Broken for the SDK tests: fails while it is imported."""
from benchbook.plugin import Plugin

plugin = Plugin(id="import-error", name="Import error")
raise RuntimeError("cannot start: missing calibration")
