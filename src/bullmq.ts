/**
 * effect-clinical/bullmq: bulk reads spread over any number of processes and machines, on BullMQ
 * (an optional peer: `npm install bullmq@^6.7 ioredis@^5`). One job per person; any number of
 * workers; the token shared through `TokenStore.layerRedis`; nothing lost when a worker dies.
 *
 * - {@link enqueue} adds one job per person of any iterable (read lazily, in bounded memory),
 *   each PersonUid sealed with AES-256-GCM under the application's key and bound to the queue. Job
 *   ids are keyed hashes of the person and their position: the same input enqueued again adds
 *   nothing. A Redis reader learns counts, never who.
 * - {@link worker} (Effect, over `PersonData`), {@link layerWorker} and {@link createWorker} (over
 *   a Promise client) process the jobs: results to the application's sink; a transient failure
 *   retried by BullMQ with backoff; a permanent one failed at once (`UnrecoverableError`); a 429
 *   or an open circuit pauses every worker of the queue; refused credentials pause the queue
 *   until {@link resume}, with the reason in {@link status}.
 *
 * See docs/distributed.md.
 */
import { type ConnectionOptions, type Job, Queue, Worker } from "bullmq"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { identity } from "effect/Function"
import * as Layer from "effect/Layer"
import * as Metric from "effect/Metric"
import * as Runtime from "effect/Runtime"
import * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import { createHash, randomBytes } from "node:crypto"
import { type ClinicalError, InvalidConfig, isClinicalError } from "./ClinicalError.js"
import { dateRange } from "./internal/call/personRequest.js"
import { nameOf } from "./internal/operationName.js"
import { depth, processJob, type Sink } from "./internal/queue/jobProcessor.js"
import { type JobData, keyCheck, sealJob } from "./internal/queue/jobSeal.js"
import { type QueueOptions, type Settings, settingsOf } from "./internal/queue/queueSettings.js"
import { redactor } from "./internal/redaction/redaction.js"
import * as validate from "./internal/validate.js"
import * as PersonData from "./PersonData.js"
import type { Client } from "./promise.js"

export type { JobRecord, Sink } from "./internal/queue/jobProcessor.js"
export type { IoredisClient, QueueOptions } from "./internal/queue/queueSettings.js"

/** Redis or BullMQ failed (unreachable, a command refused), or the queue refused what was asked. */
export class QueueError extends Schema.TaggedError<QueueError>()("QueueError", {
  operation: Schema.String,
  detail: Schema.String
}) {
  override get message(): string {
    return `queue ${this.operation} failed: ${this.detail}`
  }
}

/**
 * A Redis or BullMQ failure as a `QueueError` (its message carries no job data: ids at most), or
 * the `InvalidConfig` the queue's own record gave (another key, another operation) as it is.
 */
const queueError = (operation: string) => (error: unknown): QueueError | InvalidConfig =>
  error instanceof QueueError || error instanceof InvalidConfig ? error : new QueueError({
    operation,
    detail: String((error as Error)?.message ?? error).slice(0, 300)
  })

const attempt = <A>(operation: string, run: () => Promise<A>): Effect.Effect<A, QueueError | InvalidConfig> =>
  Effect.tryPromise({ try: run, catch: queueError(operation) })

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

/** How long BullMQ keeps the record of a failed job: `queue retry-failed` and `status` read them. */
const KEEP_FAILED_SECONDS = 7 * 24 * 3600
/** Length the events stream is trimmed to (BullMQ's default keeps 10,000 entries). */
const EVENTS_KEPT = 1_000

/**
 * BullMQ's queue over the connection. Its connection errors go to `onError`: without a listener,
 * BullMQ prints each to the console. (A command that fails rejects with its error either way.)
 */
const bullQueue = (settings: Settings, onError: (error: unknown) => void = () => {}): Queue => {
  const queue = new Queue(settings.name, {
    connection: settings.connection as unknown as ConnectionOptions,
    prefix: settings.prefix,
    streams: { events: { maxLen: EVENTS_KEPT } }
  })
  queue.on("error", onError)
  return queue
}

