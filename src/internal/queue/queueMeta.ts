/**
 * What a queue records of itself beside BullMQ's keys (the core's: core/queue/queueMeta.ts), a
 * refusal as this line's `InvalidConfig`, and BullMQ's own `Queue` over the connection.
 */
import { Queue, RateLimitError, UnrecoverableError, WaitingError, Worker } from "bullmq"
import type { Bull } from "../../../core/queue/bull.js"
import * as Core from "../../../core/queue/queueMeta.js"
import type { InvalidConfig } from "../../ClinicalError.js"
import { fromCore } from "./queueError.js"
import type { Settings } from "./queueSettings.js"

export { type QueueMeta, readMeta, recordOperation } from "../../../core/queue/queueMeta.js"

/** The application's BullMQ, as the core takes it. */
export const bull: Bull<Queue, Worker> = { Queue, Worker, UnrecoverableError, RateLimitError, WaitingError }

/**
 * Why a process with `settings` must not work on a queue that records `meta` (another key, or an
 * operation not among `operations`), or `undefined`.
 */
export const refusal = (
  settings: Settings,
  meta: Core.QueueMeta,
  operations: ReadonlyArray<string>
): InvalidConfig | undefined => {
  const refused = Core.refusal(settings, meta, operations)
  return refused === undefined ? undefined : fromCore(refused) as InvalidConfig
}

/** BullMQ's queue over the connection, its connection errors to `onError`. */
export const bullQueue = (settings: Settings, onError?: (error: unknown) => void): Queue =>
  Core.bullQueue(bull, settings, onError)
