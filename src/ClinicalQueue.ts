/**
 * Bulk reads spread over any number of processes and machines, on BullMQ. One job per person; any
 * number of workers; the token shared through `TokenStore.layerRedis`; nothing lost when a worker
 * dies, and each run's counts exact.
 *
 * - {@link enqueue} adds one job per person of any iterable (read lazily, in bounded memory) to a
 *   run: each PersonUid sealed with AES-256-GCM under the application's key, with its position, its
 *   operation, its run and its date range. Job ids are keyed hashes: the same input enqueued again
 *   adds nothing, persons already done included. A Redis reader learns counts, never who.
 * - {@link worker} (Effect, over `PersonData`), {@link layerWorker} and {@link createWorker} (over
 *   a Promise client) process the jobs: results to the application's sink; a transient failure
 *   retried by BullMQ with backoff; a permanent one failed at once (`UnrecoverableError`); a 429
 *   or an open circuit pauses every worker of the queue; refused credentials pause the queue
 *   until {@link resume}, with the reason in {@link status}.
 *
 * See docs/distributed.md.
 */
import type { Queue } from "bullmq"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import type * as Tracer from "effect/Tracer"
import type { JobRange } from "../core/queue/jobSeal.js"
import * as Ops from "../core/queue/queueOperations.js"
import * as CoreSettings from "../core/queue/queueSettings.js"
import { type ClinicalError, InvalidConfig, isClinicalError } from "./ClinicalError.js"
import { type Enqueued, releaseLock, takeLock } from "./internal/queue/enqueue.js"
import type { Call } from "./internal/queue/jobProcessor.js"
import { jobSpans } from "./internal/queue/jobSpans.js"
import { fromCore, QueueError, queueError } from "./internal/queue/queueError.js"
import { bullQueue } from "./internal/queue/queueMeta.js"
import { type QueueOptions, type Settings, settingsOf } from "./internal/queue/queueSettings.js"
import { type RunningWorker, startWorker, type WorkerOptions, workerRefusal } from "./internal/queue/queueWorker.js"
import * as validate from "./internal/validate.js"
import * as PersonData from "./PersonData.js"
import type { Client } from "./promise.js"

export type { Enqueued } from "./internal/queue/enqueue.js"
export type { JobRecord, Sink } from "./internal/queue/jobProcessor.js"
export { QueueError } from "./internal/queue/queueError.js"
export type { QueueMeta } from "./internal/queue/queueMeta.js"
export type { IoredisClient, QueueOptions } from "./internal/queue/queueSettings.js"
export type { RunningWorker, WorkerOptions } from "./internal/queue/queueWorker.js"

const attempt = <A>(
  operation: string,
  run: (signal: AbortSignal) => Promise<A>
): Effect.Effect<A, QueueError | InvalidConfig> => Effect.tryPromise({ try: run, catch: queueError(operation) })

/**
 * The queue's settings, then the refusal of the options a form adds (an enqueue's, a worker's):
 * read in that order, and only once the settings are known to be an object of options.
 */
const settled = (
  options: QueueOptions,
  refusal: () => InvalidConfig | undefined = () => undefined
): Effect.Effect<Settings, InvalidConfig> =>
  Effect.flatMap(Effect.suspend(() => settingsOf(options)), (settings) => {
    const refused = refusal()
    return refused === undefined ? Effect.succeed(settings) : Effect.fail(refused)
  })

/**
 * The queue's settings and BullMQ's queue over them, once Redis answers (within 10 s: BullMQ waits
 * for a silent Redis for good); the queue closed when `run` ends (however it ends).
 */
const withQueue = <A>(
  options: QueueOptions,
  operation: string,
  run: (queue: Queue, settings: Settings) => Effect.Effect<A, QueueError | InvalidConfig>,
  refusal?: () => InvalidConfig | undefined
): Effect.Effect<A, InvalidConfig | QueueError> =>
  Effect.flatMap(settled(options, refusal), (settings) =>
    Effect.zipRight(
      attempt(operation, () => Ops.answering(settings, operation)),
      Effect.acquireUseRelease(
        Effect.sync(() => bullQueue(settings)),
        (queue) => run(queue, settings),
        (queue) => Effect.promise(() => Ops.closeQueue(queue))
      )
    ))