/** What the queue records of itself (a Redis hash beside BullMQ's keys): nothing secret. */
export interface QueueMeta {
  readonly operation: string | undefined
  /** Why the queue was paused by a worker (refused credentials), until {@link resume}. */
  readonly pausedBecause: string | undefined
  readonly keyCheck: string | undefined
  /** Persons done (succeeded) since the queue was made: BullMQ keeps no completed job. */
  readonly done: number
  /** Persons of the largest input enqueued. */
  readonly persons: number
}

/** A count the queue records, or 0 for what is not one (whoever writes Redis can write anything). */
const count = (text: string | undefined): number => {
  const n = Number(text ?? 0)
  return Number.isSafeInteger(n) && n >= 0 ? n : 0
}

const readMeta = async (settings: Settings): Promise<QueueMeta> => {
  const fields = await settings.connection.call(
    "HMGET",
    settings.metaKey,
    "operation",
    "pausedBecause",
    "keyCheck",
    "done",
    "persons"
  ) as Array<string | null>
  const [operation, pausedBecause, check, done, persons] = fields.map((field) =>
    field === null || field === "" ? undefined : field
  )
  return {
    operation,
    pausedBecause,
    keyCheck: check,
    done: count(done),
    persons: count(persons)
  }
}

/** Why a process with `settings` must not work on a queue that records `meta`, or `undefined`. */
const refusal = (settings: Settings, meta: QueueMeta, operation: string | undefined): InvalidConfig | undefined => {
  if (meta.keyCheck !== undefined && meta.keyCheck !== keyCheck(settings.keys)) {
    return new InvalidConfig({
      setting: "sealingKey",
      reason: `is not the key the queue "${settings.name}" was filled with: every process of a queue needs the same key`
    })
  }
  if (operation !== undefined && meta.operation !== undefined && meta.operation !== operation) {
    return new InvalidConfig({
      setting: "operation",
      reason: `the queue "${settings.name}" holds ${meta.operation} jobs, not ${operation}`
    })
  }
  return undefined
}

// ---------------------------------------------------------------------------------------------
// enqueue

export interface EnqueueOptions extends QueueOptions, PersonData.GetOptions {
  readonly operation: PersonData.Operation
  /** Attempts per person before BullMQ fails it (transient failures). Default 5. */
  readonly attempts?: number | undefined
  /** First wait between attempts, doubled each time. Default 1 second. */
  readonly backoff?: Duration.DurationInput | undefined
  /**
   * Names the input (the CLI passes the persons file's SHA-256): how far its enqueue went is
   * recorded, so that running it again after a crash continues, and after it finished adds nothing.
   */
  readonly inputId?: string | undefined
  /** Enqueue an input whose enqueue finished before anew (a second nightly run of the same file). */
  readonly again?: boolean | undefined
  /** Jobs active at once across every worker of the queue (BullMQ's global concurrency). */
  readonly fleetConcurrency?: number | undefined
  /** Jobs started per second across every worker of the queue (BullMQ's global rate limit). */
  readonly ratePerSecond?: number | undefined
  /**
   * Most jobs left waiting at once: beyond it, enqueueing waits for the workers to catch up. A
   * waiting job takes about 1 KB of Redis: 100,000 keeps a queue of a million persons near 100 MB.
   * Default: no bound.
   */
  readonly maxWaiting?: number | undefined
}

/** What an enqueue did. */
export interface Enqueued {
  /** Persons read from the input (those an earlier run of the same input enqueued included). */
  readonly persons: number
  /** Jobs this run added. */
  readonly added: number
  /** Persons not added: their job was there already, or an earlier run of the input added them. */
  readonly present: number
}

/** The rate limit's window: the queue's global limit and each worker's limiter share it. */
const RATE_WINDOW_MILLIS = 1000

