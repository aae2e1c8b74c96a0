"""The runner: what executes work outside a request's transaction. ``plugins/`` hosts plugin
processes (tiers 1, 2 and built-in); the run queue, worker, triggers and workflow engine join
it (docs/architecture.md). The domain never imports the runner."""
