/**
 * A queue job's span, for both Effect lines: its name and attributes (OpenTelemetry's messaging
 * conventions where they fit, ours beside them). Never a PersonUid nor a sealed value: the queue,
 * the operation, the run and the person's position in its input, the attempt, the wait, the outcome.
 */
import type { JobSpanStart } from "./jobProcessor.js"

/** The span of one attempt at one job: a root span (a trace per attempt), the client's spans its children. */
export const JOB_SPAN_NAME = "ClinicalQueue.job"

/** What a job's span says when it starts. */
export const startAttributes = (start: JobSpanStart): Record<string, string | number> => ({
  "messaging.system": "bullmq",
  "messaging.operation.type": "process",
  "messaging.destination.name": start.queue,
  "clinical.operation": start.operation,
  "clinical.queue.run": start.run,
  "clinical.queue.index": start.index,
  "clinical.queue.attempt": start.attempt,
  "clinical.queue.wait_ms": start.queueWaitMillis
})

/** What it says when the attempt ends: the outcome as the metrics count it, and a failure's kind. */
export const endAttributes = (outcome: string, kind: string | undefined): Record<string, string> => ({
  "clinical.queue.outcome": outcome,
  ...(kind === undefined ? {} : { "clinical.error": kind })
})

/** Whether the span ends as a failure: anything but a completed job. */
export const endsInFailure = (outcome: string): boolean => outcome !== "completed"