// ---------------------------------------------------------------------------------------------
// enqueue

/** An enqueue's options (see the core's `EnqueueOptions` for each). */
export interface EnqueueOptions
  extends CoreSettings.EnqueueOptions<Duration.DurationInput>, QueueOptions, PersonData.GetOptions
{
  readonly operation: PersonData.Operation
}

const enqueueRefusal = (options: EnqueueOptions): InvalidConfig | undefined => {
  const refused = CoreSettings.enqueueRefusal(options, validate.line)
  return refused === undefined ? undefined : fromCore(refused) as InvalidConfig
}

async function* textsOf(
  persons: Iterable<PersonData.PersonUid> | AsyncIterable<PersonData.PersonUid>
): AsyncGenerator<string> {
  for await (const person of persons) yield Ops.personText(person, validate.reveal)
}

/**
 * One job per person of `persons` (PersonUids, plain or `Redacted`; an iterable or an async
 * iterable, read lazily), into a run (see {@link EnqueueOptions.inputId}), each sealed with its
 * position, operation, run and date range. One enqueue into a queue at a time; the queue serves
 * one operation (its first enqueue's). Interrupted, it stops and gives the enqueue lock back.
 */
export const enqueue = (
  options: EnqueueOptions,
  persons: Iterable<PersonData.PersonUid> | AsyncIterable<PersonData.PersonUid>
): Effect.Effect<Enqueued, InvalidConfig | QueueError> =>
  withQueue(
    options,
    "enqueue",
    (queue, settings) =>
      Effect.acquireUseRelease(
        // Two enqueues at once would count each other's jobs as their own.
        attempt("enqueue", () => takeLock(settings)),
        (owner) =>
          attempt("enqueue", (signal) =>
            Ops.enqueue(
              queue,
              settings,
              options,
              CoreSettings.millisOf(validate.line, options.backoff, 1000),
              textsOf(persons),
              owner,
              signal
            )),
        (owner) => Effect.promise(() => releaseLock(settings, owner).catch(() => undefined))
      ),
    () => enqueueRefusal(options)
  )

// ---------------------------------------------------------------------------------------------
// status, retry-failed, resume

/** A run's counts, exact: each position (each person, in the unnamed run) counted once, by how it ended. */
export type RunStatus = Ops.RunStatus

/** Jobs by state, and the queue's own record (its `pausedBecause` until {@link resume}). */
export type Status = Ops.Status

/**
 * Where the queue stands: counts by state, its latest run, pauses and why, failures by kind
 * (unless `failuresByKind` is false: reading up to 10,000 failed jobs takes a while, and a loop
 * that polls needs the counts alone). `run` asks for another run than the latest.
 */
export const status = (
  options: QueueOptions,
  { failuresByKind = true, run }: { readonly failuresByKind?: boolean; readonly run?: number | undefined } = {}
): Effect.Effect<Status, InvalidConfig | QueueError> =>
  withQueue(
    options,
    "status",
    (queue, settings) => attempt("status", () => Ops.status(queue, settings, failuresByKind, run))
  )

/**
 * Puts every job that had failed when it began back to waiting, its attempts afresh (BullMQ's
 * `retryJobs` would keep the count, and give a job out of attempts one more at most); returns how
 * many it put back. It works through a copy of the failed set taken as it begins: a job that fails
 * again meanwhile (workers at work) is not put back twice, whatever the clocks of the processes say,
 * and a job another retry put back first is not counted.
 */
export const retryFailed = (options: QueueOptions): Effect.Effect<number, InvalidConfig | QueueError> =>
  withQueue(
    options,
    "retry-failed",
    (queue, settings) => attempt("retry-failed", () => Ops.retryFailed(queue, settings))
  )

