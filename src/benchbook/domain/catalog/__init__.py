"""The catalog: schemas, their fields and field types, collections, natural names, and the
lookups every other room uses to find them."""
