/**
 * An enqueue: the persons of an input read lazily and added as sealed jobs of a run, a chunk at
 * a time, under the queue's enqueue lock.
 *
 * - One enqueue per queue at a time: the lock is renewed on a timer (whatever the input's pace) and
 *   given back with a check of its owner; an enqueue that finds it lost stops.
 * - Persons taken from a slow input go to Redis within a second, not when a chunk fills.
 * - An input already in a run continues it: a named input's enqueue that stopped goes on from its
 *   last recorded position, a finished one adds nothing; every person already in the queue, or done
 *   in the run, is not added again (see `runStore`'s slots).
 */
import { randomBytes } from "node:crypto"
import type { BullQueue as Queue } from "./bull.js"
import { type JobData, type JobRange, personFingerprint, sealJob } from "./jobSeal.js"
import { failure } from "./queueError.js"
import type { Settings } from "./queueSettings.js"
import { MAX_RUN_PERSONS, type RunRecord } from "./runRecord.js"
import { enqueuedPersons, type JobMark, presentOf, runOfInput, startRun, writeRun } from "./runStore.js"

/** How long the lock holds without a renewal: one that died frees the queue within this. */
export const LOCK_MILLIS = 60_000
/** How often a live enqueue renews it: every second (a command a second), so that it never lapses while Redis answers. */
export const LOCK_RENEW_MILLIS = 1_000
/** Jobs added per BullMQ `addBulk`: memory stays bounded by this, whatever the input's size. */
export const CHUNK = 500
/** Longest a person read waits in memory before it is added (a slow input fills no chunk). */
export const FLUSH_AFTER_MILLIS = 1_000
/** How often a bounded enqueue (`maxWaiting`) looks whether the workers caught up. */
export const WAITING_CHECK_MILLIS = 1_000

/** What an enqueue did. */
export interface Enqueued {
  /** The run the persons went into. */
  readonly run: number
  /** Persons read from the input (those an earlier enqueue of the same input added included). */
  readonly persons: number
  /** Jobs this enqueue added. */
  readonly added: number
  /** Persons not added: in the queue already, or done in the run. */
  readonly present: number
}

/** What the enqueue reads and adds. */
export interface EnqueueTerms {
  readonly operation: string
  readonly range: JobRange
  /** The input's id, hashed; the same for every enqueue without one. */
  readonly inputHash: string
  readonly named: boolean
  readonly again: boolean
  readonly jobOptions: Record<string, unknown>
  readonly maxWaiting: number | undefined
  /** Told while the enqueue waits for the workers (`maxWaiting`), with the jobs waiting. */
  readonly onWaiting: (waiting: number) => void
}

const RELEASE = "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0"
const RENEW =
  "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0"

/** The enqueue lock, taken for this enqueue, or a `QueueError` when another holds it. */
export const takeLock = async (settings: Settings): Promise<string> => {
  const owner = randomBytes(16).toString("hex")
  const took = await settings.connection.call("SET", settings.lockKey, owner, "NX", "PX", String(LOCK_MILLIS))
  if (took === null) {
    throw failure("enqueue", "another enqueue into this queue is running (if it died, its lock ends within a minute)")
  }
  return owner
}

/** Gives the lock back, if it is still `owner`'s (one that lapsed may be another enqueue's now). */
export const releaseLock = (settings: Settings, owner: string): Promise<unknown> =>
  settings.connection.call("EVAL", RELEASE, "1", settings.lockKey, owner)

/** Renews `owner`'s lock; false when it is no longer theirs. */
export const renewLock = async (settings: Settings, owner: string): Promise<boolean> =>
  (await settings.connection.call("EVAL", RENEW, "1", settings.lockKey, owner, String(LOCK_MILLIS))) === 1

const sleep = (millis: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(done, millis)
    function done() {
      clearTimeout(timer)
      signal.removeEventListener("abort", done)
      resolve()
    }
    signal.addEventListener("abort", done)
  })

/** The run this enqueue goes into, and where in the input it starts. */
const runFor = async (
  settings: Settings,
  terms: EnqueueTerms
): Promise<{ readonly run: number; readonly record: RunRecord; readonly from: number }> => {
  const state = terms.again ? undefined : await runOfInput(settings, terms.inputHash)
  if (state !== undefined && state.record.operation === terms.operation) {
    // A named input's enqueue goes on where it stopped; persons without a name are all looked at.
    return { run: state.run, record: state.record, from: terms.named ? state.record.persons : 0 }
  }
  const started = await startRun(settings, terms.inputHash, { operation: terms.operation, named: terms.named })
  return { ...started, from: 0 }
}

/**
 * Waits until the queue has room for `adding` more waiting jobs (`maxWaiting`), telling
 * `onWaiting` meanwhile. A paused queue's waiting jobs never move: the enqueue stops, saying so.
 */
const waitForRoom = async (
  queue: Queue,
  settings: Settings,
  terms: EnqueueTerms,
  adding: number,
  signal: AbortSignal,
  checked: () => Promise<void>
): Promise<void> => {
  for (let waiting = await queue.getWaitingCount(); waiting + adding > terms.maxWaiting!;) {
    if (await queue.isPaused()) {
      const because = await settings.connection.call("HGET", settings.metaKey, "pausedBecause")
      throw failure(
        "enqueue",
        `the queue is paused${typeof because === "string" && because !== "" ? ` (${because.slice(0, 200)})` : ""}` +
          `: its ${waiting} waiting jobs do not move until it is resumed, and maxWaiting is ${terms.maxWaiting}`
      )
    }
    terms.onWaiting(waiting)
    await sleep(WAITING_CHECK_MILLIS, signal)
    await checked()
    waiting = await queue.getWaitingCount()
  }
}

