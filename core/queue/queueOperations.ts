/**
 * The queue's one-off operations, for both Effect lines (each runs them within its own scope and
 * errors): Redis asked whether it answers, the enqueue's terms, the status read, failed jobs put back,
 * the queue resumed.
 */
import { createHash, randomBytes } from "node:crypto"
import { nameOf } from "../operationName.js"
import type { BullQueue } from "./bull.js"
import { type Enqueued, enqueueLocked, type EnqueueTerms } from "./enqueue.js"
import { Failure, failure } from "./queueError.js"
import { keyRefusal, readMeta, recordedKeyCheck, recordOperation, refusal } from "./queueMeta.js"
import type { EnqueueOptions, Settings } from "./queueSettings.js"
import { DEPTH_STATES, RATE_WINDOW_MILLIS } from "./queueWorker.js"
import { latestRun, readRun, script } from "./runStore.js"
import { type Unanswered, unansweredOf } from "./unanswered.js"

/**
 * Longest a one-off operation (enqueue, status, retryFailed, resume) waits for Redis to answer a
 * PING before it starts: BullMQ waits for a silent Redis (one that takes the connection and never
 * answers, or is stopped) for good, retrying its own start.
 */
export const ANSWER_MILLIS = 10_000

/** Longest closing BullMQ's queue may take (it waits for its commands, which a silent Redis never answers). */
export const CLOSE_MILLIS = 2_000

/** `promise`, or `undefined` once `millis` passed. */
export const within = <A>(promise: Promise<A>, millis: number): Promise<A | undefined> => {
  let timer: ReturnType<typeof setTimeout> | undefined
  return Promise.race([
    promise,
    new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), millis)))
  ])
    .finally(() => clearTimeout(timer))
}

/** Rejects with a `Failure` unless Redis answers a PING within {@link ANSWER_MILLIS}. */
export const answering = async (settings: Settings, operation: string): Promise<void> => {
  const answer = await within(settings.connection.call("PING"), ANSWER_MILLIS)
  if (answer === undefined) throw failure(operation, `Redis did not answer within ${ANSWER_MILLIS / 1000} s`)
}

/** BullMQ's queue closed, within {@link CLOSE_MILLIS}, whatever it says. */
export const closeQueue = (queue: BullQueue): Promise<unknown> =>
  within(queue.close().catch(() => undefined), CLOSE_MILLIS)

// ---------------------------------------------------------------------------------------------
// enqueue

/** How long BullMQ keeps the record of a failed job: `queue retry-failed` and `status` read them. */
export const KEEP_FAILED_SECONDS = 7 * 24 * 3600

/**
 * The completed jobs BullMQ keeps (the newest 1,000), so that the tools of its ecosystem (a
 * dashboard) show what was done: each is a job's sealed data, its name (its run and position) and
 * timestamps, about half a kilobyte: half a megabyte of Redis at most. Bounded by count alone: an
 * age too cost every completion one more Redis command (ZREVRANGEBYSCORE: 39.8 commands per person
 * against 36.1 before the history, over the 10% budget; 38.8 without it), and the count is what
 * bounds Redis. A quiet queue keeps its last run's tail for the dashboard however old it is.
 */
export const KEEP_COMPLETED = { count: 1_000 } as const

/** A date of the range as jobs carry it: as given, a `Date` as its UTC day. */
const dayOf = (date: string | Date | undefined): string | undefined =>
  date === undefined ? undefined : typeof date === "string" ? date : date.toISOString().slice(0, 10)

/** A PersonUid as a job takes it (`reveal`: the line's, for one given `Redacted`); anything else is empty. */
export const personText = (person: unknown, reveal: (value: unknown) => unknown): string => {
  const value = reveal(person)
  return typeof value === "string" ? value.trim() : ""
}

/** What names the input's run: its id, hashed (the id may be a file's hash, or anything). */
export const inputHashOf = (inputId: string | undefined): string =>
  createHash("sha256").update(inputId === undefined ? "effect-clinical: the unnamed run" : `input\n${inputId}`)
    .digest("hex").slice(0, 32)

/**
 * The enqueue's terms from its options (checked before; `operation` its name, `backoffMillis` the
 * backoff read the line's way).
 */
const enqueueTerms = (
  options: EnqueueOptions<unknown>,
  operation: string,
  backoffMillis: number
): EnqueueTerms => {
  const [startDate, endDate] = [dayOf(options.startDate), dayOf(options.endDate)]
  return {
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
      backoff: { type: "exponential", delay: backoffMillis },
      removeOnComplete: KEEP_COMPLETED,
      removeOnFail: { age: KEEP_FAILED_SECONDS }
    },
    maxWaiting: options.maxWaiting,
    onWaiting: options.onWaiting ?? (() => {})
  }
}

/**
 * Enqueues `persons` under the lock `owner` holds (see each line's `enqueue`): the queue's record
 * checked (its key, its operation) and written, the fleet's limits set, then the jobs added.
 */
