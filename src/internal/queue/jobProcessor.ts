/**
 * One job, processed: the person opened from its seal, the call made, the outcome handed to the
 * application's sink, and the failure turned into what BullMQ understands (see `jobDecision`).
 * Shared by the Effect and the Promise worker: each gives the call as a function that never throws.
 *
 * What BullMQ keeps of a failure (the reason, the stack trace, the events stream) is written here,
 * from the error's kind and message, the PersonUid scrubbed out: never a value of the request.
 */
import type { Job, Queue } from "bullmq"
import { RateLimitError, UnrecoverableError } from "bullmq"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Metric from "effect/Metric"
import * as Redacted from "effect/Redacted"
import { decide, kindOf } from "../../../core/queue/jobDecision.js"
import type { ClinicalError } from "../../ClinicalError.js"
import type * as PersonData from "../../PersonData.js"
import { redactor } from "../redaction/redaction.js"
import { type JobData, jobId, type JobRange, openJob, personFingerprint } from "./jobSeal.js"
import type { Settings } from "./queueSettings.js"
import { recordOutcome } from "./runStore.js"

/** Who a job's record is about, and what was read. */
interface About {
  /** The person's position in the run's input, from 0. */
  readonly index: number
  readonly jobId: string
  readonly personUid: Redacted.Redacted<string>
  /** The operation read (sealed in the job). */
  readonly operation: string
  /** The run the job belongs to: its number, and its id (a number may come again, an id never). */
  readonly run: number
  readonly runId: string
}

/** What a worker hands its sink for one person: the result, or the failure that is final. */
export type JobRecord =
  | About & { readonly outcome: "Success"; readonly result: PersonData.Result<PersonData.Item> }
  | About & { readonly outcome: "Failure"; readonly error: ClinicalError }

/**
 * Where results go. Called once per person that is done (a success, or a failure that is final:
 * refused for good, or out of attempts), before the job is marked done. Delivery is at least once
 * (a worker that dies between the two leaves the job to another): de-duplicate by `jobId` or `index`.
 * A sink that throws fails the attempt, and BullMQ tries the person again.
 */
export type Sink = (record: JobRecord) => Promise<void> | void

/** The call of a person: its result or its typed failure, never a throw. */
export type Call = (
  operation: PersonData.Operation,
  personUid: string,
  range: JobRange
) => Promise<Either.Either<PersonData.Result<PersonData.Item>, ClinicalError>>

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

/** Most failure kinds counted apart: a server inventing an `ErrorType` per person must not grow the label set. */
const MAX_KINDS = 20
const kindsSeen = new Set<string>()

const count = (outcome: string, kind?: string): void => {
  Effect.runSync(Metric.increment(Metric.tagged(jobs, "outcome", outcome)))
  if (kind === undefined) return
  if (!kindsSeen.has(kind) && kindsSeen.size < MAX_KINDS) kindsSeen.add(kind)
  Effect.runSync(Metric.increment(Metric.tagged(failures, "kind", kindsSeen.has(kind) ? kind : "other")))
}

/** An error whose message and stack (what BullMQ stores) are the text given, with no file path or value. */
const thrown = <E extends Error>(error: E): E => {
  error.stack = `${error.name}: ${error.message}`
  return error
}

/** What a queue's failure reason says of `error`: its kind, then its message, the person scrubbed out. */
const reasonOf = (error: ClinicalError, personUid: string): string =>
  redactor([personUid])(`${kindOf(error)}: ${error.message}`)

export interface Processor {
  readonly settings: Settings
  /** A queue on the worker's connection: pauses and rate limits go through it. */
  readonly queue: Queue
  /** The operation a job names, when this worker reads it. */
  readonly operationOf: (name: string) => PersonData.Operation | undefined
  readonly call: Call
  readonly sink: Sink
  /** Longest the sink may take with one record; past it the attempt fails, and BullMQ retries. */
  readonly sinkMillis: number
  /**
   * Told of what the sink or the call threw (the person's PersonUid given, to scrub it out).
   * Whatever it throws is ignored.
   */
  readonly onForeignError: (what: string, error: unknown, personUid: string) => void
}

/**
 * Pauses every worker of the queue for `millis` (BullMQ's rate limit key, which each worker with a
 * limiter honours), unless a longer pause is already running.
 */
const pauseFleet = async (queue: Queue, millis: number): Promise<void> => {
  const left = await queue.getRateLimitTtl(Number.MAX_SAFE_INTEGER)
  if (left < millis) await queue.rateLimit(millis)
}

/** An attempt given up: the worker was closed while it ran, or its sink took too long. */
const ABANDONED = "Abandoned: the worker closed before the job finished (another attempt takes it)"

/**
 * `work` to its end, unless `signal` (BullMQ's, aborted when the worker is closed past its
 * `closeTimeout`) comes first: the attempt is then failed at once, and BullMQ stops renewing its
 * lock, so that another worker takes the person.
 */