const IDLE = Symbol("idle")

/**
 * Hands each item of `items` to `take`, in order. While the next item is slow to come and
 * `pending()` says something waits in memory, `idle` runs after `idleMillis` (the chunk is added):
 * one timer per chunk, not per item. The iterator is closed however the reading ends.
 */
const readPaced = async <A>(
  items: AsyncIterable<A>,
  idleMillis: number,
  pending: () => boolean,
  idle: () => Promise<void>,
  take: (item: A) => Promise<void>
): Promise<void> => {
  const iterator = items[Symbol.asyncIterator]()
  let due: Promise<typeof IDLE> | undefined
  let timer: ReturnType<typeof setTimeout> | undefined
  try {
    while (true) {
      const next = iterator.next()
      if (pending()) due ??= new Promise((resolve) => (timer = setTimeout(() => resolve(IDLE), idleMillis)))
      else if (due !== undefined) {
        // The chunk was added meanwhile (it filled): its timer is of no use.
        clearTimeout(timer)
        due = undefined
      }
      let result = due === undefined ? await next : await Promise.race([next, due])
      if (result === IDLE) {
        due = undefined
        // Its failure is heard below, once the chunk is added.
        next.catch(() => undefined)
        await idle()
        result = await next
      }
      if (result.done === true) return
      await take(result.value)
    }
  } finally {
    clearTimeout(timer)
    // Not awaited: an async generator's return waits behind a next() still pending (an input that
    // stalled), and the enqueue must end now; the input is closed when it can be.
    // Stryker disable next-line OptionalChaining: an input without return() throws inside then(), which the catch swallows: the same outcome
    Promise.resolve().then(() => iterator.return?.()).catch(() => undefined)
  }
}

/** A job's name: its run and its position in the run's input, from 0 (the `index` of its record). */
export const jobName = (run: number, index: number): string => `run ${run} index ${index}`

/** Enqueues `persons` (PersonUids as text) under the lock `owner` holds; a run holds `maxRunPersons` at most. */
export const enqueueLocked = async (
  queue: Queue,
  settings: Settings,
  terms: EnqueueTerms,
  persons: AsyncIterable<string>,
  owner: string,
  signal: AbortSignal,
  maxRunPersons: number = MAX_RUN_PERSONS
): Promise<Enqueued> => {
  const { from, record, run } = await runFor(settings, terms)
  if (record.finished && record.named) return { run, persons: record.persons, added: 0, present: record.persons }
  let lost = false
  const renewal = setInterval(() => {
    renewLock(settings, owner).then((held) => (lost ||= !held), () => undefined)
  }, LOCK_RENEW_MILLIS)
  // Interrupted, the enqueue's lock is given back by its caller at once: renew it no more.
  const stopRenewing = () => clearInterval(renewal)
  signal.addEventListener("abort", stopRenewing)
  const checked = async () => {
    if (signal.aborted) throw failure("enqueue", "interrupted")
    // Before each chunk, the lock is checked as well as renewed: one lost is never written past.
    lost ||= (await settings.connection.call("GET", settings.lockKey)) !== owner
    if (lost) {
      throw failure(
        "enqueue",
        "the enqueue lock was lost (Redis lost it, or this enqueue stalled for a minute): enqueue again"
      )
    }
  }
  const jobTerms = { operation: terms.operation, run, runId: record.id, named: terms.named, range: terms.range }
  // A chunk never holds more than the bound, so that it can always be added.
  const chunkSize = Math.min(CHUNK, terms.maxWaiting ?? CHUNK)
  let index = 0
  let added = 0
  let enqueued = record.persons
  let chunk: Array<JobMark & { readonly data: JobData }> = []
  const flush = async () => {
    await checked()
    if (chunk.length === 0) return
    if (terms.maxWaiting !== undefined) {
      await waitForRoom(queue, settings, terms, chunk.length, signal, () => checked())
    }
    const found = await presentOf(settings, run, terms.named, chunk)
    const fresh = chunk.filter((_, i) => !found[i])
    if (fresh.length > 0) {
      await queue.addBulk(fresh.map((job) => ({
        // Its run and position (no PHI), for the tools that list jobs: a failure maps to its input line.
        name: jobName(run, job.index),
        data: job.data,
        opts: { ...terms.jobOptions, jobId: job.id }
      })))
    }
    if (!terms.named) await enqueuedPersons(settings, run, chunk.map((job) => job.person))
    added += fresh.length
    chunk = []
    enqueued = Math.max(enqueued, index)
    await writeRun(settings, run, { ...record, persons: enqueued })
  }
  try {
    await readPaced(persons, FLUSH_AFTER_MILLIS, () => chunk.length > 0, flush, async (personUid) => {
      const at = index++
      if (at < from) return
      if (at >= maxRunPersons) {
        throw failure("enqueue", `a run holds at most ${maxRunPersons} persons: split the input`)
      }
      chunk.push({
        index: at,
        person: personFingerprint(settings.keys, personUid, jobTerms),
        ...sealJob(settings.keys, { personUid, index: at }, jobTerms)
      })
      if (chunk.length >= chunkSize) await flush()
    })
    await flush()
    if (terms.named) await writeRun(settings, run, { ...record, persons: index, finished: true })
  } finally {
    stopRenewing()
    signal.removeEventListener("abort", stopRenewing)
  }
  return { run, persons: index, added, present: index - added }
}
