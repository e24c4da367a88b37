/**
 * Bulk reads spread over any number of processes and machines, on BullMQ (Effect 4). One job per
 * person; any number of workers; the token shared through `TokenStore.layerRedis`; nothing lost when
 * a worker dies, and each run's counts exact. The rules, the seal, the runs and the worker are the
 * core's (core/queue/), shared with the Effect 3 line; this module runs them in Effect 4.
 *
 * - {@link enqueue} adds one job per person of any iterable (read lazily, in bounded memory) to a
 *   run: each PersonUid sealed with AES-256-GCM under the application's key. Job ids are keyed
 *   hashes: the same input enqueued again adds nothing. A Redis reader learns counts, never who.
 * - {@link worker} (scoped, over `PersonData`), {@link layerWorker} and {@link createWorker} (over a
 *   Promise client) process the jobs: results to the application's sink; a transient failure
 *   retried by BullMQ with backoff; a permanent one failed at once; a 429 or an open circuit pauses
 *   every worker of the queue; refused credentials pause the queue until {@link resume}, with the
 *   reason in {@link status}.
 *
 * See docs/distributed.md.
 */
import type { Queue, Worker } from "bullmq"
import type * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import type * as Scope from "effect/Scope"
import type * as Tracer from "effect/Tracer"
import * as Enqueue from "../../core/queue/enqueue.js"
import type * as Processor from "../../core/queue/jobProcessor.js"
import * as Meta from "../../core/queue/queueMeta.js"
import * as Ops from "../../core/queue/queueOperations.js"
import * as Core from "../../core/queue/queueSettings.js"
import * as CoreWorker from "../../core/queue/queueWorker.js"
import { type ClinicalError, InvalidConfig, isClinicalError, QueueError } from "./ClinicalError.js"
import { line } from "./internal/line.js"
import { jobSpans } from "./internal/queue/jobSpans.js"
import { bull, fromCore, keyHold, meter, queueError } from "./internal/queue/queue.js"
import * as PersonData from "./PersonData.js"
import type { Client } from "./promise.js"

export type { Enqueued } from "../../core/queue/enqueue.js"
export type { RunStatus, Status } from "../../core/queue/queueOperations.js"
export type { IoredisClient, QueueOptions } from "../../core/queue/queueSettings.js"
export { QueueError } from "./ClinicalError.js"

/** What a worker hands its sink for one person: the result, or the failure that is final. */
export type JobRecord = Processor.JobRecord<
  Redacted.Redacted<string>,
  PersonData.Result<PersonData.Item>,
  ClinicalError
>

/**
 * Where results go. Called once per person that is done (a success, or a failure that is final),
 * before the job is marked done. Delivery is at least once: de-duplicate by `jobId` or `index`.
 * A sink that throws fails the attempt, and BullMQ tries the person again.
 */
export type Sink = (record: JobRecord) => Promise<void> | void

/** A worker's options (see the core's `WorkerOptions` for each). */
export type WorkerOptions = Core.WorkerOptions<Duration.Input, JobRecord, QueueError | InvalidConfig>

/** An enqueue's options (see the core's `EnqueueOptions` for each). */
export interface EnqueueOptions extends Core.EnqueueOptions<Duration.Input>, PersonData.GetOptions {
  readonly operation: PersonData.Operation
}

/** A worker at work: BullMQ's worker, and its `close` (what SIGTERM should call). */
export type RunningWorker = CoreWorker.RunningWorker<Worker>

/** The operations a worker reads: one, or several (a queue holds one). */
export type Operations = PersonData.Operation | ReadonlyArray<PersonData.Operation>

const attempt = <A>(
  operation: string,
  run: (signal: AbortSignal) => Promise<A>
): Effect.Effect<A, QueueError | InvalidConfig> => Effect.tryPromise({ try: run, catch: queueError(operation) })

const refused = (refusal: ReturnType<typeof Core.workerRefusal>) =>
  refusal === undefined ? undefined : fromCore(refusal) as InvalidConfig

/** The queue's settings, then the refusal of the options a form adds (an enqueue's, a worker's). */
const settled = (
  options: Core.QueueOptions,
  refusal: () => InvalidConfig | undefined = () => undefined
): Effect.Effect<Core.Settings, InvalidConfig> =>
  Effect.suspend(() => {
    const settings = Core.settingsOf(options, line.reveal, keyHold)
    if (!("keys" in settings)) return Effect.fail(fromCore(settings.error) as InvalidConfig)
    const refusedOption = refusal()
    return refusedOption === undefined ? Effect.succeed(settings) : Effect.fail(refusedOption)
  })

/** The settings and BullMQ's queue over them, once Redis answers; the queue closed when `run` ends. */
const withQueue = <A>(
  options: Core.QueueOptions,
  operation: string,
  run: (queue: Queue, settings: Core.Settings) => Effect.Effect<A, QueueError | InvalidConfig>,
  refusal?: () => InvalidConfig | undefined
): Effect.Effect<A, InvalidConfig | QueueError> =>
  Effect.flatMap(settled(options, refusal), (settings) =>
    Effect.andThen(
      attempt(operation, () => Ops.answering(settings, operation)),
      Effect.acquireUseRelease(
        Effect.sync(() => Meta.bullQueue(bull, settings)),
        (queue) => run(queue, settings),
        (queue) => Effect.promise(() => Ops.closeQueue(queue))
      )
    ))