export const enqueue = async (
  queue: BullQueue,
  settings: Settings,
  options: EnqueueOptions<unknown>,
  backoffMillis: number,
  persons: AsyncIterable<string>,
  owner: string,
  signal: AbortSignal
): Promise<Enqueued> => {
  const operation = nameOf(options.operation)
  const refused = refusal(settings, await readMeta(settings), [operation])
  if (refused !== undefined) throw new Failure(refused)
  await recordOperation(settings, operation)
  if (options.fleetConcurrency !== undefined) await queue.setGlobalConcurrency(options.fleetConcurrency)
  if (options.ratePerSecond !== undefined) await queue.setGlobalRateLimit(options.ratePerSecond, RATE_WINDOW_MILLIS)
  return enqueueLocked(queue, settings, enqueueTerms(options, operation, backoffMillis), persons, owner, signal)
}

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
  /** Why the queue was paused by a worker (refused credentials), until it is resumed. */
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
  /** Active jobs held by a worker that stopped answering, and when they will be taken back (see core/queue/unanswered.ts). */
  readonly unanswered: Unanswered | undefined
}

/** Active jobs whose locks are read, at most: far more than any fleet holds at once. */
const LOCKS_READ = 10_000

/** The lock TTL of each active job (KEYS: the active list; ARGV: the jobs' key prefix, how many at most). */
const lockTtls = script(`
local ids = redis.call('LRANGE', KEYS[1], 0, tonumber(ARGV[2]) - 1)
local ttls = {}
for i, id in ipairs(ids) do ttls[i] = redis.call('PTTL', ARGV[1] .. id .. ':lock') end
return ttls
`)

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
 * Rejects with the `Failure` of {@link keyRefusal} unless the queue records this process's key (or
 * none): status, retry-failed and resume would otherwise read nothing of the queue, or put back
 * jobs no worker of this key can open.
 */
export const checkKey = async (settings: Settings): Promise<void> => {
  const refused = keyRefusal(settings, { keyCheck: await recordedKeyCheck(settings) })
  if (refused !== undefined) throw new Failure(refused)
}

/** Where the queue stands (see each line's `status`). */
export const status = async (
  queue: BullQueue,
  settings: Settings,
  failuresByKind: boolean,
  run: number | undefined
): Promise<Status> => {
  await checkKey(settings)
  const counts = await queue.getJobCounts(...DEPTH_STATES)
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
  // Paused, then why: a worker records why before it pauses, resume lifts the pause before it
  // forgets why, so that a paused queue is never read without its reason.
  const isPaused = await queue.isPaused()
  const meta = await readMeta(settings)
  const jobs = `${settings.prefix}:${settings.name}:`
  const active = counts.active ?? 0
  const ttls = active === 0
    ? []
    : await lockTtls(settings.connection, [`${jobs}active`], [jobs, String(LOCKS_READ)]) as ReadonlyArray<number>
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
    isPaused,
    rateLimitedForMillis: Math.max(0, await queue.getRateLimitTtl(Number.MAX_SAFE_INTEGER)),
    failedByKind: [...byKind].sort((a, b) => b[1] - a[1]),
    failedScanned: scanned,
    unanswered: unansweredOf(ttls, meta.timings)
  }
}

/** Failed jobs read per page by {@link retryFailed}. */
const RETRY_PAGE = 1000
/**
 * Jobs of a page put back at once: their reads and retries share one connection's pipeline, in
 * the failed set's order, instead of two round trips each, one job after the other.
 */
const RETRY_AT_ONCE = 64

/** Puts `id` back to waiting if it is still failed: whether it was put back. */
const retryOne = async (queue: BullQueue, id: string): Promise<boolean> => {
  const job = await queue.getJob(id)
  // Gone (removed), or no longer failed (someone else retried it): not counted.
  return job === undefined ? false : await job.retry("failed", {
    resetAttemptsMade: true,
    resetAttemptsStarted: true
  }).then(
    () => true,
    // Stryker disable next-line ArrowFunction: equivalent, undefined is not counted either
    () => false
  )
}

/** Puts every job that had failed when it began back to waiting (see each line's `retryFailed`). */
export const retryFailed = async (queue: BullQueue, settings: Settings): Promise<number> => {
  await checkKey(settings)
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
      for (let at = 0; at < ids.length; at += RETRY_AT_ONCE) {
        const put = await Promise.all(ids.slice(at, at + RETRY_AT_ONCE).map((id) => retryOne(queue, id)))
        retried += put.filter(Boolean).length
      }
    }
  } finally {
    await connection.call("DEL", snapshot).catch(() => undefined)
  }
}

/** Resumes the queue and forgets why it was paused. */
export const resume = async (queue: BullQueue, settings: Settings): Promise<void> => {
  await checkKey(settings)
  await queue.resume()
  await settings.connection.call("HDEL", settings.metaKey, "pausedBecause")
}
