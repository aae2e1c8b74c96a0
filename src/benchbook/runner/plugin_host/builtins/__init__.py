"""benchbook's own in-process plugins (tier ``builtin``), one module each; every module
defines ``plugin`` (a :class:`benchbook.plugin.Plugin` with its run function) and documents
its contract. :data:`PLUGINS` lists them in the order discovery registers them.

- ``benchbook.text-stats`` (:mod:`.text_stats`): words, characters and lines of a text;
- ``benchbook.file-checksum`` (:mod:`.file_checksum`): size and md5/sha1 of a stored file;
- ``benchbook.set-fields`` (:mod:`.set_fields`): fields of the run's record from templates;
- ``benchbook.import-table`` (:mod:`.import_table`): rows of a CSV/TSV/.xlsx file → child records;
- ``benchbook.attach-files`` (:mod:`.attach_files`): files of a zip → the records their names key.
"""
from __future__ import annotations

from benchbook.plugin import Plugin
from benchbook.runner.plugin_host.builtins import (
    attach_files,
    file_checksum,
    import_table,
    set_fields,
    text_stats,
)

PLUGINS: tuple[Plugin, ...] = (text_stats.plugin, file_checksum.plugin, set_fields.plugin, import_table.plugin,
                               attach_files.plugin)
"""Every built-in, in registration order."""