async function* textsOf(
  persons: Iterable<PersonData.PersonUid> | AsyncIterable<PersonData.PersonUid>
): AsyncGenerator<string> {
  for await (const person of persons) yield Ops.personText(person, line.reveal)
}

/**
 * One job per person of `persons` (PersonUids, plain or `Redacted`; an iterable or an async
 * iterable, read lazily), into a run (see `inputId`), each sealed with its position, operation, run
 * and date range. One enqueue into a queue at a time; the queue serves one operation (its first
 * enqueue's). Interrupted, it stops and gives the enqueue lock back.
 */
export const enqueue = (
  options: EnqueueOptions,
  persons: Iterable<PersonData.PersonUid> | AsyncIterable<PersonData.PersonUid>
): Effect.Effect<Enqueue.Enqueued, InvalidConfig | QueueError> =>
  withQueue(
    options,
    "enqueue",
    (queue, settings) =>
      Effect.acquireUseRelease(
        // Two enqueues at once would count each other's jobs as their own.
        attempt("enqueue", () => Enqueue.takeLock(settings)),
        (owner) =>
          attempt("enqueue", (signal) =>
            Ops.enqueue(
              queue,
              settings,
              options,
              Core.millisOf(line, options.backoff, 1000),
              textsOf(persons),
              owner,
              signal
            )),
        (owner) => Effect.promise(() => Enqueue.releaseLock(settings, owner).catch(() => undefined))
      ),
    () => refused(Core.enqueueRefusal(options, line))
  )

/**
 * Where the queue stands: counts by state, its latest run, pauses and why, failures by kind
 * (unless `failuresByKind` is false). `run` asks for another run than the latest.
 */
export const status = (
  options: Core.QueueOptions,
  { failuresByKind = true, run }: { readonly failuresByKind?: boolean; readonly run?: number | undefined } = {}
): Effect.Effect<Ops.Status, InvalidConfig | QueueError> =>
  withQueue(
    options,
    "status",
    (queue, settings) => attempt("status", () => Ops.status(queue, settings, failuresByKind, run))
  )

/** Puts every job that had failed when it began back to waiting, its attempts afresh; returns how many. */
export const retryFailed = (options: Core.QueueOptions): Effect.Effect<number, InvalidConfig | QueueError> =>
  withQueue(
    options,
    "retry-failed",
    (queue, settings) => attempt("retry-failed", () => Ops.retryFailed(queue, settings))
  )

/** Resumes a queue a worker paused (refused credentials) or an operator did, and forgets why. */
export const resume = (options: Core.QueueOptions): Effect.Effect<void, InvalidConfig | QueueError> =>
  withQueue(options, "resume", (queue, settings) => attempt("resume", () => Ops.resume(queue, settings)))

const checkedWorker = (options: WorkerOptions): Effect.Effect<Core.Settings, InvalidConfig> =>
  settled(options, () => refused(Core.workerRefusal(options, line)))

const listOf = (operations: Operations): ReadonlyArray<PersonData.Operation> =>
  Array.isArray(operations) ? operations : [operations as PersonData.Operation]

/** The options' `redactEchoedSecrets`, as the call takes it. */
const echoesOf = (options: WorkerOptions): PersonData.GetOptions =>
  options.redactEchoedSecrets === true ? { redactEchoedSecrets: true } : {}

type Call = Processor.Call<PersonData.Operation, PersonData.Result<PersonData.Item>, ClinicalError>

/** Starts the core's worker over `call`, its options read this line's way. */
const start = (
  options: WorkerOptions & { readonly operation: Operations },
  settings: Core.Settings,
  call: Call,
  spans?: Processor.JobSpans
): Promise<RunningWorker> =>
  CoreWorker.startWorker({
    bull,
    settings,
    operations: listOf(options.operation),
    call,
    spans,
    sink: options.sink,
    ...Core.workerTimings(options, line),
    hold: (personUid) => Redacted.make(personUid),
    meter,
    onError: (error) => options.onError?.(queueError("work")(error))
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
    const context = yield* Effect.context<PersonData.PersonData>()
    const run = Effect.runPromiseWith(context)
    const echoes = echoesOf(options)
    const call: Call = (operation, personUid, range, parent) => {
      const read = Effect.match(PersonData.get(operation, personUid, { ...range, ...echoes }), {
        onFailure: (error) => ({ _tag: "Failure", error }) as const,
        onSuccess: (result) => ({ _tag: "Success", result }) as const
      })
      return run(parent === undefined ? read : Effect.withParentSpan(read, parent as Tracer.AnySpan))
    }
    return yield* Effect.acquireRelease(
      attempt("work", () => start(options, settings, call, jobSpans(context))),
      (running) => Effect.promise(() => running.close())
    )
  })

/** {@link worker} as a layer: the worker runs while the layer is in use. */
export const layerWorker = (
  options: WorkerOptions & { readonly operation: Operations }
): Layer.Layer<never, InvalidConfig | QueueError, PersonData.PersonData> => Layer.effectDiscard(worker(options))

/**
 * A worker over a Promise client (`createClinicalClient({ ..., retryRateLimited: false })`). Rejects
 * with `InvalidConfig` or `QueueError`; close it on SIGTERM.
 */
export const createWorker = (
  client: Client,
  options: WorkerOptions & { readonly operation: Operations }
): Promise<RunningWorker> =>
  Effect.runPromise(Effect.result(checkedWorker(options))).then((checked) => {
    if (checked._tag === "Failure") throw checked.failure
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
    return start(options, checked.success, call).catch((error) => {
      throw queueError("work")(error)
    })
  })
