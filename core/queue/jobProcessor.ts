/**
 * One job, processed, for both Effect lines: the person opened from its seal, the call made, the
 * outcome handed to the application's sink, and the failure turned into what BullMQ understands
 * (see `jobDecision`). Each line's worker (its Effect form and its Promise form) gives the call as
 * a function that never throws, and its own metrics ({@link Meter}).
 *
 * What BullMQ keeps of a failure (the reason, the stack trace, the events stream) is written here,
 * from the error's kind and message, the PersonUid scrubbed out: never a value of the request.
 */
import type { ClinicalError } from "../errors.js"
import { redactor } from "../redaction/redaction.js"
import type { Bull, BullJob, BullQueue } from "./bull.js"
import { decide, kindOf } from "./jobDecision.js"
import { jobId, type JobPerson, type JobRange, type JobTerms, openJob, personFingerprint } from "./jobSeal.js"
import { keyStillOurs } from "./queueMeta.js"
import type { Settings } from "./queueSettings.js"
import { recordOutcome } from "./runStore.js"

/** Who a job's record is about, and what was read (`S`: the PersonUid as the line holds it). */
export interface About<S> {
  /** The person's position in the run's input, from 0. */
  readonly index: number
  readonly jobId: string
  readonly personUid: S
  /** The operation read (sealed in the job). */
  readonly operation: string
  /** The run the job belongs to: its number, and its id (a number may come again, an id never). */
  readonly run: number
  readonly runId: string
}

/** What a worker hands its sink for one person: the result, or the failure that is final. */
export type JobRecord<S, R, E> =
  | About<S> & { readonly outcome: "Success"; readonly result: R }
  | About<S> & { readonly outcome: "Failure"; readonly error: E }

/** A call's outcome: its result, or its typed failure. */
export type CallOutcome<R, E> =
  | { readonly _tag: "Success"; readonly result: R }
  | { readonly _tag: "Failure"; readonly error: E }

/**
 * The call of a person (`O`: the line's operation): its outcome, never a throw. `parent` is the
 * job's span when the line made one (see {@link JobSpans}): the call's own spans become its children.
 */
export type Call<O, R, E> = (
  operation: O,
  personUid: string,
  range: JobRange,
  parent?: unknown
) => Promise<CallOutcome<R, E>>

/** How a line counts what its workers do (its metrics), each by the queue's name. */
export interface Meter {
  /** A job processed, by outcome (completed, failed, retried, paused; stalled: taken back from a worker that stopped). */
  readonly job: (queue: string, outcome: string) => void
  /** A failed attempt, by failure kind. */
  readonly failure: (queue: string, kind: string) => void
  /** Jobs of the whole queue in `state`, sampled. */
  readonly depth: (queue: string, state: string, jobs: number) => void
}

/** What a job's span says of it when it starts: no PersonUid, no sealed value. */
export interface JobSpanStart {
  readonly queue: string
  readonly operation: string
  readonly run: number
  /** The person's position in the run's input (a position is no patient data). */
  readonly index: number
  /** This attempt's number, from 1. */
  readonly attempt: number
  /** From the job's enqueue (or its retry's due time) to this attempt's start. */
  readonly queueWaitMillis: number
}

/** A job's span as the line made it: handed to the call as its parent, ended with the attempt's outcome. */
export interface JobSpan {
  readonly parent: unknown
  /** `outcome` as the metrics count it (completed, failed, retried, paused, or error: the attempt threw). */
  readonly end: (outcome: string, kind: string | undefined) => void
}

/** Makes a job's span, or none (no one reads the line's spans). */
export type JobSpans = (start: JobSpanStart) => JobSpan | undefined

/** Most failure kinds counted apart: a server inventing an `ErrorType` per person must not grow the label set. */
export const MAX_KINDS = 20

/** The kinds each meter counted apart so far: a line's meter is one for the process, its bound too. */
const kindsOf = new WeakMap<Meter, Set<string>>()

