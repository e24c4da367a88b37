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
import { identity } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import type * as Scope from "effect/Scope"
import { createHash, randomBytes } from "node:crypto"
import { nameOf } from "../core/operationName.js"
import { type ClinicalError, InvalidConfig, isClinicalError } from "./ClinicalError.js"
import { dateRange } from "./internal/call/personRequest.js"
import { type Enqueued, enqueueLocked, releaseLock, takeLock } from "./internal/queue/enqueue.js"
import type { Call } from "./internal/queue/jobProcessor.js"
import { QueueError, queueError } from "./internal/queue/queueError.js"
import { bullQueue, readMeta, recordOperation, refusal } from "./internal/queue/queueMeta.js"
import { type QueueOptions, type Settings, settingsOf } from "./internal/queue/queueSettings.js"
import {
  RATE_WINDOW_MILLIS,
  type RunningWorker,
  startWorker,
  type WorkerOptions,
  workerRefusal
} from "./internal/queue/queueWorker.js"
import { latestRun, readRun } from "./internal/queue/runStore.js"
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
 * Longest a one-off operation (enqueue, status, retryFailed, resume) waits for Redis to answer a
 * PING before it starts: BullMQ waits for a silent Redis (one that takes the connection and never
 * answers, or is stopped) for good, retrying its own start.
 */
const ANSWER_MILLIS = 10_000

/** Longest closing BullMQ's queue may take (it waits for its commands, which a silent Redis never answers). */
const CLOSE_MILLIS = 2_000

/** `promise`, or `undefined` once `millis` passed. */
const within = <A>(promise: Promise<A>, millis: number): Promise<A | undefined> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    promise,
    new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), millis)))
  ])
    .finally(() => clearTimeout(timer))
}

/** A `QueueError` unless Redis answers a PING within {@link ANSWER_MILLIS}. */
const answering = (settings: Settings, operation: string): Effect.Effect<void, QueueError | InvalidConfig> =>
  attempt(operation, async () => {
    const answer = await within(settings.connection.call("PING"), ANSWER_MILLIS)
    if (answer === undefined) {
      throw new QueueError({ operation, detail: `Redis did not answer within ${ANSWER_MILLIS / 1000} s` })
    }
  })

/**
 * The queue's settings and BullMQ's queue over them, once Redis answers; the queue closed when
 * `run` ends (however it ends).
 */
const withQueue = <A>(
  options: QueueOptions,
  operation: string,
  run: (queue: Queue, settings: Settings) => Effect.Effect<A, QueueError | InvalidConfig>,
  refusal?: () => InvalidConfig | undefined
): Effect.Effect<A, InvalidConfig | QueueError> =>
  Effect.flatMap(settled(options, refusal), (settings) =>
    Effect.zipRight(
      answering(settings, operation),
      Effect.acquireUseRelease(
        Effect.sync(() => bullQueue(settings)),
        (queue) => run(queue, settings),
        (queue) => Effect.promise(() => within(queue.close().catch(() => undefined), CLOSE_MILLIS))
      )
    ))

// ---------------------------------------------------------------------------------------------
// enqueue

/** How long BullMQ keeps the record of a failed job: `queue retry-failed` and `status` read them. */
const KEEP_FAILED_SECONDS = 7 * 24 * 3600

export interface EnqueueOptions extends QueueOptions, PersonData.GetOptions {
  readonly operation: PersonData.Operation
  /** Attempts per person before BullMQ fails it (transient failures). Default 5. */
  readonly attempts?: number | undefined
  /** First wait between attempts, doubled each time. Default 1 second. */
  readonly backoff?: Duration.DurationInput | undefined
  /**
   * Names the input (the CLI passes the persons file's SHA-256 with the operation and range): its
   * run is recorded, so that enqueuing it again after a crash continues where it stopped, and
   * after it finished reads nothing. Without one, every enqueue goes into the queue's unnamed run,
   * and a person already there (waiting, or done in that run) is not added again.
   */
  readonly inputId?: string | undefined
  /** Start a new run of the input (the next night's run of the same file): everyone is read again. */
  readonly again?: boolean | undefined
  /** Jobs active at once across every worker of the queue (BullMQ's global concurrency). */
  readonly fleetConcurrency?: number | undefined
  /** Jobs started per second across every worker of the queue (BullMQ's global rate limit). */
  readonly ratePerSecond?: number | undefined
  /**
   * Most jobs left waiting at once: beyond it, enqueueing waits for the workers to catch up (and
   * stops with a `QueueError` if the queue is paused, since nothing would move). A waiting job takes
   * about 1 KB of Redis: 100,000 keeps a queue of a million persons near 100 MB. Default: no bound.
   */
  readonly maxWaiting?: number | undefined
  /** Told, about once a second, while the enqueue waits for room (`maxWaiting`): the jobs waiting. */
  readonly onWaiting?: ((waiting: number) => void) | undefined
}