/**
 * How long an enqueue holds the queue's enqueue lock without renewing it (it renews with every
 * chunk and every wait): one enqueue at a time counts its jobs right, and one that died frees it.
 */
const ENQUEUE_LOCK_MILLIS = 60_000

/** Jobs added per BullMQ `addBulk`: memory stays bounded by this, whatever the input's size. */
const CHUNK = 500
/** How often a bounded enqueue (`maxWaiting`) looks whether the workers caught up. */
const WAITING_CHECK_MILLIS = 1_000

/** How long the record of an input's enqueue is kept after its last write. */
const INPUT_RECORD_SECONDS = 30 * 24 * 3600

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
  return undefined
}

/** A date of the range as the queue records it: as given, a `Date` as its UTC day. */
const dayOf = (date: string | Date | undefined): string =>
  date === undefined ? "" : typeof date === "string" ? date : date.toISOString().slice(0, 10)

const personText = (person: unknown): string => {
  const value = validate.reveal(person)
  return typeof value === "string" ? value.trim() : ""
}

/**
 * One job per person of `persons` (PersonUids, plain or `Redacted`; an iterable or an async
 * iterable, read lazily), each sealed with the date range it is read with, under a stable id. The
 * queue records its operation (every worker checks it); a queue holding another's jobs is refused.
 */
export const enqueue = (
  options: EnqueueOptions,
  persons: Iterable<PersonData.PersonUid> | AsyncIterable<PersonData.PersonUid>
): Effect.Effect<Enqueued, InvalidConfig | QueueError> =>
  withQueue(
    options,
    "enqueue",
    (queue, settings) => enqueueInto(queue, settings, options, nameOf(options.operation), persons),
    () => enqueueRefusal(options)
  )

/**
 * `enqueue` under the queue's enqueue lock: two at once would count each other's jobs as their own
 * (BullMQ's `addBulk` does not say which jobs it added).
 */
const enqueueInto = async (
  queue: Queue,
  settings: Settings,
  options: EnqueueOptions,
  operation: string,
  persons: Iterable<PersonData.PersonUid> | AsyncIterable<PersonData.PersonUid>
): Promise<Enqueued> => {
  const lock = `${settings.metaKey}:enqueuing`
  const owner = randomBytes(16).toString("hex")
  const took = await settings.connection.call("SET", lock, owner, "NX", "PX", String(ENQUEUE_LOCK_MILLIS))
  if (took === null) {
    throw new QueueError({
      operation: "enqueue",
      detail: "another enqueue into this queue is running (if it died, its lock ends within a minute)"
    })
  }
  const renew = () => settings.connection.call("SET", lock, owner, "XX", "PX", String(ENQUEUE_LOCK_MILLIS))
  try {
    return await enqueueLocked(queue, settings, options, operation, persons, renew)
  } finally {
    await settings.connection.call(
      "EVAL",
      "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0",
      "1",
      lock,
      owner
    ).catch(() => undefined)
  }
}

