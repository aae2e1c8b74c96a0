"""HTTP handlers, one module per OpenAPI tag, resolved by ``operationId`` (``records.list_records``
→ ``records.py:list_records``). Each is thin: unpack the request, call the domain, shape the
response. Transactions are opened by :mod:`benchbook.handlers.uow`."""
