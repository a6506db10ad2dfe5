-- runs keep the W3C trace context of the request that started them, so a run executed later by the queue continues that request's trace
ALTER TABLE workflow_runs ADD COLUMN trace_context TEXT