const enqueueLocked = async (
  queue: Queue,
  settings: Settings,
  options: EnqueueOptions,
  operation: string,
  persons: Iterable<PersonData.PersonUid> | AsyncIterable<PersonData.PersonUid>,
  renew: () => Promise<unknown>
): Promise<Enqueued> => {
  const meta = await readMeta(settings)
  const refused = refusal(settings, meta, operation)
  if (refused !== undefined) throw refused
  // Each job carries its range (sealed with the person): enqueues of different ranges can share a queue.
  const [startDate, endDate] = [dayOf(options.startDate), dayOf(options.endDate)]
  const range = { ...(startDate === "" ? {} : { startDate }), ...(endDate === "" ? {} : { endDate }) }
  await settings.connection.call(
    "HSET",
    settings.metaKey,
    "operation",
    operation,
    "keyCheck",
    keyCheck(settings.keys)
  )
  if (options.fleetConcurrency !== undefined) await queue.setGlobalConcurrency(options.fleetConcurrency)
  if (options.ratePerSecond !== undefined) await queue.setGlobalRateLimit(options.ratePerSecond, RATE_WINDOW_MILLIS)
  const inputKey = options.inputId === undefined
    ? undefined
    : settings.inputKey(createHash("sha256").update(options.inputId).digest("hex").slice(0, 32))
  const record = inputKey === undefined || options.again === true
    ? undefined
    : JSON.parse(String(await settings.connection.call("GET", inputKey) ?? "null")) as
      | { readonly persons: number; readonly done: boolean }
      | null
  const done = record?.persons ?? 0
  const jobOptions = {
    attempts: options.attempts ?? 5,
    backoff: {
      type: "exponential" as const,
      delay: Duration.toMillis(Either.getOrThrowWith(validate.duration(options.backoff ?? "1 second"), identity))
    },
    removeOnComplete: true,
    removeOnFail: { age: KEEP_FAILED_SECONDS }
  }
  // A chunk never holds more than the bound, so that it can always be added.
  const chunkSize = Math.min(CHUNK, options.maxWaiting ?? CHUNK)
  let index = 0
  let added = 0
  let chunk: Array<{ name: string; data: JobData; opts: typeof jobOptions & { jobId: string } }> = []
  /** How far the enqueue of this input went, when it has an id: persons read, and whether all were. */
  const recordInput = async (finished: boolean) => {
    if (inputKey === undefined) return
    const record = JSON.stringify({ persons: index, done: finished })
    await settings.connection.call("SET", inputKey, record, "EX", String(INPUT_RECORD_SECONDS))
  }
  const flush = async () => {
    if (chunk.length === 0) return
    if (options.maxWaiting !== undefined) {
      while ((await queue.getWaitingCount()) + chunk.length > options.maxWaiting) {
        await renew()
        await new Promise((resolve) => setTimeout(resolve, WAITING_CHECK_MILLIS))
      }
    }
    const ids = chunk.map((job) => job.opts.jobId)
    // addBulk returns every job, those it skipped (their id existed) too: count the new ones by a
    // check before, in one round trip.
    const existed = await settings.connection.call(
      "EVAL",
      "local n = 0 for i, k in ipairs(KEYS) do n = n + redis.call('EXISTS', k) end return n",
      String(ids.length),
      ...ids.map((id) => `${settings.prefix}:${settings.name}:${id}`)
    ) as number
    await queue.addBulk(chunk)
    await renew()
    added += chunk.length - existed
    chunk = []
    await recordInput(false)
  }
  if (record?.done !== true) {
    for await (const person of persons as AsyncIterable<PersonData.PersonUid>) {
      const at = index++
      if (at < done) continue
      const job = sealJob(settings.keys, { personUid: personText(person), index: at }, range)
      chunk.push({ name: "person", data: job.data, opts: { ...jobOptions, jobId: job.id } })
      if (chunk.length >= chunkSize) await flush()
    }
    await flush()
    await recordInput(true)
  } else {
    index = record.persons
  }
  if (index > meta.persons) await settings.connection.call("HSET", settings.metaKey, "persons", String(index))
  return { persons: index, added, present: index - added }
}

// ---------------------------------------------------------------------------------------------
// status, retry-failed, resume