/** Resumes a queue a worker paused (refused credentials) or an operator did, and forgets why. */
export const resume = (options: QueueOptions): Effect.Effect<void, InvalidConfig | QueueError> =>
  withQueue(options, "resume", (queue, settings) => attempt("resume", () => Ops.resume(queue, settings)))

// ---------------------------------------------------------------------------------------------
// workers

const checkedWorker = (options: WorkerOptions): Effect.Effect<Settings, InvalidConfig> =>
  settled(options, () => workerRefusal(options))

/** The operations a worker reads: one, or several (a queue holds one; the command line reads any). */
type Operations = PersonData.Operation | ReadonlyArray<PersonData.Operation>

const listOf = (operations: Operations): ReadonlyArray<PersonData.Operation> =>
  Array.isArray(operations) ? operations : [operations as PersonData.Operation]

/** The options' `redactEchoedSecrets`, as the call takes it. */
const echoesOf = (options: WorkerOptions): PersonData.GetOptions =>
  options.redactEchoedSecrets === true ? { redactEchoedSecrets: true } : {}

/** A call's `Either` as the core's outcome. */
const outcomeOf = <R, E>(either: Either.Either<R, E>) =>
  Either.match(either, {
    onLeft: (error) => ({ _tag: "Failure", error }) as const,
    onRight: (result) => ({ _tag: "Success", result }) as const
  })

/**
 * A worker over the client in context (`PersonData`), closed with its scope (active jobs finish
 * first, within `closeTimeout`). Give the client `retryRateLimited: false`, so that a 429 pauses the
 * fleet at once.
 */
export const worker = (
  options: WorkerOptions & { readonly operation: Operations }
): Effect.Effect<RunningWorker, InvalidConfig | QueueError, PersonData.PersonData | Scope.Scope> =>
  Effect.gen(function*() {
    const settings = yield* checkedWorker(options)
    const runtime = yield* Effect.runtime<PersonData.PersonData>()
    const run = Runtime.runPromise(runtime)
    const echoes = echoesOf(options)
    const read = (operation: PersonData.Operation, personUid: string, range: JobRange) =>
      Effect.either(PersonData.get(operation, personUid, { ...range, ...echoes }))
    return yield* Effect.acquireRelease(
      attempt("work", () =>
        startWorker(
          options,
          settings,
          listOf(options.operation),
          (operation, personUid, range, parent) =>
            run(
              parent === undefined
                ? read(operation, personUid, range)
                : Effect.withParentSpan(read(operation, personUid, range), parent as Tracer.AnySpan)
            ).then(outcomeOf),
          jobSpans(runtime)
        )),
      (running) => Effect.promise(() => running.close())
    )
  })

/** {@link worker} as a layer: the worker runs while the layer is in use. */
export const layerWorker = (
  options: WorkerOptions & { readonly operation: Operations }
): Layer.Layer<never, InvalidConfig | QueueError, PersonData.PersonData> => Layer.scopedDiscard(worker(options))

/**
 * A worker over a Promise client (`createClinicalClient({ ..., retryRateLimited: false })`). Rejects
 * with `InvalidConfig` or `QueueError`; close it on SIGTERM.
 */
export const createWorker = (
  client: Client,
  options: WorkerOptions & { readonly operation: Operations }
): Promise<RunningWorker> =>
  Effect.runPromise(Effect.either(checkedWorker(options))).then((checked) => {
    if (Either.isLeft(checked)) throw checked.left
    const echoes = echoesOf(options)
    const call: Call = (operation, personUid, range) =>
      client.get(operation, personUid, { ...range, ...echoes }).then(
        (result) => ({ _tag: "Success", result }),
        (error: unknown) => {
          // Anything but the library's typed errors (a bug, not the service) is retried, its text unshown.
          if (isClinicalError(error) && error._tag !== "InvalidConfig") {
            return { _tag: "Failure", error: error as ClinicalError }
          }
          throw new Error("the client failed unexpectedly")
        }
      )
    return startWorker(options, checked.right, listOf(options.operation), call).catch((error) => {
      throw queueError("work")(error)
    })
  })