const enqueueRefusal = (options: EnqueueOptions): InvalidConfig | undefined => {
  const refuse = (setting: string, reason: string) => new InvalidConfig({ setting, reason })
  if (typeof options.operation?.name !== "string") return refuse("operation", "must be a PersonData operation")
  if (options.attempts !== undefined && !validate.positiveInteger(options.attempts, 100)) {
    return refuse("attempts", "must be a whole number from 1 to 100")
  }
  if (options.backoff !== undefined && Either.isLeft(validate.duration(options.backoff))) {
    return refuse("backoff", "must be a duration")
  }
  if (options.fleetConcurrency !== undefined && !validate.positiveInteger(options.fleetConcurrency, 1_000_000)) {
    return refuse("fleetConcurrency", "must be a whole number, 1 or more")
  }
  if (options.ratePerSecond !== undefined && !validate.positiveInteger(options.ratePerSecond, 1_000_000)) {
    return refuse("ratePerSecond", "must be a whole number, 1 or more")
  }
  const range = dateRange({ startDate: options.startDate, endDate: options.endDate })
  if (Either.isLeft(range)) return refuse(range.left[0], range.left[1])
  if (options.maxWaiting !== undefined && !validate.positiveInteger(options.maxWaiting, Number.MAX_SAFE_INTEGER)) {
    return refuse("maxWaiting", "must be a whole number, 1 or more")
  }
  if (options.inputId !== undefined && (typeof options.inputId !== "string" || options.inputId.length === 0)) {
    return refuse("inputId", "must be a non-empty string")
  }
  if (options.onWaiting !== undefined && typeof options.onWaiting !== "function") {
    return refuse("onWaiting", "must be a function")
  }
  return undefined
}

/** A date of the range as jobs carry it: as given, a `Date` as its UTC day. */
const dayOf = (date: string | Date | undefined): string | undefined =>
  date === undefined ? undefined : typeof date === "string" ? date : date.toISOString().slice(0, 10)

const personText = (person: unknown): string => {
  const value = validate.reveal(person)
  return typeof value === "string" ? value.trim() : ""
}

async function* textsOf(
  persons: Iterable<PersonData.PersonUid> | AsyncIterable<PersonData.PersonUid>
): AsyncGenerator<string> {
  for await (const person of persons) yield personText(person)
}

/** What names the input's run: its id, hashed (the id may be a file's hash, or anything). */
const inputHashOf = (inputId: string | undefined): string =>
  createHash("sha256").update(inputId === undefined ? "effect-clinical: the unnamed run" : `input\n${inputId}`)
    .digest("hex").slice(0, 32)

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
          attempt("enqueue", async (signal) => {
            const operation = nameOf(options.operation)
            const refused = refusal(settings, await readMeta(settings), [operation])
            if (refused !== undefined) throw refused
            await recordOperation(settings, operation)
            if (options.fleetConcurrency !== undefined) await queue.setGlobalConcurrency(options.fleetConcurrency)
            if (options.ratePerSecond !== undefined) {
              await queue.setGlobalRateLimit(options.ratePerSecond, RATE_WINDOW_MILLIS)
            }
            const [startDate, endDate] = [dayOf(options.startDate), dayOf(options.endDate)]
            return enqueueLocked(
              queue,
              settings,
              {
                operation,
                range: {
                  // Stryker disable next-line ConditionalExpression: equivalent, a range is read only through JSON.stringify (which drops undefined) and `?? ""`
                  ...(startDate === undefined ? {} : { startDate }),
                  // Stryker disable next-line ConditionalExpression: equivalent, as above
                  ...(endDate === undefined ? {} : { endDate })
                },
                inputHash: inputHashOf(options.inputId),
                named: options.inputId !== undefined,
                again: options.again === true,
                jobOptions: {
                  attempts: options.attempts ?? 5,
                  backoff: {
                    type: "exponential",
                    delay: Duration.toMillis(
                      Either.getOrThrowWith(validate.duration(options.backoff ?? "1 second"), identity)
                    )
                  },
                  removeOnComplete: true,
                  removeOnFail: { age: KEEP_FAILED_SECONDS }
                },
                maxWaiting: options.maxWaiting,
                onWaiting: options.onWaiting ?? (() => {})
              },
              textsOf(persons),
              owner,
              signal
            )
          }),
        (owner) => Effect.promise(() => releaseLock(settings, owner).catch(() => undefined))
      ),
    () => enqueueRefusal(options)
  )

