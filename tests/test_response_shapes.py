"""The domain's response types say what the OpenAPI document says: for each TypedDict, its
required keys are the component's ``required`` and all its keys the component's
``properties``, so neither can gain or lose a key without the other."""

from __future__ import annotations

from pathlib import Path
from typing import Any, get_type_hints

import pytest
import yaml

from benchbook.domain.analytics_shapes import (
    AiUsageItem,
    AnalyticsAiUsage,
    AnalyticsAuditEvents,
    AnalyticsFailuresByPlugin,
    AnalyticsJobDurations,
    AnalyticsJobsByTrigger,
    AnalyticsJobStatus,
    AnalyticsRecordCounts,
    AnalyticsRecordGrowth,
    AuditEventsItem,
    DurationBin,
    FailuresByPluginItem,
    JobsByTriggerItem,
    JobStatusItem,
    PercentileMarker,
    RecordCountItem,
    RecordGrowthItem,
)
from benchbook.domain.catalog.shapes import (
    CollectionResponse,
    FieldResponse,
    FieldTypeResponse,
    RestoreBlocker,
    RestorePlanResponse,
    SchemaResponse,
    ViewResponse,
)
from benchbook.domain.file_shapes import FileInfoResponse, FileResponse
from benchbook.domain.history.shapes import (
    AuditBatchResponse,
    AuditChange,
    AuditEventPart,
    AuditEventResponse,
    AuditLogResponse,
    PaginatedAuditEventResponse,
    PaginatedAuditLogResponse,
)
from benchbook.domain.plugin_shapes import PluginPort, PluginResponse
from benchbook.domain.records.shapes import (
    DeletedFieldValue,
    DeletedRecordExample,
    DeletedRecordsResponse,
    FileLabel,
    PaginatedDeletedRecordsResponse,
    PaginatedRecordResponse,
    RecordCountsResponse,
    RecordRef,
    RecordResponse,
)
from benchbook.runner.shapes import (
    AffectedRecord,
    DrainResponse,
    FailureGroupResponse,
    JobCountResponse,
    JobDeleteResponse,
    JobRerunResponse,
    SkippedJob,
    StepExecution,
    WorkflowJobResponse,
    WorkflowProblem,
    WorkflowResponse,
    WorkflowRunManyResponse,
    WorkflowStep,
)

DOCUMENT = Path(__file__).resolve().parents[1] / "src" / "benchbook" / "openapi.yaml"

SHAPES: list[tuple[Any, tuple[str, ...]]] = [
    (RecordResponse, ("RecordResponse",)),
    (PaginatedRecordResponse, ("PaginatedRecordResponse",)),
    (DeletedRecordsResponse, ("DeletedRecordsResponse",)),
    (DeletedRecordExample, ("DeletedRecordExample",)),
    (PaginatedDeletedRecordsResponse, ("PaginatedDeletedRecordsResponse",)),
    (RecordCountsResponse, ("RecordCountsResponse",)),
    (RecordRef, ("RecordRef",)),
    (DeletedFieldValue, ("DeletedFieldValue",)),
    (FileLabel, ("RecordResponse", "properties", "file_labels", "additionalProperties")),
    (AuditLogResponse, ("AuditLogResponse",)),
    (FileResponse, ("FileResponse",)),
    (FileInfoResponse, ("FileInfoResponse",)),
    (PaginatedAuditLogResponse, ("PaginatedAuditLogResponse",)),
    (AuditChange, ("AuditChange",)),
    (AuditBatchResponse, ("AuditBatchResponse",)),
    (AuditEventResponse, ("AuditEventResponse",)),
    (AuditEventPart, ("AuditEventPart",)),
    (PaginatedAuditEventResponse, ("PaginatedAuditEventResponse",)),
    (WorkflowJobResponse, ("WorkflowJobResponse",)),
    (PluginResponse, ("PluginResponse",)),
    (PluginPort, ("PluginPort",)),
    (StepExecution, ("StepExecution",)),
    (AffectedRecord, ("AffectedRecord",)),
    (JobRerunResponse, ("JobRerunResponse",)),
    (SkippedJob, ("SkippedJob",)),
    (FailureGroupResponse, ("FailureGroupResponse",)),
    (WorkflowRunManyResponse, ("WorkflowRunManyResponse",)),
    (DrainResponse, ("DrainResponse",)),
    (JobCountResponse, ("JobCountResponse",)),
    (JobDeleteResponse, ("JobDeleteResponse",)),
    (WorkflowResponse, ("WorkflowResponse",)),
    (WorkflowStep, ("WorkflowStep",)),
    (WorkflowProblem, ("WorkflowProblem",)),
    (FieldResponse, ("FieldResponse",)),
    (SchemaResponse, ("SchemaResponse",)),
    (CollectionResponse, ("DatasetResponse",)),
    (ViewResponse, ("ViewResponse",)),
    (RestorePlanResponse, ("RestorePlanResponse",)),
    (RestoreBlocker, ("RestorePlanResponse", "properties", "blocked_by")),
    (FieldTypeResponse, ("FieldTypeResponse",)),
    *[(shape, (name,)) for shape, name in [
        (AnalyticsRecordCounts, "AnalyticsRecordCounts"), (AnalyticsRecordGrowth, "AnalyticsRecordGrowth"),
        (AnalyticsAuditEvents, "AnalyticsAuditEvents"), (AnalyticsJobsByTrigger, "AnalyticsJobsByTrigger"),
        (AnalyticsJobStatus, "AnalyticsJobStatus"), (AnalyticsFailuresByPlugin, "AnalyticsFailuresByPlugin"),
        (AnalyticsAiUsage, "AnalyticsAiUsage"), (AnalyticsJobDurations, "AnalyticsJobDurations")]],
    *[(shape, (name, "properties", "items", "items")) for shape, name in [
        (RecordCountItem, "AnalyticsRecordCounts"), (RecordGrowthItem, "AnalyticsRecordGrowth"),
        (AuditEventsItem, "AnalyticsAuditEvents"), (JobsByTriggerItem, "AnalyticsJobsByTrigger"),
        (JobStatusItem, "AnalyticsJobStatus"), (FailuresByPluginItem, "AnalyticsFailuresByPlugin"),
        (AiUsageItem, "AnalyticsAiUsage")]],
    (DurationBin, ("AnalyticsJobDurations", "properties", "bins", "items")),
    (PercentileMarker, ("AnalyticsJobDurations", "properties", "percentile_markers", "items")),
]


@pytest.fixture(scope="module")
def schemas() -> dict[str, Any]:
    loaded = yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))
    found: dict[str, Any] = loaded["components"]["schemas"]
    return found


def component(schemas: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    node: Any = schemas
    for step in path:
        node = node[step]
    assert isinstance(node, dict)
    return node


@pytest.mark.parametrize(("shape", "path"), SHAPES, ids=[s.__name__ for s, _ in SHAPES])
def test_a_response_type_has_the_keys_of_its_component(schemas: dict[str, Any], shape: Any,
                                                       path: tuple[str, ...]) -> None:
    schema = component(schemas, path)
    hints = get_type_hints(shape)  # every annotation resolves (a misspelt type fails here)
    assert set(hints) == set(shape.__required_keys__) | set(shape.__optional_keys__)
    assert set(shape.__required_keys__) == set(schema.get("required", [])), "/".join(path)
    assert set(shape.__optional_keys__) == set(schema["properties"]) - set(schema.get("required", [])), \
        "/".join(path)