/** The meter's counting of an outcome and its failure's kind, the kinds bounded. */
const counter = (meter: Meter) => {
  const kindsSeen = kindsOf.get(meter) ?? new Set<string>()
  kindsOf.set(meter, kindsSeen)
  return (queue: string) => (outcome: string, kind?: string): void => {
    meter.job(queue, outcome)
    if (kind === undefined) return
    if (!kindsSeen.has(kind) && kindsSeen.size < MAX_KINDS) kindsSeen.add(kind)
    meter.failure(queue, kindsSeen.has(kind) ? kind : "other")
  }
}

/** An error whose message and stack (what BullMQ stores) are the text given, with no file path or value. */
const thrown = <X extends Error>(error: X): X => {
  error.stack = `${error.name}: ${error.message}`
  return error
}

/** What a queue's failure reason says of `error`: its kind, then its message, the person scrubbed out. */
const reasonOf = (error: ClinicalError & { readonly message: string }, personUid: string) => {
  const scrub = redactor([personUid])
  // The kind holds the server's ErrorType: a server echoing the person there must not label a metric with it.
  const kind = kindOf(error, scrub)
  return { kind, reason: scrub(`${kind}: ${error.message}`) }
}

export interface Processor<S, O, R, E extends ClinicalError & { readonly message: string }> {
  readonly bull: Bull<any, any>
  readonly settings: Settings
  /** A queue on the worker's connection: pauses and rate limits go through it. */
  readonly queue: BullQueue
  /** The operation a job names, when this worker reads it. */
  readonly operationOf: (name: string) => O | undefined
  readonly call: Call<O, R, E>
  readonly sink: (record: JobRecord<S, R, E>) => Promise<void> | void
  /** Longest the sink may take with one record; past it the attempt fails, and BullMQ retries. */
  readonly sinkMillis: number
  /** The PersonUid as the line holds it (its `Redacted`) for the sink's record. */
  readonly hold: (personUid: string) => S
  readonly meter: Meter
  /** The job's span, when the line makes them. */
  readonly spans?: JobSpans | undefined
  /**
   * Told of what the sink or the call threw (the person's PersonUid given, to scrub it out).
   * Whatever it throws is ignored.
   */
  readonly onForeignError: (what: string, error: unknown, personUid: string) => void
  /**
   * The queue no longer records this worker's key (its record was replaced, or removed, while it
   * worked): the job that did not open is back to waiting, and the worker must take no more.
   */
  readonly onKeyLost: () => void
}

/**
 * Pauses every worker of the queue for `millis` (BullMQ's rate limit key, which each worker with a
 * limiter honours), unless a longer pause is already running.
 */
