"""The plugin host (plugin-protocol/README.md, *Capabilities*): discovery of plugins
(:mod:`.discovery`), the frames and their checks (:mod:`.frames`), the tier-1 subprocess host
(:mod:`.host`), the tier-2 container host (:mod:`.container`), in-process built-ins
(:mod:`.builtin`) and the RPC methods a plugin may call (:mod:`.rpc`)."""