const unlessAbandoned = <A>(work: Promise<A>, signal: AbortSignal | undefined): Promise<A> => {
  if (signal === undefined) return work
  if (signal.aborted) return Promise.reject(thrown(new Error(ABANDONED)))
  return new Promise<A>((resolve, reject) => {
    const abandon = () => reject(thrown(new Error(ABANDONED)))
    // Stryker disable next-line ObjectLiteral,BooleanLiteral: equivalent, a signal dispatches "abort" once at most
    signal.addEventListener("abort", abandon, { once: true })
    // Stryker disable next-line ArrowFunction,StringLiteral: equivalent, a listener left can only reject a settled promise
    work.then(resolve, reject).finally(() => signal.removeEventListener("abort", abandon))
  })
}

/** `promise`, or a failure once `millis` passed (the promise's later failure is ignored). */
const within = <A>(promise: Promise<A>, millis: number, late: () => Error): Promise<A> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    promise,
    new Promise<never>((_, reject) => (timer = setTimeout(() => reject(late()), millis)))
  ]).finally(() => clearTimeout(timer))
}

/** BullMQ's processor for `processor`'s queue (it takes BullMQ's abort signal: see {@link unlessAbandoned}). */
export const processJob = (processor: Processor) => (job: Job<JobData>, signal?: AbortSignal): Promise<null> =>
  unlessAbandoned(attemptJob(processor, job), signal)

const attemptJob = async (processor: Processor, job: Job<JobData>): Promise<null> => {
  const { call, queue, settings, sink } = processor
  const opened = openJob(settings.keys, job.data)
  if (Either.isLeft(opened)) {
    count("failed", "Unsealable")
    throw thrown(new UnrecoverableError(`Unsealable: ${opened.left}`))
  }
  const { index, operation: operationName, personUid, range, run } = opened.right
  // A seal copied from another job (by whoever can write Redis) would read that job's person twice.
  if (jobId(settings.keys, opened.right, opened.right) !== job.id) {
    count("failed", "Unsealable")
    throw thrown(new UnrecoverableError("Unsealable: the job's sealed person is another job's"))
  }
  const operation = processor.operationOf(operationName)
  if (operation === undefined) {
    count("failed", "OperationRefused")
    throw thrown(new UnrecoverableError("OperationRefused: the job reads another operation than this worker"))
  }
  const id = String(job.id)
  const about = {
    index,
    jobId: id,
    personUid: Redacted.make(personUid),
    operation: operationName,
    run,
    runId: opened.right.runId
  }
  const mark = { id, index, person: personFingerprint(settings.keys, personUid, opened.right) }
  // What the application's code throws (its sink, a layer of its own) may name the person: BullMQ
  // keeps a fixed text instead, and the error itself goes to the worker's `onError`.
  const foreign = (what: "SinkFailed" | "CallFailed") => (error: unknown): never => {
    try {
      processor.onForeignError(what, error, personUid)
    } catch {
      // Nothing of it may reach BullMQ.
    }
    throw thrown(new Error(`${what}: the ${what === "SinkFailed" ? "sink" : "call"} threw (its error went to onError)`))
  }
  const outcome = await call(operation, personUid, range).catch(foreign("CallFailed"))
  /** The record to the sink within its time, then its outcome to the run's counts. */
  const deliver = async (record: JobRecord) => {
    await within(
      Promise.resolve().then(() => sink(record)),
      processor.sinkMillis,
      () => new Error(`the sink did not finish within ${processor.sinkMillis} ms`)
    ).catch(foreign("SinkFailed"))
    await recordOutcome(settings, run, opened.right.runId, mark, record.outcome === "Success" ? "D" : "F")
  }
  if (Either.isRight(outcome)) {
    await deliver({ outcome: "Success", ...about, result: outcome.right })
    count("completed")
    return null
  }
  const error = outcome.left
  const decision = decide(error)
  const reason = reasonOf(error, personUid)
  switch (decision._tag) {
    case "Permanent":
      await deliver({ outcome: "Failure", ...about, error })
      count("failed", kindOf(error))
      throw thrown(new UnrecoverableError(reason))
    case "Retry": {
      const attempts = job.opts.attempts ?? 1
      const last = job.attemptsMade + 1 >= attempts
      if (last) await deliver({ outcome: "Failure", ...about, error })
      count(last ? "failed" : "retried", kindOf(error))
      throw thrown(new Error(reason))
    }
    case "PauseFleet":
      await pauseFleet(queue, decision.millis)
      count("paused", kindOf(error))
      throw new RateLimitError()
    case "PauseQueue":
      await settings.connection.call("HSET", settings.metaKey, "pausedBecause", decision.reason)
      await queue.pause()
      count("paused", kindOf(error))
      throw new RateLimitError()
  }
}
