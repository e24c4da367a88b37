/**
 * A BullMQ worker over a call, for both Effect lines (each form gives its call and its meter): its
 * jobs processed by `jobProcessor`, its closing bounded, its depth sampled.
 */
import type { ClinicalError } from "../errors.js"
import { nameOf } from "../operationName.js"
import { redactor } from "../redaction/redaction.js"
import { type Bull, type BullQueue, type BullWorker, connectionOf } from "./bull.js"
import { type Call, type JobRecord, type JobSpans, type Meter, processJob } from "./jobProcessor.js"
import { describe, Failure, queueError } from "./queueError.js"
import { bullQueue, claimKey, readMeta, recordTimings, refusal, wrongKey } from "./queueMeta.js"
import type { Settings } from "./queueSettings.js"

/** A worker at work (`W`: the line's BullMQ `Worker`). */
export interface RunningWorker<W> {
  /** BullMQ's worker (its events: `completed`, `failed`, `error`). */
  readonly worker: W
  /** Stops taking jobs, waits for the active ones (at most `closeTimeout`), and closes: what SIGTERM should call. */
  readonly close: () => Promise<void>
}

/** How often a worker samples the queue's depth into `clinical_queue_depth`. */
const DEPTH_EVERY_MILLIS = 5_000

/** Longest `close()` waits for its last depth sample. */
const DEPTH_AT_CLOSE_MILLIS = 1_000

/** The rate limit's window: the queue's global limit and each worker's limiter share it. */
export const RATE_WINDOW_MILLIS = 1000

/** The minutes of BullMQ's own metrics a worker keeps (a week: 10,080 numbers per kind in Redis). */
export const METRIC_MINUTES = 7 * 24 * 60

/** Longest `close()` waits, past `closeTimeout`, for the attempts it gave up to be written back. */
const ABANDON_MILLIS = 5_000

/** The states `clinical_queue_depth` counts the queue's jobs in (`waiting` holds a paused queue's too). */
export const DEPTH_STATES = ["waiting", "active", "delayed", "failed", "prioritized"] as const

/** Jobs of queue `name` by state into the meter's depth gauge. */
export const recordDepth = (
  meter: Meter,
  name: string,
  counts: { readonly [State in (typeof DEPTH_STATES)[number]]?: number | undefined }
): void => {
  for (const state of DEPTH_STATES) meter.depth(name, state, counts[state] ?? 0)
}

/** The queue's jobs by state, now, into the meter's depth gauge (what `clinical_queue_depth` says). */
export const sampleDepth = async (queue: BullQueue, name: string, meter: Meter): Promise<void> =>
  recordDepth(meter, name, await queue.getJobCounts(...DEPTH_STATES))

/** What a worker is started with: its options read (durations in ms), its call, and the line's parts. */
export interface Start<W extends BullWorker, S, O extends { readonly name: string }, R, E> {
  readonly bull: Bull<BullQueue, W>
  readonly settings: Settings
  readonly operations: ReadonlyArray<O>
  readonly call: Call<O, R, E>
  readonly sink: (record: JobRecord<S, R, E>) => Promise<void> | void
  readonly concurrency: number
  readonly lockMillis: number
  readonly stalledMillis: number
  readonly maxStalledCount: number
  readonly closeMillis: number
  readonly sinkMillis: number
  readonly hold: (personUid: string) => S
  readonly meter: Meter
  /** A span per job attempt, when the line makes them (its Effect form, a tracer installed). */
  readonly spans?: JobSpans | undefined
  /** Told of a failure the worker survived, as the line's error (what it throws is ignored). */
  readonly onError: (error: unknown) => void
}

/**
 * Starts a BullMQ worker reading `start.operations` through `start.call`. Rejects with a `Failure`
 * when the queue records another key or another operation.
 */
export const startWorker = async <
  W extends BullWorker,
  S,
  O extends { readonly name: string },
  R,
  E extends ClinicalError & { readonly message: string }
>(start: Start<W, S, O, R, E>): Promise<RunningWorker<W>> => {
  const { bull, settings } = start
  const byName = new Map(start.operations.map((operation) => [nameOf(operation), operation]))
  // An empty queue takes this worker's key: an enqueue with another cannot fill it with jobs it cannot open.
  await claimKey(settings)
  const meta = await readMeta(settings)
  const refused = refusal(settings, meta, [...byName.keys()])
  if (refused !== undefined) throw new Failure(refused)
  // How `status` tells a lock this worker stopped renewing from one it renews.
  await recordTimings(settings, { lockMillis: start.lockMillis, stalledMillis: start.stalledMillis })
  const report = (error: unknown) => {
    try {
      start.onError(error)
    } catch {
      // The application's listener failing must not stop the worker.
    }
  }
  const queue = bullQueue(bull, settings, report)
  let keyLost = false
  // One processor for the worker's life, not one made for every job.
  const processor = processJob({
    bull,
    settings,
    queue,
    sink: start.sink,
    sinkMillis: start.sinkMillis,
    operationOf: (name) => byName.get(name),
    call: start.call,
    hold: start.hold,
    meter: start.meter,
    spans: start.spans,
    onForeignError: (what, error, personUid) =>
      report(new Failure(queueError("work", redactor([personUid])(`${what}: ${describe(error)}`).slice(0, 500)))),
    onKeyLost: () => {
      if (keyLost) return
      keyLost = true
      // Takes no more: the jobs in hand end as they do (each put back if it does not open either).
      void worker.pause(true).catch(report)
      report(new Failure(wrongKey(settings)))
    }
  })
  const worker = new bull.Worker(
    settings.name,
    // Three parameters: BullMQ gives the signal it aborts on `cancelAllJobs`.
    (job, token, signal) => processor(job, token, signal),
    {
      connection: connectionOf(settings.connection),
      prefix: settings.prefix,
      concurrency: start.concurrency,
      // A limiter, set far above any real rate, makes this worker honour a pause another worker set.
      // Its window is the global rate limit's: BullMQ takes the worker's duration over the queue's.
      limiter: { max: 1_000_000_000, duration: RATE_WINDOW_MILLIS },
      lockDuration: start.lockMillis,
      stalledInterval: start.stalledMillis,
      maxStalledCount: start.maxStalledCount,
      // BullMQ's own counts of completed and failed jobs per minute, a week of them (its
      // MetricsTime.ONE_WEEK): what its ecosystem's dashboards draw.
      metrics: { maxDataPoints: METRIC_MINUTES }
    }
  )
  worker.on("error", report)
  // This worker's stall check took a job back from a worker that stopped renewing its lock.
  worker.on("stalled", () => start.meter.job(settings.name, "stalled"))
  const sample = () => sampleDepth(queue, settings.name, start.meter).catch(report)
  const sampler = setInterval(sample, DEPTH_EVERY_MILLIS)
  sampler.unref()
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
          new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(true), start.closeMillis)))
        ])
        clearTimeout(timer)
        if (late) {
          // Stryker disable next-line StringLiteral: equivalent, the processor never reads its signal's reason
          worker.cancelAllJobs("the worker was closed")
          // Their failures are written as Redis allows: a Redis that is away holds close() no longer.
          await Promise.race([closed, new Promise((resolve) => setTimeout(resolve, ABANDON_MILLIS).unref())])
        }
        // The depth as the worker leaves it (a gauge read after the last job says what is left),
        // within a second: a Redis that is away holds close() no longer.
        await Promise.race([sample(), new Promise((resolve) => setTimeout(resolve, DEPTH_AT_CLOSE_MILLIS).unref())])
        await queue.close()
      })()
  }
}
