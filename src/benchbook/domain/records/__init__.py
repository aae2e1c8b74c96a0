"""Records: the rules of single and set-based writes, values, uniqueness keys, queries and
the filter tree, search, lists, response shaping, derived columns and CSV import."""