/** Jobs by state, and the queue's own record. */
export interface Status extends QueueMeta {
  readonly waiting: number
  readonly active: number
  readonly delayed: number
  readonly failed: number
  readonly completed: number
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

const kindOfReason = (reason: string | undefined): string => {
  const colon = (reason ?? "").indexOf(":")
  return colon > 0 ? reason!.slice(0, Math.min(colon, 60)) : "other"
}

/**
 * Where the queue stands: counts by state, pauses and why, failures by kind (unless
 * `failuresByKind` is false: reading up to 10,000 failed jobs takes a while, and a loop that polls
 * needs the counts alone).
 */
export const status = (
  options: QueueOptions,
  { failuresByKind = true }: { readonly failuresByKind?: boolean } = {}
): Effect.Effect<Status, InvalidConfig | QueueError> =>
  withQueue(options, "status", async (queue, settings) => {
    const counts = await queue.getJobCounts("waiting", "active", "delayed", "failed", "completed", "prioritized")
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
    return {
      ...(await readMeta(settings)),
      waiting: counts.waiting ?? 0,
      active: counts.active ?? 0,
      delayed: counts.delayed ?? 0,
      failed,
      completed: counts.completed ?? 0,
      prioritized: counts.prioritized ?? 0,
      isPaused: await queue.isPaused(),
      rateLimitedForMillis: Math.max(0, await queue.getRateLimitTtl(Number.MAX_SAFE_INTEGER)),
      failedByKind: [...byKind].sort((a, b) => b[1] - a[1]),
      failedScanned: scanned
    }
  })

/**
 * Puts every failed job back to waiting, its attempts afresh (BullMQ's `retryJobs` would keep the
 * count, and give a job out of attempts one more at most); returns how many it put back.
 */
export const retryFailed = (options: QueueOptions): Effect.Effect<number, InvalidConfig | QueueError> =>
  withQueue(options, "retry-failed", async (queue) => {
    let retried = 0
    // Each page leaves the failed set as it is retried: read from the start until none is left.
    for (let page = await queue.getFailed(0, 999); page.length > 0; page = await queue.getFailed(0, 999)) {
      for (const job of page) {
        await job.retry("failed", { resetAttemptsMade: true, resetAttemptsStarted: true })
        retried++
      }
    }
    return retried
  })

/** Resumes a queue a worker paused (refused credentials) or an operator did, and forgets why. */
export const resume = (options: QueueOptions): Effect.Effect<void, InvalidConfig | QueueError> =>
  withQueue(options, "resume", async (queue, settings) => {
    await settings.connection.call("HDEL", settings.metaKey, "pausedBecause")
    await queue.resume()
  })

const withQueue = <A>(
  options: QueueOptions,
  operation: string,
  run: (queue: Queue, settings: Settings) => Promise<A>,
  refusal?: () => InvalidConfig | undefined
): Effect.Effect<A, InvalidConfig | QueueError> =>
  Effect.flatMap(settled(options, refusal), (settings) =>
    Effect.acquireUseRelease(
      Effect.sync(() => bullQueue(settings)),
      (queue) => attempt(operation, () => run(queue, settings)),
      (queue) => Effect.promise(() => queue.close().catch(() => undefined))
    ))

// ---------------------------------------------------------------------------------------------
// workers

export interface WorkerOptions extends QueueOptions {
  /** Where results go (see {@link Sink}): the application's database, or the CLI's NDJSON shards. */
  readonly sink: Sink
  /** Jobs this worker runs at once. Default 16. */
  readonly concurrency?: number | undefined
  /**
   * How long a job is locked to this worker without a renewal; a worker that died loses its jobs
   * to the others after this and `stalledInterval`. Default 30 seconds.
   */
  readonly lockDuration?: Duration.DurationInput | undefined
  /** How often workers look for jobs whose worker died. Default 30 seconds. */
  readonly stalledInterval?: Duration.DurationInput | undefined
  /**
   * Times a job may be taken back from a worker that stopped renewing its lock (died, or lost Redis
   * for longer than the lock) before BullMQ fails it. Reads can be repeated: default 5 (BullMQ's 1).
   */
  readonly maxStalledCount?: number | undefined
  /**
   * Longest `close()` waits for the jobs in hand (a call can hang until its deadline); then they are
   * left to another worker, taken back as stalled. Default 25 seconds: under Kubernetes' 30 s grace.
   */
  readonly closeTimeout?: Duration.DurationInput | undefined
  /**
   * Replaces a person's own PersonUid, echoed by the service inside an item, with `<redacted>`
   * before the sink sees it (the command line's shards are written so). Default false.
   */
  readonly redactEchoedSecrets?: boolean | undefined
  /** Called with a BullMQ or Redis error the worker survived (a lost connection): a liveness signal. */
  readonly onError?: ((error: QueueError | InvalidConfig) => void) | undefined
}

/** A worker at work. */
export interface RunningWorker {
  /** BullMQ's worker (its events: `completed`, `failed`, `error`). */
  readonly worker: Worker<JobData, null>
  /** Stops taking jobs, waits for the active ones, and closes: what SIGTERM should call. */
  readonly close: () => Promise<void>
}

const millisOf = (value: Duration.DurationInput | undefined, fallback: number): number =>
  value === undefined ? fallback : Duration.toMillis(Either.getOrThrowWith(validate.duration(value), identity))

const workerRefusal = (options: WorkerOptions): InvalidConfig | undefined => {
  if (typeof options.sink !== "function") {
    return new InvalidConfig({ setting: "sink", reason: "must be a function that takes a job's record" })
  }
  if (options.concurrency !== undefined && !validate.positiveInteger(options.concurrency, 10_000)) {
    return new InvalidConfig({ setting: "concurrency", reason: "must be a whole number from 1 to 10000" })
  }
  if (
    options.maxStalledCount !== undefined &&
    !(validate.positiveInteger(options.maxStalledCount, 1000) || options.maxStalledCount === 0)
  ) {
    return new InvalidConfig({ setting: "maxStalledCount", reason: "must be a whole number from 0 to 1000" })
  }
  for (const setting of ["lockDuration", "stalledInterval", "closeTimeout"] as const) {
    const value = options[setting]
    if (value !== undefined && Either.isLeft(validate.duration(value))) {
      return new InvalidConfig({ setting, reason: "must be a duration" })
    }
  }
  return undefined
}

/** How often a worker adds the persons it finished to the queue's count. */
const DONE_EVERY_MILLIS = 500

/** How often a worker samples the queue's depth into `clinical_queue_depth`. */
const DEPTH_EVERY_MILLIS = 5_000

/** Starts a BullMQ worker over `call` (the Effect and Promise forms give it). */
const startWorker = async (
  options: WorkerOptions,
  settings: Settings,
  operation: PersonData.Operation,
  get: (operation: PersonData.Operation, personUid: string, range: PersonData.GetOptions) => ReturnType<
    Parameters<typeof processJob>[0]["call"]
  >
): Promise<RunningWorker> => {
  const meta = await readMeta(settings)
  const refused = refusal(settings, meta, nameOf(operation))
  if (refused !== undefined) throw refused
  const echoes: PersonData.GetOptions = options.redactEchoedSecrets === true ? { redactEchoedSecrets: true } : {}
  const report = (error: unknown) => options.onError?.(queueError("work")(error))
  const queue = bullQueue(settings, report)
  // The queue keeps no completed job (removeOnComplete): this count, added up now and then rather
  // than a command per person, is what `status` rates.
  let done = 0
  const addDone = async () => {
    const adding = done
    done = 0
    if (adding > 0) await settings.connection.call("HINCRBY", settings.metaKey, "done", String(adding))
  }
  // One processor for the worker's life, not one made for every job.
  const processor = processJob({
    settings,
    queue,
    sink: options.sink,
    call: (personUid, range) => get(operation, personUid, { ...range, ...echoes }),
    completed: () => done++,
    onForeignError: (what, error, personUid) =>
      report(
        new QueueError({
          operation: "work",
          detail: redactor([personUid])(`${what}: ${String((error as Error)?.message ?? error)}`).slice(0, 500)
        })
      )
  })
  const worker = new Worker<JobData, null>(
    settings.name,
    (job: Job<JobData>) => processor(job),
    {
      connection: settings.connection as unknown as ConnectionOptions,
      prefix: settings.prefix,
      concurrency: options.concurrency ?? 16,
      // A limiter, set far above any real rate, makes this worker honour a pause another worker set.
      // Its window is the global rate limit's: BullMQ takes the worker's duration over the queue's.
      limiter: { max: 1_000_000_000, duration: RATE_WINDOW_MILLIS },
      lockDuration: millisOf(options.lockDuration, 30_000),
      stalledInterval: millisOf(options.stalledInterval, 30_000),
      maxStalledCount: options.maxStalledCount ?? 5
    }
  )
  worker.on("error", report)
  const adder = setInterval(() => addDone().catch(report), DONE_EVERY_MILLIS)
  adder.unref()
  const sampler = setInterval(() => {
    queue.getJobCounts("waiting", "active", "delayed", "failed", "prioritized").then((counts) => {
      for (const [state, n] of Object.entries(counts)) {
        Effect.runSync(Metric.set(Metric.tagged(depth, "state", state), n))
      }
    }, report)
  }, DEPTH_EVERY_MILLIS)
  sampler.unref()
  const closeTimeout = millisOf(options.closeTimeout, 25_000)
  let closing: Promise<void> | undefined
  return {
    worker,
    close: () =>
      closing ??= (async () => {
        clearInterval(sampler)
        clearInterval(adder)
        // BullMQ's close waits for the jobs in hand without a bound (and a second, forced close
        // only returns the first's promise): a hung call would hold the shutdown. Past the bound,
        // the jobs still in hand are left: closing the client ends their calls, and BullMQ retries
        // them (or another worker takes them back as stalled, if this process ends first).
        let timer: ReturnType<typeof setTimeout> | undefined
        await Promise.race([
          worker.close().catch(report),
          new Promise<void>((resolve) => (timer = setTimeout(resolve, closeTimeout)))
        ])
        clearTimeout(timer)
        await addDone().catch(report)
        await queue.close()
      })()
  }
}

const checkedWorker = (options: WorkerOptions): Effect.Effect<Settings, InvalidConfig> =>
  settled(options, () => workerRefusal(options))

/**
 * A worker over the client in context (`PersonData`), closed with its scope (active jobs finish
 * first). Give the client `retryRateLimited: false`, so that a 429 pauses the fleet at once.
 */
export const worker = (
  options: WorkerOptions & { readonly operation: PersonData.Operation }
): Effect.Effect<RunningWorker, InvalidConfig | QueueError, PersonData.PersonData | Scope.Scope> =>
  Effect.gen(function*() {
    const settings = yield* checkedWorker(options)
    const runtime = yield* Effect.runtime<PersonData.PersonData>()
    const run = Runtime.runPromise(runtime)
    return yield* Effect.acquireRelease(
      Effect.tryPromise({
        try: () =>
          startWorker(
            options,
            settings,
            options.operation,
            (operation, personUid, range) => run(Effect.either(PersonData.get(operation, personUid, range)))
          ),
        catch: queueError("work")
      }),
      (running) => Effect.promise(() => running.close())
    )
  })

/** {@link worker} as a layer: the worker runs while the layer is in use. */
export const layerWorker = (
  options: WorkerOptions & { readonly operation: PersonData.Operation }
): Layer.Layer<never, InvalidConfig | QueueError, PersonData.PersonData> => Layer.scopedDiscard(worker(options))

/**
 * A worker over a Promise client (`createClinicalClient({ ..., retryRateLimited: false })`). Rejects
 * with `InvalidConfig` or `QueueError`; close it on SIGTERM.
 */
export const createWorker = (
  client: Client,
  options: WorkerOptions & { readonly operation: PersonData.Operation }
): Promise<RunningWorker> =>
  Effect.runPromise(Effect.either(checkedWorker(options))).then((checked) => {
    if (Either.isLeft(checked)) throw checked.left
    return startWorker(options, checked.right, options.operation, (operation, personUid, range) =>
      client.get(operation, personUid, range).then(Either.right, (error: unknown) => {
        // Anything but the library's typed errors (a bug, not the service) is retried, its text unshown.
        if (isClinicalError(error) && error._tag !== "InvalidConfig") {
          return Either.left(error as ClinicalError)
        }
        throw new Error("the client failed unexpectedly")
      })).catch((error) => {
        throw queueError("work")(error)
      })
  })
