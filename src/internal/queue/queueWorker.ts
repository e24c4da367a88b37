/**
 * A BullMQ worker over a call (the Effect and the Promise forms each give theirs): its options
 * checked, its jobs processed by `jobProcessor`, its closing bounded, its depth sampled.
 */
import { type ConnectionOptions, type Job, Worker } from "bullmq"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { identity } from "effect/Function"
import * as Metric from "effect/Metric"
import { nameOf } from "../../../core/operationName.js"
import { InvalidConfig } from "../../ClinicalError.js"
import type * as PersonData from "../../PersonData.js"
import { redactor } from "../redaction/redaction.js"
import * as validate from "../validate.js"
import { type Call, depth, processJob, type Sink } from "./jobProcessor.js"
import type { JobData } from "./jobSeal.js"
import { describe, QueueError, queueError } from "./queueError.js"
import { bullQueue, readMeta, refusal } from "./queueMeta.js"
import type { QueueOptions, Settings } from "./queueSettings.js"

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
   * Longest `close()` waits for the jobs in hand (a call can hang until its deadline); then their
   * attempts are given up and the persons left to another worker at once. Default 25 seconds:
   * under Kubernetes' 30 s grace.
   */
  readonly closeTimeout?: Duration.DurationInput | undefined
  /**
   * Longest the sink may take with one record: past it, the attempt fails (`SinkFailed`) and
   * BullMQ tries the person again, rather than a hung database holding the person for good.
   * Default 60 seconds.
   */
  readonly sinkTimeout?: Duration.DurationInput | undefined
  /**
   * Replaces a person's own PersonUid, echoed by the service inside an item, with `<redacted>`
   * before the sink sees it (the command line's shards are written so). Default false.
   */
  readonly redactEchoedSecrets?: boolean | undefined
  /**
   * Called with a BullMQ or Redis error the worker survived (a lost connection), or what the sink
   * or the call threw (scrubbed of the person): a liveness signal. What it throws is ignored.
   */
  readonly onError?: ((error: QueueError | InvalidConfig) => void) | undefined
}

/** A worker at work. */
export interface RunningWorker {
  /** BullMQ's worker (its events: `completed`, `failed`, `error`). */
  readonly worker: Worker<JobData, null>
  /** Stops taking jobs, waits for the active ones (at most `closeTimeout`), and closes: what SIGTERM should call. */
  readonly close: () => Promise<void>
}

const millisOf = (value: Duration.DurationInput | undefined, fallback: number): number =>
  value === undefined ? fallback : Duration.toMillis(Either.getOrThrowWith(validate.duration(value), identity))

export const workerRefusal = (options: WorkerOptions): InvalidConfig | undefined => {
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
  for (const setting of ["lockDuration", "stalledInterval", "closeTimeout", "sinkTimeout"] as const) {
    const value = options[setting]
    if (value !== undefined && Either.isLeft(validate.duration(value))) {
      return new InvalidConfig({ setting, reason: "must be a duration" })
    }
  }
  return undefined
}

/** How often a worker samples the queue's depth into `clinical_queue_depth`. */
const DEPTH_EVERY_MILLIS = 5_000

/** The rate limit's window: the queue's global limit and each worker's limiter share it. */
export const RATE_WINDOW_MILLIS = 1000

/** Longest `close()` waits, past `closeTimeout`, for the attempts it gave up to be written back. */
const ABANDON_MILLIS = 5_000

/** Starts a BullMQ worker reading `operations` through `call`. */
export const startWorker = async (
  options: WorkerOptions,
  settings: Settings,
  operations: ReadonlyArray<PersonData.Operation>,
  call: Call
): Promise<RunningWorker> => {
  const byName = new Map(operations.map((operation) => [nameOf(operation), operation]))
  const meta = await readMeta(settings)
  const refused = refusal(settings, meta, [...byName.keys()])
  if (refused !== undefined) throw refused
  const report = (error: unknown) => {
    try {
      // Stryker disable next-line OptionalChaining: equivalent, calling an absent onError throws into the catch below
      options.onError?.(queueError("work")(error))
    } catch {
      // The application's listener failing must not stop the worker.
    }
  }
  const queue = bullQueue(settings, report)
  // One processor for the worker's life, not one made for every job.
  const processor = processJob({
    settings,
    queue,
    sink: options.sink,
    sinkMillis: millisOf(options.sinkTimeout, 60_000),
    operationOf: (name) => byName.get(name),
    call,
    onForeignError: (what, error, personUid) =>
      report(
        new QueueError({
          operation: "work",
          detail: redactor([personUid])(`${what}: ${describe(error)}`).slice(0, 500)
        })
      )
  })
  const worker = new Worker<JobData, null>(
    settings.name,
    // Three parameters: BullMQ gives the signal it aborts on `cancelAllJobs`.
    (job: Job<JobData>, _token?: string, signal?: AbortSignal) => processor(job, signal),
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
        // BullMQ's close waits for the jobs in hand without a bound, renewing their locks all the
        // while: a hung call or sink would hold the shutdown and its person. Past the bound, their
        // attempts are given up (each processor fails at its abort signal): BullMQ stops renewing
        // their locks and puts them back for another worker.
        const closed = worker.close().catch(report)
        let timer: ReturnType<typeof setTimeout> | undefined
        const late = await Promise.race([
          // Stryker disable next-line ArrowFunction: equivalent, undefined is as false as false
          closed.then(() => false),
          new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), closeTimeout)))
        ])
        clearTimeout(timer)
        if (late) {
          // Stryker disable next-line StringLiteral: equivalent, the processor never reads its signal's reason
          worker.cancelAllJobs("the worker was closed")
          // Their failures are written as Redis allows: a Redis that is away holds close() no longer.
          await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, ABANDON_MILLIS).unref())])
        }
        await queue.close()
      })()
  }
}
