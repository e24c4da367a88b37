/**
 * What this line hands the core's queue (core/queue/): its BullMQ, its `Redacted` keys, its metrics,
 * and the core's failures as its error classes.
 */
import { Queue, RateLimitError, UnrecoverableError, WaitingError, Worker } from "bullmq"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Redacted from "effect/Redacted"
import type * as Errors from "../../../../core/errors.js"
import * as Metrics from "../../../../core/observability/metrics.js"
import type { Bull } from "../../../../core/queue/bull.js"
import type { Meter } from "../../../../core/queue/jobProcessor.js"
import type { KeyHold } from "../../../../core/queue/jobSeal.js"
import * as Core from "../../../../core/queue/queueError.js"
import { InvalidConfig, QueueError } from "../../ClinicalError.js"
import { counter, gauge } from "../observability/telemetry.js"

/** The application's BullMQ, as the core takes it. */
export const bull: Bull<Queue, Worker> = { Queue, Worker, UnrecoverableError, RateLimitError, WaitingError }

/** How this line holds a queue's keys. */
export const keyHold: KeyHold<Redacted.Redacted<Uint8Array>> = {
  hold: (bytes) => Redacted.make(bytes),
  bytes: (key) => Redacted.value(key)
}

/** The core's failure as this line's class. */
export const fromCore = (error: Core.QueueError | Errors.InvalidConfig): QueueError | InvalidConfig =>
  error._tag === "QueueError"
    ? new QueueError({ operation: error.operation, detail: error.detail })
    : new InvalidConfig({ setting: error.setting, reason: error.reason })

/**
 * A Redis or BullMQ failure as a `QueueError` (its message carries no job data: ids at most), or
 * the core's own failure (another key, another operation) as this line's class.
 */
export const queueError = (operation: string) => (error: unknown): QueueError | InvalidConfig =>
  error instanceof QueueError || error instanceof InvalidConfig ? error : fromCore(Core.failureOf(operation, error))

const jobs = counter(Metrics.queueJobs)
const failures = counter(Metrics.queueFailures)
/** Sampled by the worker: jobs waiting (a paused queue's too), active, delayed, failed and prioritized in the whole queue. */
export const depth = gauge(Metrics.queueDepth)

/** This line's metrics of its workers: one for the process. */
export const meter: Meter = {
  job: (queue, outcome) => Effect.runSync(Metric.update(Metric.withAttributes(jobs, { queue, outcome }), 1)),
  failure: (queue, kind) => Effect.runSync(Metric.update(Metric.withAttributes(failures, { queue, kind }), 1)),
  depth: (queue, state, n) => Effect.runSync(Metric.update(Metric.withAttributes(depth, { queue, state }), n))
}
