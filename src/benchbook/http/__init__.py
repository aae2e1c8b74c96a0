"""The HTTP edge: what stands between a request and the handlers.

- :mod:`.app`: the app factory (``create_app``): Connexion over the document, the error
  handlers, and the edge's middlewares in one ordered list (``edge_middlewares``, outermost
  first);
- one middleware per module: :mod:`.guard` (Host and Origin, request ids; outermost),
  :mod:`.root_paths` (``/openapi.json``, ``/docs``), :mod:`.abandonment` (a request's
  "requester has gone" signal), :mod:`.device_uploads` (a device's upload checked before its
  body is read), :mod:`.pacing` (record pages at once), :mod:`.request_limits` (sizes, counted
  as the request streams in), :mod:`.document_served` (``/api/openapi.json`` and ``.yaml``);
- the document (:mod:`.document`: parsed once per content) and how requests are read against
  it: :mod:`.validation` (every error of a body or parameter in the 422 envelope, multipart
  forms streamed to disk), :mod:`.query_parser` (query arrays), :mod:`.redaction` (secrets
  kept out of errors and logs);
- :mod:`.web_routes`: the web app's page and files (``benchbook/web/static/``) at ``/``;
- :mod:`.envelope`: the one writer of the error envelope.

Nothing below the handlers imports from here.
"""