// ---------------------------------------------------------------------------------------------
// status, retry-failed, resume

/** A run's counts, exact: each position (each person, in the unnamed run) counted once, by how it ended. */
export interface RunStatus {
  readonly run: number
  /** The run's own id: its number may come again (a queue whose records were lost), its id never. */
  readonly id: string
  /** Whether it is a named input's run (positions, `collect`) or the unnamed run (persons as they come). */
  readonly named: boolean
  readonly operation: string
  /** Persons enqueued into the run so far. */
  readonly persons: number
  /** Whether its enqueue read the whole input (a named input's; the unnamed run is never finished). */
  readonly enqueued: boolean
  /** Persons whose result reached a sink. */
  readonly done: number
  /** Persons whose failure was final (refused for good, or out of attempts) and reached a sink. */
  readonly failed: number
}

/** Jobs by state, and the queue's own record. */
export interface Status {
  readonly operation: string | undefined
  /** Why the queue was paused by a worker (refused credentials), until {@link resume}. */
  readonly pausedBecause: string | undefined
  /** The latest run, when the queue records one. */
  readonly run: RunStatus | undefined
  /** Whether an enqueue holds the queue's enqueue lock. */
  readonly enqueuing: boolean
  readonly waiting: number
  readonly active: number
  readonly delayed: number
  readonly failed: number
  readonly prioritized: number
  readonly isPaused: boolean
  /** Milliseconds left of a fleet-wide pause (a 429 or an open circuit), 0 when none. */
  readonly rateLimitedForMillis: number
  /** Failed jobs by kind (the start of BullMQ's failed reason), of the first `failedScanned`. */
  readonly failedByKind: ReadonlyArray<readonly [kind: string, count: number]>
  readonly failedScanned: number
}

/** Failed jobs read for {@link Status.failedByKind}, at most. */
const FAILED_SCANNED = 10_000

/** The kind a failed reason starts with: ours are `Kind: message`; anything else is `other`. */
const kindOfReason = (reason: string | undefined): string => {
  const colon = (reason ?? "").indexOf(":")
  return colon > 0 ? reason!.slice(0, Math.min(colon, 60)) : "other"
}

/** The run `run` (the latest when not given), as {@link RunStatus}. */
const runStatus = async (settings: Settings, run?: number): Promise<RunStatus | undefined> => {
  const state = run === undefined ? await latestRun(settings) : await readRun(settings, run)
  return state === undefined ? undefined : {
    run: state.run,
    id: state.record.id,
    named: state.record.named,
    operation: state.record.operation,
    persons: state.persons,
    enqueued: state.record.finished,
    done: state.done,
    failed: state.failed
  }
}

/**
 * Where the queue stands: counts by state, its latest run, pauses and why, failures by kind
 * (unless `failuresByKind` is false: reading up to 10,000 failed jobs takes a while, and a loop
 * that polls needs the counts alone). `run` asks for another run than the latest.
 */
