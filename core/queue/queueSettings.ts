/**
 * A queue's settings, checked, for both Effect lines: its name and prefix, the keys derived from
 * the sealing key, the Redis client, the names of the keys effect-clinical keeps beside BullMQ's
 * (under the queue's own prefix, so that `queue.obliterate()` removes them with the rest), and the
 * refusals of an enqueue's and a worker's options. Durations are read as each line reads them
 * (its {@link Line}). A refusal names the setting, never its value.
 */
import { type DateRange, dateRange, Refusal } from "../call/personRequest.js"
import { duration, type Line } from "../config/settings.js"
import type { InvalidConfig } from "../errors.js"
import { sealingKeyBytes } from "../token/storedEntry.js"
import { positiveInteger } from "../validate.js"
import { type JobKeys, jobKeys, type KeyHold } from "./jobSeal.js"
import { Failure } from "./queueError.js"

/** What effect-clinical uses of an ioredis client (BullMQ's own connection type). */
export interface IoredisClient {
  readonly call: (command: string, ...args: Array<string | Buffer>) => Promise<unknown>
  readonly on: (event: string, listener: (...args: Array<any>) => void) => unknown
}

/** What every form of the queue takes. */
export interface QueueOptions {
  /**
   * An ioredis client the application made (and closes): BullMQ's connection, created with
   * `maxRetriesPerRequest: null` so that commands wait out a Redis restart.
   */
  readonly connection: IoredisClient
  /** The queue's name. Default `effect-clinical`. */
  readonly name?: string | undefined
  /** BullMQ's key prefix. Default `bull`. */
  readonly prefix?: string | undefined
  /**
   * Seals every PersonUid a job carries (AES-256-GCM) and names the jobs: 32 bytes, or their
   * base64 or hex, best `Redacted`. Every process of the queue needs the same key. Required.
   */
  readonly sealingKey: unknown
}

/** A queue's settings (`K`: how the line holds the keys). */
export interface Settings<K = unknown> {
  readonly name: string
  readonly prefix: string
  readonly keys: JobKeys<K>
  readonly connection: IoredisClient
  /** Hash of what the queue is for: its operation, key check, latest run, why it was paused. */
  readonly metaKey: string
  /** Held by the enqueue under way: one at a time. */
  readonly lockKey: string
  /** The run an input belongs to, by the hash of the input's id. */
  readonly inputKey: (inputHash: string) => string
  /** A run's record (see `runRecord`). */
  readonly runKey: (run: number) => string
  /** A run's counts (done, failed), kept by the workers. */
  readonly countKey: (run: number) => string
  /** A run's slots, one per position (a named run). */
  readonly slotsKey: (run: number) => string
  /** The persons enqueued, done and failed in the unnamed run (sets of fingerprints). */
  readonly personsKey: (run: number) => string
  readonly doneKey: (run: number) => string
  readonly failedKey: (run: number) => string
}

const NAME = /^[A-Za-z0-9_.-]{1,64}$/

const invalid = (setting: string, reason: string): InvalidConfig => ({ _tag: "InvalidConfig", setting, reason })

/**
 * The settings of `options`, or the `Failure` naming the setting refused (never its value).
 * `reveal` reads a key given `Redacted`; `hold` holds the derived keys the line's way.
 */
