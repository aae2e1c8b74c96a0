"""The runner: what executes work outside a request's transaction. ``plugin_host/`` hosts plugin
processes (tiers 1, 2 and built-in); the run queue, worker, triggers and workflow engine join
it (docs/architecture.md). The domain never imports the runner.

"Plugin" names three parts, each by its own word: the SDK a plugin is written with
(``benchbook.plugin``, imported by plugins, so its name stays), the host that runs plugins
(``benchbook.runner.plugin_host``) and the registry of discovered plugins
(``benchbook.domain.plugin_registry``, the ``plugins`` table); ``handlers/plugins.py`` serves
the OpenAPI ``plugins`` tag."""
