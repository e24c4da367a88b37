/**
 * An enqueue (the core's: core/queue/enqueue.ts): the persons of an input read lazily and added as
 * sealed jobs of a run, a chunk at a time, under the queue's enqueue lock; the core's failures as
 * this line's `QueueError`.
 */
import type { BullQueue } from "../../../core/queue/bull.js"
import * as Core from "../../../core/queue/enqueue.js"
import { rethrown } from "./queueError.js"
import type { Settings } from "./queueSettings.js"
import { MAX_RUN_PERSONS } from "./runRecord.js"

export {
  CHUNK,
  type Enqueued,
  type EnqueueTerms,
  FLUSH_AFTER_MILLIS,
  LOCK_MILLIS,
  LOCK_RENEW_MILLIS,
  releaseLock,
  renewLock,
  WAITING_CHECK_MILLIS
} from "../../../core/queue/enqueue.js"

/** The enqueue lock, taken for this enqueue, or a `QueueError` when another holds it. */
export const takeLock = (settings: Settings): Promise<string> => Core.takeLock(settings).catch(rethrown)

/** Enqueues `persons` (PersonUids as text) under the lock `owner` holds. */
export const enqueueLocked = (
  queue: BullQueue,
  settings: Settings,
  terms: Core.EnqueueTerms,
  persons: AsyncIterable<string>,
  owner: string,
  signal: AbortSignal
): Promise<Core.Enqueued> =>
  Core.enqueueLocked(queue, settings, terms, persons, owner, signal, MAX_RUN_PERSONS).catch(rethrown)