export const status = (
  options: QueueOptions,
  { failuresByKind = true, run }: { readonly failuresByKind?: boolean; readonly run?: number | undefined } = {}
): Effect.Effect<Status, InvalidConfig | QueueError> =>
  withQueue(options, "status", (queue, settings) =>
    attempt("status", async () => {
      const counts = await queue.getJobCounts("waiting", "active", "delayed", "failed", "prioritized")
      const byKind = new Map<string, number>()
      let scanned = 0
      const failed = counts.failed ?? 0
      for (let start = 0; failuresByKind && start < Math.min(failed, FAILED_SCANNED); start += 1000) {
        const jobs = await queue.getFailed(start, Math.min(start + 999, FAILED_SCANNED - 1))
        for (const job of jobs) {
          const kind = kindOfReason(job.failedReason)
          byKind.set(kind, (byKind.get(kind) ?? 0) + 1)
          scanned++
        }
      }
      const meta = await readMeta(settings)
      return {
        operation: meta.operation,
        pausedBecause: meta.pausedBecause,
        run: await runStatus(settings, run),
        enqueuing: (await settings.connection.call("EXISTS", settings.lockKey)) === 1,
        waiting: counts.waiting ?? 0,
        active: counts.active ?? 0,
        delayed: counts.delayed ?? 0,
        failed,
        prioritized: counts.prioritized ?? 0,
        isPaused: await queue.isPaused(),
        rateLimitedForMillis: Math.max(0, await queue.getRateLimitTtl(Number.MAX_SAFE_INTEGER)),
        failedByKind: [...byKind].sort((a, b) => b[1] - a[1]),
        failedScanned: scanned
      }
    }))

/** Failed jobs read per page by {@link retryFailed}. */
const RETRY_PAGE = 1000

/**
 * Puts every job that had failed when it began back to waiting, its attempts afresh (BullMQ's
 * `retryJobs` would keep the count, and give a job out of attempts one more at most); returns how
 * many it put back. It works through a copy of the failed set taken as it begins: a job that fails
 * again meanwhile (workers at work) is not put back twice, whatever the clocks of the processes say,
 * and a job another retry put back first is not counted.
 */
export const retryFailed = (options: QueueOptions): Effect.Effect<number, InvalidConfig | QueueError> =>
  withQueue(options, "retry-failed", (queue, settings) =>
    attempt("retry-failed", async () => {
      const snapshot = `${settings.metaKey}:retrying:${randomBytes(8).toString("hex")}`
      const { connection } = settings
      await connection.call("ZRANGESTORE", snapshot, `${settings.prefix}:${settings.name}:failed`, "0", "-1")
      // A retry that dies leaves no copy behind for long.
      await connection.call("EXPIRE", snapshot, "3600")
      let retried = 0
      try {
        for (let start = 0;; start += RETRY_PAGE) {
          const ids = await connection.call("ZRANGE", snapshot, String(start), String(start + RETRY_PAGE - 1)) as Array<
            string
          >
          if (ids.length === 0) return retried
          for (const id of ids) {
            const job = await queue.getJob(id)
            // Gone (removed), or no longer failed (someone else retried it): not counted.
            const put = job === undefined ? false : await job.retry("failed", {
              resetAttemptsMade: true,
              resetAttemptsStarted: true
            }).then(
              () => true,
              // Stryker disable next-line ArrowFunction: equivalent, undefined is not counted either
              () => false
            )
            if (put) retried++
          }
        }
      } finally {
        await connection.call("DEL", snapshot).catch(() => undefined)
      }
    }))

/** Resumes a queue a worker paused (refused credentials) or an operator did, and forgets why. */
export const resume = (options: QueueOptions): Effect.Effect<void, InvalidConfig | QueueError> =>
  withQueue(options, "resume", (queue, settings) =>
    attempt("resume", async () => {
      await settings.connection.call("HDEL", settings.metaKey, "pausedBecause")
      await queue.resume()
    }))

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
    const run = Runtime.runPromise(yield* Effect.runtime<PersonData.PersonData>())
    const echoes = echoesOf(options)
    return yield* Effect.acquireRelease(
      attempt("work", () =>
        startWorker(
          options,
          settings,
          listOf(options.operation),
          (operation, personUid, range) =>
            run(Effect.either(PersonData.get(operation, personUid, { ...range, ...echoes })))
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
      client.get(operation, personUid, { ...range, ...echoes }).then(Either.right, (error: unknown) => {
        // Anything but the library's typed errors (a bug, not the service) is retried, its text unshown.
        if (isClinicalError(error) && error._tag !== "InvalidConfig") {
          return Either.left(error as ClinicalError)
        }
        throw new Error("the client failed unexpectedly")
      })
    return startWorker(options, checked.right, listOf(options.operation), call).catch((error) => {
      throw queueError("work")(error)
    })
  })
