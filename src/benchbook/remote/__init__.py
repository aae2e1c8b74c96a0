"""A device's side of sync (issue 34, docs/sync.md): the HTTP client of the authority
(:mod:`.client`), the device token kept in the project folder (:mod:`.token`), and one sync,
connect and disconnect (:mod:`.syncing`). It sits beside the runner: handlers and the CLI call
it, it calls the domain (``domain/sync``) and talks to the authority over HTTP."""
