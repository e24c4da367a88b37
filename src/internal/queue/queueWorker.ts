/**
 * A BullMQ worker over a call (the core's: core/queue/queueWorker.ts), the Effect and the Promise
 * forms each giving theirs: its options checked as this line reads durations, its failures as this
 * line's errors.
 */
import type { Worker } from "bullmq"
import type * as Duration from "effect/Duration"
import * as Redacted from "effect/Redacted"
import type { JobSpans } from "../../../core/queue/jobProcessor.js"
import * as Core from "../../../core/queue/queueSettings.js"
import * as CoreWorker from "../../../core/queue/queueWorker.js"
import type { InvalidConfig } from "../../ClinicalError.js"
import type * as PersonData from "../../PersonData.js"
import { line } from "../validate.js"
import { type Call, type JobRecord, meter } from "./jobProcessor.js"
import type { JobData } from "./jobSeal.js"
import { fromCore, type QueueError, queueError, rethrown } from "./queueError.js"
import { bull } from "./queueMeta.js"
import type { Settings } from "./queueSettings.js"

export { RATE_WINDOW_MILLIS } from "../../../core/queue/queueWorker.js"

/** A worker's options (see the core's `WorkerOptions` for each). */
export type WorkerOptions = Core.WorkerOptions<Duration.DurationInput, JobRecord, QueueError | InvalidConfig>

/** A worker at work. */
export interface RunningWorker {
  /** BullMQ's worker (its events: `completed`, `failed`, `error`). */
  readonly worker: Worker<JobData, null>
  /** Stops taking jobs, waits for the active ones (at most `closeTimeout`), and closes: what SIGTERM should call. */
  readonly close: () => Promise<void>
}

/** The worker's option refused, or `undefined`. */
export const workerRefusal = (options: WorkerOptions): InvalidConfig | undefined => {
  const refused = Core.workerRefusal(options, line)
  return refused === undefined ? undefined : fromCore(refused) as InvalidConfig
}

/** Starts a BullMQ worker reading `operations` through `call`. */
export const startWorker = (
  options: WorkerOptions,
  settings: Settings,
  operations: ReadonlyArray<PersonData.Operation>,
  call: Call,
  spans?: JobSpans
): Promise<RunningWorker> =>
  CoreWorker.startWorker({
    bull,
    settings,
    operations,
    call,
    spans,
    sink: options.sink,
    ...Core.workerTimings(options, line),
    hold: (personUid) => Redacted.make(personUid),
    meter,
    // Stryker disable next-line OptionalChaining: equivalent, calling an absent onError throws into the core's catch
    onError: (error) => options.onError?.(queueError("work")(error))
  }).then((running) => running as RunningWorker, rethrown)
