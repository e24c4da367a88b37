/**
 * One job, processed (the core's: core/queue/jobProcessor.ts), with this line's types and metrics:
 * what the sink receives, the call as the worker makes it, and the counters each job moves.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import { make as label } from "effect/MetricLabel"
import type * as Redacted from "effect/Redacted"
import * as Metrics from "../../../core/observability/metrics.js"
import type * as Core from "../../../core/queue/jobProcessor.js"
import type { ClinicalError } from "../../ClinicalError.js"
import type * as PersonData from "../../PersonData.js"
import { counter, gauge } from "../observability/telemetry.js"

/** What a worker hands its sink for one person: the result, or the failure that is final. */
export type JobRecord = Core.JobRecord<Redacted.Redacted<string>, PersonData.Result<PersonData.Item>, ClinicalError>

/**
 * Where results go. Called once per person that is done (a success, or a failure that is final:
 * refused for good, or out of attempts), before the job is marked done. Delivery is at least once
 * (a worker that dies between the two leaves the job to another): de-duplicate by `jobId` or `index`.
 * A sink that throws fails the attempt, and BullMQ tries the person again.
 */
export type Sink = (record: JobRecord) => Promise<void> | void

/** The call of a person: its result or its typed failure, never a throw. */
export type Call = Core.Call<PersonData.Operation, PersonData.Result<PersonData.Item>, ClinicalError>

const jobs = counter(Metrics.queueJobs)
const failures = counter(Metrics.queueFailures)
/** Sampled by the worker: jobs waiting (a paused queue's too), active, delayed, failed and prioritized in the whole queue. */
export const depth = gauge(Metrics.queueDepth)

/** This line's metrics of its workers: one for the process. */
export const meter: Core.Meter = {
  job: (queue, outcome) =>
    Effect.runSync(Metric.increment(Metric.taggedWithLabels(jobs, [label("queue", queue), label("outcome", outcome)]))),
  failure: (queue, kind) =>
    Effect.runSync(Metric.increment(Metric.taggedWithLabels(failures, [label("queue", queue), label("kind", kind)]))),
  depth: (queue, state, n) =>
    Effect.runSync(Metric.set(Metric.taggedWithLabels(depth, [label("queue", queue), label("state", state)]), n))
}