const pauseFleet = async (queue: BullQueue, millis: number): Promise<void> => {
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
export const processJob = <S, O, R, E extends ClinicalError & { readonly message: string }>(
  processor: Processor<S, O, R, E>
) => {
  const count = counter(processor.meter)(processor.settings.name)
  return (job: BullJob, token?: string, signal?: AbortSignal): Promise<null> =>
    unlessAbandoned(attemptJob(processor, count, job, token), signal)
}

const attemptJob = async <S, O, R, E extends ClinicalError & { readonly message: string }>(
  processor: Processor<S, O, R, E>,
  count: (outcome: string, kind?: string) => void,
  job: BullJob,
  token: string | undefined
): Promise<null> => {
  const { bull, settings } = processor
  const opened = openJob(settings.keys, job.data)
  if (!opened.ok) {
    // Not opened under a key the queue no longer records: the key is wrong, not the job. Failed, it
    // would be a person lost to retries; it goes back to waiting for a worker with the queue's key.
    if (token !== undefined && !(await keyStillOurs(settings))) {
      processor.onKeyLost()
      await job.moveToWait(token)
      count("paused")
      throw new bull.WaitingError()
    }
    count("failed", "Unsealable")
    throw thrown(new bull.UnrecoverableError(`Unsealable: ${opened.reason}`))
  }
  const { index, operation: operationName, personUid, run } = opened.value
  // A seal copied from another job (by whoever can write Redis) would read that job's person twice.
  if (jobId(settings.keys, opened.value, opened.value) !== job.id) {
    count("failed", "Unsealable")
    throw thrown(new bull.UnrecoverableError("Unsealable: the job's sealed person is another job's"))
  }
  const operation = processor.operationOf(operationName)
  if (operation === undefined) {
    count("failed", "OperationRefused")
    throw thrown(new bull.UnrecoverableError("OperationRefused: the job reads another operation than this worker"))
  }
  const id = String(job.id)
  const about: About<S> = {
    index,
    jobId: id,
    personUid: processor.hold(personUid),
    operation: operationName,
    run,
    runId: opened.value.runId
  }
  const span = processor.spans?.({
    queue: settings.name,
    operation: operationName,
    run,
    index,
    attempt: job.attemptsMade + 1,
    queueWaitMillis: Math.max(0, (job.processedOn ?? Date.now()) - job.timestamp)
  })
  if (span === undefined) return attemptCall(processor, count, job, opened.value, operation, about)
  let told: [string, string | undefined] = ["error", undefined]
  const countAndTell = (outcome: string, kind?: string) => {
    told = [outcome, kind]
    count(outcome, kind)
  }
  try {
    return await attemptCall(processor, countAndTell, job, opened.value, operation, about, span.parent)
  } finally {
    span.end(...told)
  }
}

/** A job's person and terms, unsealed. */
type Opened = JobPerson & JobTerms

/** The call of an opened job, its outcome delivered and counted, its failure thrown as BullMQ understands it. */
const attemptCall = async <S, O, R, E extends ClinicalError & { readonly message: string }>(
  processor: Processor<S, O, R, E>,
  count: (outcome: string, kind?: string) => void,
  job: BullJob,
  opened: Opened,
  operation: O,
  about: About<S>,
  parent?: unknown
): Promise<null> => {
  const { bull, call, queue, settings, sink } = processor
  const { index, personUid, range, run } = opened
  const mark = { id: about.jobId, index, person: personFingerprint(settings.keys, personUid, opened) }
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
  const outcome = await call(operation, personUid, range, parent).catch(foreign("CallFailed"))
  /** The record to the sink within its time, then its outcome to the run's counts. */
  const deliver = async (record: JobRecord<S, R, E>) => {
    await within(
      Promise.resolve().then(() => sink(record)),
      processor.sinkMillis,
      () => new Error(`the sink did not finish within ${processor.sinkMillis} ms`)
    ).catch(foreign("SinkFailed"))
    await recordOutcome(settings, run, opened.runId, mark, record.outcome === "Success" ? "D" : "F")
  }
  if (outcome._tag === "Success") {
    await deliver({ outcome: "Success", ...about, result: outcome.result })
    count("completed")
    return null
  }
  const error = outcome.error
  const decision = decide(error)
  const { kind, reason } = reasonOf(error, personUid)
  switch (decision._tag) {
    case "Permanent":
      await deliver({ outcome: "Failure", ...about, error })
      count("failed", kind)
      throw thrown(new bull.UnrecoverableError(reason))
    case "Retry": {
      const attempts = job.opts.attempts ?? 1
      const last = job.attemptsMade + 1 >= attempts
      if (last) await deliver({ outcome: "Failure", ...about, error })
      count(last ? "failed" : "retried", kind)
      throw thrown(new Error(reason))
    }
    case "PauseFleet":
      await pauseFleet(queue, decision.millis)
      count("paused", kind)
      throw new bull.RateLimitError()
    case "PauseQueue":
      await settings.connection.call("HSET", settings.metaKey, "pausedBecause", decision.reason)
      await queue.pause()
      count("paused", kind)
      throw new bull.RateLimitError()
  }
}
