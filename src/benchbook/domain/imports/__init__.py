"""Importing files into a collection (issue 14 *Import*; docs/import.md): readers per format
(:mod:`.readers`), dates (:mod:`.dates`), schema inference (:mod:`.infer`), columns and cells
(:mod:`.columns`), parents by key (:mod:`.parents`), upsert keys (:mod:`.keys`), problem
summaries (:mod:`.problems`), the run itself (:mod:`.run`) and the rejected-rows file
(:mod:`.rejected`). ``benchbook import`` and ``POST /collections/{name_or_id}/import`` both
call :func:`~.run.import_table` inside one transaction of their own.
"""