export const settingsOf = <K>(
  options: QueueOptions,
  reveal: (value: unknown) => unknown,
  hold: KeyHold<K>
): Settings<K> | Failure => {
  const refused = (setting: string, reason: string) => new Failure(invalid(setting, reason))
  if (typeof options !== "object" || options === null) {
    return refused("options", "must be an object with connection and sealingKey")
  }
  const connection = options.connection
  if (typeof connection?.call !== "function" || typeof connection?.on !== "function") {
    return refused("connection", "must be an ioredis client (new Redis(url, { maxRetriesPerRequest: null }))")
  }
  const name = options.name ?? "effect-clinical"
  if (typeof name !== "string" || !NAME.test(name)) {
    return refused("name", "must be 1 to 64 letters, digits, '_', '.' or '-'")
  }
  const prefix = options.prefix ?? "bull"
  if (typeof prefix !== "string" || !NAME.test(prefix)) {
    return refused("prefix", "must be 1 to 64 letters, digits, '_', '.' or '-'")
  }
  if (options.sealingKey === undefined) {
    return refused(
      "sealingKey",
      "is required: jobs carry PersonUids, sealed (make one with `openssl rand -base64 32`)"
    )
  }
  const key = sealingKeyBytes(reveal(options.sealingKey))
  if (!key.ok) return refused("sealingKey", key.reason)
  const metaKey = `${prefix}:${name}:effect-clinical`
  return {
    name,
    prefix,
    keys: jobKeys(key.value, prefix, name, hold),
    connection,
    metaKey,
    lockKey: `${metaKey}:enqueuing`,
    inputKey: (inputHash) => `${metaKey}:input:${inputHash}`,
    runKey: (run) => `${metaKey}:run:${run}`,
    countKey: (run) => `${metaKey}:run:${run}:count`,
    slotsKey: (run) => `${metaKey}:run:${run}:slots`,
    personsKey: (run) => `${metaKey}:run:${run}:persons`,
    doneKey: (run) => `${metaKey}:run:${run}:done`,
    failedKey: (run) => `${metaKey}:run:${run}:failed`
  }
}

/** A duration setting in milliseconds, read the line's way (`fallback` when not given; checked before). */
export const millisOf = <S, D>(line: Line<S, D>, value: unknown, fallback: number): number => {
  if (value === undefined) return fallback
  const read = duration(value, line)
  if (!read.ok) throw new Error(`an unchecked duration: ${read.reason}`)
  return line.toMillis(read.value)
}

/** What a worker takes besides the queue (`D`: the line's duration input; `R`: a record; `E`: its errors). */
export interface WorkerOptions<D, R, E> extends QueueOptions {
  /** Where results go (see the line's `Sink`): the application's database, or the CLI's NDJSON shards. */
  readonly sink: (record: R) => Promise<void> | void
  /** Jobs this worker runs at once. Default 16. */
  readonly concurrency?: number | undefined
  /**
   * How long a job is locked to this worker without a renewal (renewed every half of it); a worker
   * that died loses its jobs to the others within this and `stalledInterval`. Default 9 seconds.
   */
  readonly lockDuration?: D | undefined
  /** How often workers look for jobs whose worker died. Default 5 seconds. */
  readonly stalledInterval?: D | undefined
  /**
   * Times a job may be taken back from a worker that stopped renewing its lock (died, or lost Redis
   * for longer than the lock) before BullMQ fails it. Reads can be repeated: default 5 (BullMQ's 1).
   */
  readonly maxStalledCount?: number | undefined
  /**
   * Longest `close()` waits for the jobs in hand (a call can hang until its deadline); then their
   * attempts are given up and the persons left to another worker at once. Default 25 seconds:
   * under Kubernetes' 30 s grace.
   */
  readonly closeTimeout?: D | undefined
  /**
   * Longest the sink may take with one record: past it, the attempt fails (`SinkFailed`) and
   * BullMQ tries the person again, rather than a hung database holding the person for good.
   * Default 60 seconds.
   */
  readonly sinkTimeout?: D | undefined
  /**
   * Replaces a person's own PersonUid, echoed by the service inside an item, with `<redacted>`
   * before the sink sees it (the command line's shards are written so). Default false.
   */
  readonly redactEchoedSecrets?: boolean | undefined
  /**
   * Called with a BullMQ or Redis error the worker survived (a lost connection), or what the sink
   * or the call threw (scrubbed of the person): a liveness signal. What it throws is ignored.
   */
  readonly onError?: ((error: E) => void) | undefined
}

type AnyWorkerOptions = WorkerOptions<unknown, never, never>

/**
 * The defaults of a worker's timings. A killed worker's jobs are taken back at most
 * `lockDuration + stalledInterval` after it died (its last renewal is at most half a lock before
 * its death, the lock runs out a lock after that renewal, and the next check comes within an
 * interval): 14 s, within the 15 s an operations team expects. BullMQ's own are 30 s and 30 s
 * (up to a minute, and every worker's progress shows the dead one's jobs as active meanwhile).
 * What they cost Redis is per worker, not per person: one lock renewal of all its jobs per half
 * lock, one check per interval (`npm run bench:queue` prints the commands per person).
 */
