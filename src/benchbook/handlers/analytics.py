"""Handlers of the ``analytics`` tag (docs/decisions.md *Analytics*).

Every endpoint accepts the same query parameters (the document declares them all on each path);
each passes on only its own and ignores the rest (``**_``)."""
from __future__ import annotations

from typing import Any

from benchbook.domain import analytics as domain
from benchbook.domain.analytics_shapes import (
    AnalyticsAiUsage,
    AnalyticsAuditEvents,
    AnalyticsFailuresByPlugin,
    AnalyticsJobDurations,
    AnalyticsJobsByTrigger,
    AnalyticsJobStatus,
    AnalyticsRecordCounts,
    AnalyticsRecordGrowth,
)
from benchbook.handlers.uow import read


def records_counts(dataset: str | None = None, schema: str | None = None,
                   **_: Any) -> tuple[AnalyticsRecordCounts, int]:
    with read() as s:
        return domain.records_counts(s, collection=dataset, schema=schema), 200


def records_growth(start: str | None = None, end: str | None = None, bucket: str | None = None,
                   dataset: str | None = None, schema: str | None = None,
                   **_: Any) -> tuple[AnalyticsRecordGrowth, int]:
    with read() as s:
        return domain.records_growth(s, start=start, end=end, bucket=bucket, collection=dataset, schema=schema), 200


def audit_events(start: str | None = None, end: str | None = None, bucket: str | None = None,
                 entity_type: str | None = None, action: str | None = None,
                 **_: Any) -> tuple[AnalyticsAuditEvents, int]:
    with read() as s:
        return domain.audit_events(s, start=start, end=end, bucket=bucket, action=action,
                                   entity_type=entity_type), 200


def jobs_by_trigger(start: str | None = None, end: str | None = None, workflow_id: str | None = None,
                    status: str | None = None, trigger: str | None = None,
                    **_: Any) -> tuple[AnalyticsJobsByTrigger, int]:
    with read() as s:
        return domain.jobs_by_trigger(s, start=start, end=end, workflow_id=workflow_id, status=status,
                                      trigger=trigger), 200


def jobs_duration(start: str | None = None, end: str | None = None, plugin_id: str | None = None,
                  status: str | None = None, **_: Any) -> tuple[AnalyticsJobDurations, int]:
    with read() as s:
        return domain.jobs_duration(s, start=start, end=end, plugin_id=plugin_id, status=status), 200


def jobs_failures_by_plugin(start: str | None = None, end: str | None = None, bucket: str | None = None,
                            plugin_id: str | None = None, **_: Any) -> tuple[AnalyticsFailuresByPlugin, int]:
    with read() as s:
        return domain.jobs_failures_by_plugin(s, start=start, end=end, bucket=bucket, plugin_id=plugin_id), 200


def jobs_status(start: str | None = None, end: str | None = None, bucket: str | None = None,
                workflow_id: str | None = None, trigger: str | None = None, status: str | None = None,
                **_: Any) -> tuple[AnalyticsJobStatus, int]:
    with read() as s:
        return domain.jobs_status(s, start=start, end=end, bucket=bucket, workflow_id=workflow_id,
                                  trigger=trigger, status=status), 200


def ai_usage(start: str | None = None, end: str | None = None, bucket: str | None = None, provider: str | None = None,
             model: str | None = None, **_: Any) -> tuple[AnalyticsAiUsage, int]:
    with read() as s:
        return domain.ai_usage(s, start=start, end=end, bucket=bucket, provider=provider, model=model), 200
