/**
 * What a queue records of itself beside BullMQ's keys (a Redis hash under the queue's prefix): the
 * operation it serves and a check of its key, both signed, the latest run, and why a worker paused
 * it. Nothing secret. And BullMQ's own `Queue` over the connection.
 */
import type { InvalidConfig } from "../errors.js"
import { type Bull, type BullQueue, connectionOf } from "./bull.js"
import { keyCheck } from "./jobSeal.js"
import type { Settings } from "./queueSettings.js"
import { signed, verified } from "./runRecord.js"
import { script } from "./runStore.js"
import type { Timings } from "./unanswered.js"

/** What the queue records of itself. */
export interface QueueMeta {
  /** The operation of the queue's first enqueue: every job reads it. */
  readonly operation: string | undefined
  /** Why the queue was paused by a worker (refused credentials), until it is resumed. */
  readonly pausedBecause: string | undefined
  readonly keyCheck: string | undefined
  /** The lock duration and stall interval of the last worker to start (see core/queue/unanswered.ts). */
  readonly timings: Timings | undefined
}

/** Longest pause reason shown: ours are a line; someone else's may be anything. */
const REASON_CHARACTERS = 500

export const readMeta = async (settings: Settings): Promise<QueueMeta> => {
  const [operation, pausedBecause, check, lockMillis, stalledMillis] = await settings.connection.call(
    "HMGET",
    settings.metaKey,
    "operation",
    "pausedBecause",
    "keyCheck",
    "lockMillis",
    "stalledMillis"
  ) as Array<string | null>
  const named = verified(settings.keys, ":operation", operation)
  return {
    operation: typeof named === "string" ? named : undefined,
    pausedBecause: typeof pausedBecause === "string" && pausedBecause !== ""
      ? pausedBecause.slice(0, REASON_CHARACTERS)
      : undefined,
    keyCheck: keyCheckOf(check),
    timings: timingsOf(lockMillis, stalledMillis)
  }
}

/** Timings as recorded: whole milliseconds from a second to an hour (anything else is no record of ours). */
const timingsOf = (lock: string | null | undefined, stalled: string | null | undefined): Timings | undefined => {
  const [lockMillis, stalledMillis] = [Number(lock ?? Number.NaN), Number(stalled ?? Number.NaN)]
  const fits = (n: number) => Number.isInteger(n) && n >= 1_000 && n <= 3_600_000
  return fits(lockMillis) && fits(stalledMillis) ? { lockMillis, stalledMillis } : undefined
}

/**
 * Records a starting worker's lock duration and stall interval, how `status` judges an active
 * job's lock (KEYS: the meta hash; ARGV: the two). A fleet may mix them: the shortest lock and the
 * longest interval any worker recorded are kept, so that a live worker is never taken for one that
 * stopped (its lock is renewed above half the shortest) and "taken back within" is an upper bound.
 */
const timingsScript = script(`
local lock = tonumber(redis.call('HGET', KEYS[1], 'lockMillis'))
if not lock or tonumber(ARGV[1]) < lock then redis.call('HSET', KEYS[1], 'lockMillis', ARGV[1]) end
local stalled = tonumber(redis.call('HGET', KEYS[1], 'stalledMillis'))
if not stalled or tonumber(ARGV[2]) > stalled then redis.call('HSET', KEYS[1], 'stalledMillis', ARGV[2]) end
return 1
`)

export const recordTimings = (settings: Settings, timings: Timings): Promise<unknown> =>
  timingsScript(settings.connection, [settings.metaKey], [String(timings.lockMillis), String(timings.stalledMillis)])

/** Records the operation the queue serves, and its key's check. */
export const recordOperation = (settings: Settings, operation: string): Promise<unknown> =>
  settings.connection.call(
    "HSET",
    settings.metaKey,
    "operation",
    signed(settings.keys, ":operation", operation),
    "keyCheck",
    keyCheck(settings.keys)
  )