export const WORKER_DEFAULTS = {
  concurrency: 16,
  lockMillis: 9_000,
  stalledMillis: 5_000,
  maxStalledCount: 5,
  closeMillis: 25_000,
  sinkMillis: 60_000
} as const

/** A worker's timings (ms) and concurrency from its options, checked already (see {@link workerRefusal}). */
export const workerTimings = <S, D>(options: AnyWorkerOptions, line: Line<S, D>) => ({
  concurrency: options.concurrency ?? WORKER_DEFAULTS.concurrency,
  lockMillis: millisOf(line, options.lockDuration, WORKER_DEFAULTS.lockMillis),
  stalledMillis: millisOf(line, options.stalledInterval, WORKER_DEFAULTS.stalledMillis),
  maxStalledCount: options.maxStalledCount ?? WORKER_DEFAULTS.maxStalledCount,
  closeMillis: millisOf(line, options.closeTimeout, WORKER_DEFAULTS.closeMillis),
  sinkMillis: millisOf(line, options.sinkTimeout, WORKER_DEFAULTS.sinkMillis)
})

/** The worker's option refused (as `InvalidConfig`), or `undefined`. */
export const workerRefusal = <S, D>(options: AnyWorkerOptions, line: Line<S, D>): InvalidConfig | undefined => {
  if (typeof options.sink !== "function") return invalid("sink", "must be a function that takes a job's record")
  if (options.concurrency !== undefined && !positiveInteger(options.concurrency, 10_000)) {
    return invalid("concurrency", "must be a whole number from 1 to 10000")
  }
  if (
    options.maxStalledCount !== undefined &&
    !(positiveInteger(options.maxStalledCount, 1000) || options.maxStalledCount === 0)
  ) {
    return invalid("maxStalledCount", "must be a whole number from 0 to 1000")
  }
  for (const setting of ["lockDuration", "stalledInterval", "closeTimeout", "sinkTimeout"] as const) {
    const value = options[setting]
    if (value !== undefined && !duration(value, line).ok) return invalid(setting, "must be a duration")
  }
  return undefined
}

/** What an enqueue takes besides the queue (`D`: the line's duration input). */
export interface EnqueueOptions<D> extends QueueOptions, DateRange {
  /** The operation every job reads (a PersonData operation). */
  readonly operation: { readonly name: string }
  /** Attempts per person before BullMQ fails it (transient failures). Default 5. */
  readonly attempts?: number | undefined
  /** First wait between attempts, doubled each time. Default 1 second. */
  readonly backoff?: D | undefined
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

/** The enqueue's option refused (as `InvalidConfig`), or `undefined`. */
export const enqueueRefusal = <S, D>(options: EnqueueOptions<unknown>, line: Line<S, D>): InvalidConfig | undefined => {
  if (typeof options.operation?.name !== "string") return invalid("operation", "must be a PersonData operation")
  if (options.attempts !== undefined && !positiveInteger(options.attempts, 100)) {
    return invalid("attempts", "must be a whole number from 1 to 100")
  }
  if (options.backoff !== undefined && !duration(options.backoff, line).ok) {
    return invalid("backoff", "must be a duration")
  }
  if (options.fleetConcurrency !== undefined && !positiveInteger(options.fleetConcurrency, 1_000_000)) {
    return invalid("fleetConcurrency", "must be a whole number, 1 or more")
  }
  if (options.ratePerSecond !== undefined && !positiveInteger(options.ratePerSecond, 1_000_000)) {
    return invalid("ratePerSecond", "must be a whole number, 1 or more")
  }
  const range = dateRange({ startDate: options.startDate, endDate: options.endDate })
  if (range instanceof Refusal) return invalid(range.field, range.reason)
  if (options.maxWaiting !== undefined && !positiveInteger(options.maxWaiting, Number.MAX_SAFE_INTEGER)) {
    return invalid("maxWaiting", "must be a whole number, 1 or more")
  }
  if (options.inputId !== undefined && (typeof options.inputId !== "string" || options.inputId.length === 0)) {
    return invalid("inputId", "must be a non-empty string")
  }
  if (options.onWaiting !== undefined && typeof options.onWaiting !== "function") {
    return invalid("onWaiting", "must be a function")
  }
  return undefined
}
