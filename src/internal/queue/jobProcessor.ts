/**
 * One job, processed (the core's: core/queue/jobProcessor.ts), with this line's types and metrics:
 * what the sink receives, the call as the worker makes it, and the counters each job moves.
 */
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type * as Redacted from "effect/Redacted"
import type * as Core from "../../../core/queue/jobProcessor.js"
import type { ClinicalError } from "../../ClinicalError.js"
import type * as PersonData from "../../PersonData.js"

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

const jobs = Metric.counter("clinical_queue_jobs_total", {
  description: "Queue jobs processed by this worker, by outcome (completed, failed, retried, paused)",
  incremental: true
})
const failures = Metric.counter("clinical_queue_failures_total", {
  description: "Failed attempts of queue jobs, by failure kind",
  incremental: true
})
/** Sampled by the worker: jobs waiting (a paused queue's too), active, delayed, failed and prioritized in the whole queue. */
export const depth = Metric.gauge("clinical_queue_depth", {
  description: "Jobs in the queue by state, sampled by each worker"
})

/** This line's metrics of its workers: one for the process. */
export const meter: Core.Meter = {
  job: (outcome) => Effect.runSync(Metric.increment(Metric.tagged(jobs, "outcome", outcome))),
  failure: (kind) => Effect.runSync(Metric.increment(Metric.tagged(failures, "kind", kind))),
  depth: (state, n) => Effect.runSync(Metric.set(Metric.tagged(depth, "state", state), n))
}