/**
 * Records the key's check unless the queue records one already (a worker started on an empty queue
 * claims it, so that an enqueue with another key is refused rather than filling the queue with jobs
 * this worker would take and could not open).
 */
export const claimKey = (settings: Settings): Promise<unknown> =>
  settings.connection.call("HSETNX", settings.metaKey, "keyCheck", keyCheck(settings.keys))

/**
 * Why a process with `settings` must not read a queue that records `meta`: its key is not the
 * queue's, so it opens none of the queue's records (its jobs, its runs, its operation); or
 * `undefined`. Every queue operation asks this first: read with another key, the queue would look
 * empty (no run, no operation) and its jobs would fail unopened. The text names no key.
 */
export const keyRefusal = (settings: Settings, meta: Pick<QueueMeta, "keyCheck">): InvalidConfig | undefined =>
  meta.keyCheck !== undefined && meta.keyCheck !== keyCheck(settings.keys) ? wrongKey(settings) : undefined

/** How the refusal of a key that is not the queue's begins (a malformed key is refused otherwise). */
const DOES_NOT_OPEN = "does not open the records of the queue"

/** The refusal of a key that is not the queue's (see {@link keyRefusal}). */
export const wrongKey = (settings: Settings): InvalidConfig => ({
  _tag: "InvalidConfig",
  setting: "sealingKey",
  reason: `${DOES_NOT_OPEN} "${settings.name}": it is not the key the queue was filled with, and every process ` +
    "of a queue needs the same key"
})

/** Whether `error` is {@link wrongKey}'s refusal (the command line's exit code 5). */
export const isWrongKey = (error: unknown): boolean => {
  if (typeof error !== "object" || error === null) return false
  const { _tag, reason, setting } = error as Partial<InvalidConfig>
  return _tag === "InvalidConfig" && setting === "sealingKey" && typeof reason === "string" &&
    reason.startsWith(DOES_NOT_OPEN)
}

/** A recorded key check, or `undefined` when it is not one of ours (16 hex digits): someone else's record is none. */
const keyCheckOf = (text: unknown): string | undefined =>
  typeof text === "string" && /^[0-9a-f]{16}$/.test(text) ? text : undefined

/** The key check the queue records, if any. */
export const recordedKeyCheck = async (settings: Settings): Promise<string | undefined> =>
  keyCheckOf(await settings.connection.call("HGET", settings.metaKey, "keyCheck"))

/** Whether the queue still records this process's key (none counts as not): asked again when a job does not open. */
export const keyStillOurs = async (settings: Settings): Promise<boolean> =>
  (await recordedKeyCheck(settings)) === keyCheck(settings.keys)

/**
 * Why a process with `settings` must not work on a queue that records `meta` (another key, or an
 * operation not among `operations`), or `undefined`.
 */
export const refusal = (
  settings: Settings,
  meta: QueueMeta,
  operations: ReadonlyArray<string>
): InvalidConfig | undefined => {
  const wrongKey = keyRefusal(settings, meta)
  if (wrongKey !== undefined) return wrongKey
  if (meta.operation !== undefined && !operations.includes(meta.operation)) {
    return {
      _tag: "InvalidConfig",
      setting: "operation",
      reason: `the queue "${settings.name}" holds ${meta.operation} jobs, not ${operations.join(" or ")}`
    }
  }
  return undefined
}

/** Length the events stream is trimmed to (BullMQ's default keeps 10,000 entries). */
const EVENTS_KEPT = 1_000

/**
 * BullMQ's queue over the connection. Its connection errors go to `onError`: without a listener,
 * BullMQ prints each to the console. (A command that fails rejects with its error either way.)
 */
export const bullQueue = <Q extends BullQueue>(
  bull: Bull<Q, any>,
  settings: Settings,
  onError: (error: unknown) => void = () => {}
): Q => {
  const queue = new bull.Queue(settings.name, {
    connection: connectionOf(settings.connection),
    prefix: settings.prefix,
    streams: { events: { maxLen: EVENTS_KEPT } }
  })
  queue.on("error", onError)
  return queue
}
