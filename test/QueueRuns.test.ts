/**
 * effect-clinical/bullmq's enqueue and runs, on a real redis-server with real BullMQ (the mock
 * serves the workers, where a test needs persons done): the enqueue's failures as a caller reads
 * them, how it reads a slow input and ends (lock checks, renewals, the input closed, a caller's
 * signal), where a resumed input goes on, and the runs' records and numbers when Redis holds what
 * this version did not write (records gone, pointers written back, keys of someone else's).
 * The rest of the queue is test/Queue.test.ts.
 */
import { Queue } from "bullmq"
import { Effect, Either, Layer } from "effect"
import { ClinicalClient, PersonData, TokenStore } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { MockClinicalServer } from "effect-clinical/testing"
import { Redis } from "ioredis"
import { getEventListeners } from "node:events"
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest"
import { enqueueLocked, type EnqueueTerms, releaseLock, takeLock } from "../src/internal/queue/enqueue.js"
import { settingsOf } from "../src/internal/queue/queueSettings.js"
import { signed } from "../src/internal/queue/runRecord.js"
import { recordOutcome } from "../src/internal/queue/runStore.js"
import * as RedisServer from "./support/RedisServer.js"

const KEY = "q6v3Y1bq0kS8m2Qe7xHc4Jz9Lr5Tw1Ua0pNd8Vf3Gk4="
const META = "bull:test:effect-clinical"
const LOCK = `${META}:enqueuing`

let redis: RedisServer.RedisServer
let mock: MockClinicalServer.Started
const connections: Array<Redis> = []

/** Persons the mock knows: the fixture's three, under new PersonUids. */
const persons: Array<MockClinicalServer.MockPerson> = Array.from({ length: 20 }, (_, i) => ({
  ...MockClinicalServer.fixturePersons[i % 3]!,
  personUid: `RuN${i.toString(36).padStart(5, "0")}Zk9wXy${(i * 7919).toString(36)}mN==`
}))
const uids = (from: number, to: number): Array<string> => persons.slice(from, to).map((person) => person.personUid)
/** A person the mock does not know: failed at once. */
const UNKNOWN = "UnKnownPersonUid0000000000000000000=="

beforeAll(async () => {
  redis = await RedisServer.start()
  mock = await MockClinicalServer.start({ persons })
})
afterAll(async () => {
  await mock?.close()
  await redis?.stop()
})
afterEach(async () => {
  for (const connection of connections.splice(0)) connection.disconnect()
  await RedisServer.flushAll(redis.port)
  await mock.resetCounters()
})

const connect = (): Redis => {
  const connection = new Redis(redis.port, "127.0.0.1", { maxRetriesPerRequest: null })
  connection.on("error", () => {})
  connections.push(connection)
  return connection
}

const queueOptions = () => ({ connection: connect(), name: "test", sealingKey: KEY })
const settings = () => Either.getOrThrow(settingsOf(queueOptions()))

type Input = Iterable<string> | AsyncIterable<string>

const tryEnqueue = (input: Input, options?: Partial<ClinicalQueue.EnqueueOptions>) =>
  Effect.runPromise(Effect.either(
    ClinicalQueue.enqueue(
      { ...queueOptions(), operation: PersonData.medications, backoff: "10 millis", ...options },
      input
    )
  ))

const enqueue = async (input: Input, options?: Partial<ClinicalQueue.EnqueueOptions>) =>
  Either.getOrThrow(await tryEnqueue(input, options))

const failure = <A, E>(outcome: Either.Either<A, E>): E | undefined => Either.isLeft(outcome) ? outcome.left : undefined

const status = (run?: number) => Effect.runPromise(ClinicalQueue.status(queueOptions(), { run }))

/** Waits until `check` holds, looking every 20 ms (the test's own timeout bounds the wait). */
const eventually = async (check: () => Promise<boolean> | boolean): Promise<void> => {
  while (!(await check())) await new Promise((resolve) => setTimeout(resolve, 20))
}

/** One Effect worker over the mock until it has handed `count` records to its sink. */
const work = async (count: number, options?: Partial<ClinicalQueue.WorkerOptions>): Promise<void> => {
  let finish: () => void
  const finished = new Promise<void>((resolve) => (finish = resolve))
  let records = 0
  const client = ClinicalClient.layerUndici({
    baseUrl: mock.url,
    applicationId: mock.applicationId,
    retryRateLimited: false,
    retryBaseDelay: "10 millis"
  }).pipe(Layer.provide(TokenStore.layerRedis({ redis: TokenStore.ioredis(connect()), sealingKey: KEY })))
  await Effect.runPromise(
    Effect.scoped(Effect.zipRight(
      ClinicalQueue.worker({
        ...queueOptions(),
        operation: PersonData.medications,
        sink: () => {
          if (++records >= count) finish()
        },
        concurrency: 4,
        ...options
      }),
      Effect.promise(() => finished)
    )).pipe(Effect.provide(client))
  )
}

/** BullMQ's own view of the queue, over a connection of the test's. */
const bullOf = () => new Queue("test", { connection: connect() })

/** An input that yields `first` persons, then waits until `release` is called, then the rest. */
const stalled = (items: ReadonlyArray<string>, first: number) => {
  let release: () => void
  const released = new Promise<void>((resolve) => (release = resolve))
  const input = (async function*() {
    for (const [i, item] of items.entries()) {
      if (i === first) await released
      yield item
    }
  })()
  return { input, release: () => release() }
}

async function* asyncOf(items: ReadonlyArray<string>): AsyncGenerator<string> {
  yield* items
}

/** Commands Redis runs, as MONITOR shows them (commands run inside a script marked `lua`). */
const monitored = async () => {
  const seen: Array<{ readonly args: ReadonlyArray<string>; readonly lua: boolean }> = []
  const feed = await connect().monitor()
  feed.on("monitor", (_time: string, args: Array<string>, source: string) => seen.push({ args, lua: source === "lua" }))
  /** Sends `mark` through another connection and waits until the feed shows it: all before it is seen. */
  const mark = async (text: string) => {
    await connect().echo(text)
    await eventually(() => seen.some(({ args }) => args[0]?.toLowerCase() === "echo" && args[1] === text))
    return seen.findIndex(({ args }) => args[0]?.toLowerCase() === "echo" && args[1] === text)
  }
  return { seen, mark, stop: () => feed.disconnect() }
}

describe("the enqueue's failures, as a caller reads them", { timeout: 20_000 }, () => {
  it("a lock another enqueue holds: refused in so many words, the other's lock left", async () => {
    const admin = connect()
    await admin.set(LOCK, "another-owner", "PX", 60_000)
    expect(failure(await tryEnqueue(uids(0, 1)))).toMatchObject({
      _tag: "QueueError",
      operation: "enqueue",
      message:
        "queue enqueue failed: another enqueue into this queue is running (if it died, its lock ends within a minute)"
    })
    expect(await admin.get(LOCK)).toBe("another-owner")
  })

  it("a lock taken over before its first chunk: nothing added, the other's lock left", async () => {
    let started: () => void
    const starting = new Promise<void>((resolve) => (started = resolve))
    let open: () => void
    const opened = new Promise<void>((resolve) => (open = resolve))
    const input = (async function*() {
      started!()
      await opened
      yield* uids(0, 3)
    })()
    const enqueuing = tryEnqueue(input)
    await starting
    const admin = connect()
    // Its lock lapsed and another enqueue took it, all within a second (before any renewal).
    await admin.set(LOCK, "another-owner", "PX", 60_000)
    open!()
    expect(failure(await enqueuing)).toMatchObject({
      _tag: "QueueError",
      operation: "enqueue",
      message:
        "queue enqueue failed: the enqueue lock was lost (Redis lost it, or this enqueue stalled for a minute): enqueue again"
    })
    expect(await admin.get(LOCK)).toBe("another-owner")
    expect((await status()).waiting).toBe(0)
  })

  it("a lock that lapsed, even for a moment, stops it: put back with its own value, it is lost all the same", async () => {
    const slow = stalled(uids(0, 4), 2)
    const enqueuing = tryEnqueue(slow.input)
    await eventually(async () => (await status()).waiting === 2)
    const admin = connect()
    const owner = await admin.get(LOCK)
    const watch = await monitored()
    const lapsedAt = await watch.mark("lapsed")
    await admin.del(LOCK)
    // A renewal finds it gone; then (a Redis restored from an older copy) it is back as it was.
    await eventually(() =>
      watch.seen.slice(lapsedAt).some(({ args, lua }) => !lua && args[0] === "EVAL" && args[1]!.includes("PEXPIRE"))
    )
    watch.stop()
    await admin.set(LOCK, owner!, "PX", 60_000)
    slow.release()
    expect(failure(await enqueuing)).toMatchObject({
      _tag: "QueueError",
      message: expect.stringContaining("the enqueue lock was lost")
    })
    expect((await status()).waiting).toBe(2)
  })

  it("a lock lost while it waits for room stops it at its next look, not once room comes", async () => {
    await enqueue(uids(0, 2))
    const admin = connect()
    const told: Array<number> = []
    const enqueuing = tryEnqueue(uids(2, 4), { maxWaiting: 2, onWaiting: (waiting) => told.push(waiting) })
    await eventually(() => told.length > 0)
    await admin.set(LOCK, "another-owner", "PX", 60_000)
    // No worker takes a job: only the lock's check can end the wait.
    expect(failure(await enqueuing)).toMatchObject({
      _tag: "QueueError",
      message: expect.stringContaining("the enqueue lock was lost")
    })
    expect(await admin.get(LOCK)).toBe("another-owner")
    expect((await status()).waiting).toBe(2)
  })

  it("a paused queue's reason is cut at 200 characters in the enqueue's failure", async () => {
    await enqueue(uids(0, 2))
    const reason = "r".repeat(150) + "s".repeat(150)
    await connect().hset(META, "pausedBecause", reason)
    const bull = bullOf()
    await bull.pause()
    expect(failure(await tryEnqueue(uids(2, 4), { maxWaiting: 2 }))).toMatchObject({
      _tag: "QueueError",
      message: `queue enqueue failed: the queue is paused (${"r".repeat(150)}${"s".repeat(50)}): ` +
        "its 2 waiting jobs do not move until it is resumed, and maxWaiting is 2"
    })
    await bull.close()
  })

  it("nothing to add never waits for room: an empty input into a full, paused queue ends at once", async () => {
    await enqueue(uids(0, 3))
    const bull = bullOf()
    await bull.pause()
    const told: Array<number> = []
    expect(await enqueue([], { maxWaiting: 1, onWaiting: (waiting) => told.push(waiting) })).toEqual({
      run: 1,
      persons: 0,
      added: 0,
      present: 0
    })
    expect(told).toEqual([])
    await bull.close()
  })

  it("a failed enqueue closes its input (a file it reads is let go)", async () => {
    await enqueue(uids(0, 2))
    const bull = bullOf()
    await bull.pause()
    let closed = false
    const input = (async function*() {
      try {
        yield* uids(5, 15)
      } finally {
        closed = true
      }
    })()
    expect(failure(await tryEnqueue(input, { maxWaiting: 2 }))).toMatchObject({
      _tag: "QueueError",
      message: expect.stringContaining("the queue is paused")
    })
    await eventually(() => closed)
    await bull.close()
  })
})

describe("how the enqueue reads and ends", { timeout: 20_000 }, () => {
  it("it checks its lock once per chunk: an input stalled with nothing held is not polled, and once ended it renews nothing", async () => {
    const many = Array.from({ length: 501 }, (_, i) => `RuNmAnY${String(i).padStart(5, "0")}Zk9wXymN==`)
    const watch = await monitored()
    const input = (async function*() {
      yield* many.slice(0, 500)
      // A stall of more than the idle flush's second, with the first chunk (500) added and nothing held.
      await new Promise((resolve) => setTimeout(resolve, 2_500))
      yield many[500]!
    })()
    expect(await enqueue(input)).toEqual({ run: 1, persons: 501, added: 501, present: 0 })
    const ended = await watch.mark("ended")
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    const later = await watch.mark("later")
    watch.stop()
    const checks = watch.seen.filter(({ args, lua }) => !lua && args[0] === "GET" && args[1] === LOCK)
    // The full chunk's, and the last one's.
    expect(checks).toHaveLength(2)
    expect(watch.seen.slice(ended, later).filter(({ args }) => args.includes(LOCK))).toEqual([])
  })

  it("a caller's abort wakes its wait for room at once ('interrupted'); it tells onWaiting no more and leaves no listener on the signal", async () => {
    const queueSettings = settings()
    const bull = bullOf()
    const terms = (maxWaiting: number | undefined, onWaiting: (waiting: number) => void): EnqueueTerms => ({
      operation: "medications",
      range: {},
      inputHash: "0".repeat(32),
      named: false,
      again: false,
      jobOptions: {},
      maxWaiting,
      onWaiting
    })
    const owner = await takeLock(queueSettings)
    try {
      const first = new AbortController()
      expect(
        await enqueueLocked(bull, queueSettings, terms(undefined, () => {}), asyncOf(uids(0, 2)), owner, first.signal)
      )
        .toEqual({ run: 1, persons: 2, added: 2, present: 0 })
      expect(getEventListeners(first.signal, "abort")).toEqual([])
      const controller = new AbortController()
      const listening: Array<number> = []
      const waiting = enqueueLocked(
        bull,
        queueSettings,
        terms(1, () => {
          listening.push(getEventListeners(controller.signal, "abort").length)
          if (listening.length === 2) {
            // From here no timer fires: only the abort can end the wait it is about to begin.
            vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] })
            queueMicrotask(() => controller.abort())
          }
        }),
        asyncOf(uids(2, 4)),
        owner,
        controller.signal
      )
      await expect(waiting).rejects.toMatchObject({ _tag: "QueueError", operation: "enqueue", detail: "interrupted" })
      vi.useRealTimers()
      // Told before each second's wait; each wait's listener gone when it ended (the enqueue's own stays).
      expect(listening).toEqual([1, 1])
      expect(getEventListeners(controller.signal, "abort")).toEqual([])
    } finally {
      vi.useRealTimers()
      await releaseLock(queueSettings, owner)
      await bull.close()
    }
  })

  it("a run holds at most its bound of persons (here 5): the one past it is refused, saying to split the input", async () => {
    // 50 million persons are too many to read in a test: the bound is lowered for this one.
    vi.resetModules()
    vi.doMock("../src/internal/queue/runRecord.js", async (original) => ({
      ...(await original<typeof import("../src/internal/queue/runRecord.js")>()),
      MAX_RUN_PERSONS: 5
    }))
    const queueSettings = settings()
    const bull = bullOf()
    const owner = await takeLock(queueSettings)
    try {
      const bounded = await import("../src/internal/queue/enqueue.js")
      const terms: EnqueueTerms = {
        operation: "medications",
        range: {},
        inputHash: "0".repeat(32),
        named: true,
        again: true,
        jobOptions: {},
        maxWaiting: undefined,
        onWaiting: () => {}
      }
      const signal = new AbortController().signal
      expect(await bounded.enqueueLocked(bull, queueSettings, terms, asyncOf(uids(0, 5)), owner, signal))
        .toMatchObject({ persons: 5, added: 5 })
      await expect(bounded.enqueueLocked(bull, queueSettings, terms, asyncOf(uids(0, 6)), owner, signal)).rejects
        .toMatchObject({
          _tag: "QueueError",
          operation: "enqueue",
          detail: "a run holds at most 5 persons: split the input"
        })
    } finally {
      vi.doUnmock("../src/internal/queue/runRecord.js")
      vi.resetModules()
      await releaseLock(queueSettings, owner)
      await bull.close()
    }
  })

  it("after its enqueue, a named run is finished at its size and keeps no set of persons; the unnamed run stays open; every job is a person's", async () => {
    await enqueue(uids(0, 2), { inputId: "A" })
    await enqueue(uids(2, 4))
    expect(await connect().exists(`${META}:run:1:persons`)).toBe(0)
    expect((await status(1)).run).toMatchObject({ named: true, persons: 2, enqueued: true })
    expect((await status()).run).toMatchObject({ run: 2, named: false, persons: 2, enqueued: false })
    const bull = bullOf()
    // Each job named by its run and its position in that run's input (no PHI).
    expect((await bull.getWaiting()).map((job) => job.name).sort()).toEqual([
      "run 1 index 0",
      "run 1 index 1",
      "run 2 index 0",
      "run 2 index 1"
    ])
    await bull.close()
  })
})

describe("where an input's enqueue goes on", { timeout: 20_000 }, () => {
  it("an input's run of another operation is not gone on with (the queue's record of its operation removed): a new run reads it all", async () => {
    expect(await enqueue(uids(0, 3), { inputId: "A" })).toMatchObject({ run: 1, added: 3 })
    await connect().hdel(META, "operation")
    expect(Either.getOrThrow(
      await Effect.runPromise(Effect.either(
        ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.ethnicities, inputId: "A" }, uids(0, 3))
      ))
    )).toEqual({ run: 2, persons: 3, added: 3, present: 0 })
  })

  it("a resumed named enqueue does not look again at the persons before where it stopped: a job removed meanwhile stays removed", async () => {
    let fail: () => void
    const failing = new Promise<void>((resolve) => (fail = resolve))
    const dying = (async function*() {
      yield* uids(0, 5)
      await failing
      throw new Error("the disk went away")
    })()
    const died = tryEnqueue(dying, { inputId: "file" })
    await eventually(async () => (await status()).waiting === 5)
    fail!()
    expect(Either.isLeft(await died)).toBe(true)
    const bull = bullOf()
    const [removed] = await bull.getWaiting(0, 0)
    await removed!.remove()
    expect(await enqueue(uids(0, 8), { inputId: "file" })).toEqual({ run: 1, persons: 8, added: 3, present: 5 })
    expect((await status()).waiting).toBe(7)
    await bull.close()
  })

  it("an input whose run's record is gone (expired, removed) starts a new run: every person read again", async () => {
    await enqueue(uids(0, 3), { inputId: "A" })
    await connect().del(`${META}:run:1`)
    expect(await enqueue(uids(0, 3), { inputId: "A" })).toEqual({ run: 2, persons: 3, added: 3, present: 0 })
  })
})

describe("a run's records and numbers", { timeout: 20_000 }, () => {
  it("a named run's counts and slots expire in 30 days, their TTL renewed by the first outcome, then once a minute", async () => {
    await enqueue(uids(0, 3), { inputId: "ttl" })
    const queueSettings = settings()
    const runId = (await status()).run!.id
    const admin = connect()
    const keys = [`${META}:run:1:count`, `${META}:run:1:slots`]
    const job = (index: number) => ({ id: String(index).repeat(32), index, person: Buffer.alloc(8, index) })
    const now = vi.spyOn(Date, "now")
    try {
      now.mockReturnValue(1_800_000_000_000)
      // The first outcome creates the slots: both keys are given the run's TTL.
      expect(await recordOutcome(queueSettings, 1, runId, job(0), "D")).toBe(1)
      for (const key of keys) expect(await admin.ttl(key)).toBeGreaterThan(29 * 24 * 3600)
      // Within the minute, the next outcomes renew nothing: a TTL cut short stays so.
      await admin.expire(keys[1]!, 1_000)
      expect(await recordOutcome(queueSettings, 1, runId, job(1), "D")).toBe(1)
      expect(await admin.ttl(keys[1]!)).toBeLessThanOrEqual(1_000)
      // A minute on, the next outcome renews both.
      now.mockReturnValue(1_800_000_060_000)
      expect(await recordOutcome(queueSettings, 1, runId, job(2), "F")).toBe(1)
      for (const key of keys) expect(await admin.ttl(key)).toBeGreaterThan(29 * 24 * 3600)
    } finally {
      now.mockRestore()
    }
    expect(await status()).toMatchObject({ run: { done: 2, failed: 1 } })
    // A renewal time that is no number (whoever can write Redis) renews, rather than failing the script midway.
    await admin.hset(keys[0]!, "renewAt", "soon")
    await admin.expire(keys[1]!, 1_000)
    expect(await recordOutcome(queueSettings, 1, runId, job(0), "F")).toBe(0)
    expect(await recordOutcome(queueSettings, 1, runId, { ...job(1), index: 1 }, "D")).toBe(0)
    await admin.hset(keys[0]!, "renewAt", "soon")
    expect(await recordOutcome(queueSettings, 1, runId, { ...job(2), id: "9".repeat(32) }, "D")).toBe(1)
    expect(await admin.ttl(keys[1]!)).toBeGreaterThan(29 * 24 * 3600)
  })

  it("a script's failure other than NOSCRIPT is passed on as it came, the script not run again (what it wrote before failing would pass for a repeat)", async () => {
    await enqueue(uids(0, 1), { inputId: "A" })
    const queueSettings = settings()
    const runId = (await status()).run!.id
    // Someone wrote a count that is no number: the script fails after it wrote the slot.
    await connect().hset(`${META}:run:1:count`, "done", "x")
    const job = { id: "a".repeat(32), index: 0, person: Buffer.alloc(8) }
    // An outcome of another run (left alone) has Redis know the script: it is sent by its SHA-1 from here.
    expect(await recordOutcome(queueSettings, 1, "fedcba9876543210", job, "D")).toBe(0)
    await expect(recordOutcome(queueSettings, 1, runId, job, "D")).rejects.toThrow(/not an integer/)
    // A client whose failure is not even an Error: that is what the caller gets.
    const odd = { ...queueSettings, connection: { call: () => Promise.reject(undefined), on: () => undefined } }
    await expect(recordOutcome(odd, 1, runId, job, "D")).rejects.toBeUndefined()
  })

  it("a record is read up to 4096 bytes: a run's record of 4096 reads back, one of 4097 is none", async () => {
    const { keys } = settings()
    const admin = connect()
    const record = { id: "0123456789abcdef", input: "i", operation: "", persons: 0, finished: true, named: true }
    const bare = signed(keys, ":run:7", record).length
    const ofLength = (length: number) => signed(keys, ":run:7", { ...record, operation: "o".repeat(length - bare) })
    expect(ofLength(4096)).toHaveLength(4096)
    await admin.set(`${META}:run:7`, ofLength(4096))
    expect((await status(7)).run).toMatchObject({ run: 7, id: "0123456789abcdef", named: true })
    await admin.set(`${META}:run:7`, ofLength(4097))
    expect((await status(7)).run).toBeUndefined()
  })

  it("a run's record as this version signs it (a fixed text) reads back: runs recorded before an upgrade are kept", async () => {
    await connect().set(
      `${META}:run:3`,
      "3c32d156a0996807d22fbed08ca4a092." +
        `{"id":"0123456789abcdef","input":"${"a".repeat(32)}","operation":"medications","persons":4,` +
        `"finished":true,"named":true}`
    )
    expect((await status(3)).run).toEqual({
      run: 3,
      id: "0123456789abcdef",
      named: true,
      operation: "medications",
      persons: 4,
      enqueued: true,
      done: 0,
      failed: 0
    })
  })

  it("a run never recorded is none; so is the latest run when its pointer, written back, names another id than its number holds", async () => {
    expect((await status(42)).run).toBeUndefined()
    await enqueue(uids(0, 2), { inputId: "A" })
    const admin = connect()
    const pointer = await admin.hget(META, "run")
    // Everything lost; run 1 is another input's now, under another id.
    await admin.flushdb()
    expect(await enqueue(uids(2, 4), { inputId: "B" })).toMatchObject({ run: 1 })
    expect((await status()).run).toMatchObject({ run: 1, persons: 2 })
    await admin.hset(META, "run", pointer!)
    expect((await status()).run).toBeUndefined()
  })

  it("run numbers go past the queue's counter when the latest run's keys are gone", async () => {
    expect(await enqueue(uids(0, 2), { inputId: "A" })).toMatchObject({ run: 1 })
    const admin = connect()
    // The queue's record removed: run 1's keys are found and passed over.
    await admin.del(META)
    expect(await enqueue(uids(2, 4), { inputId: "B" })).toMatchObject({ run: 2 })
    // Run 2's keys expire (or are removed): its number is not used again.
    await admin.del(...await admin.keys(`${META}:run:2*`))
    expect(await enqueue(uids(4, 6), { inputId: "C" })).toMatchObject({ run: 3 })
  })

  it("run numbers go past the latest run when the queue's counter is gone", async () => {
    await enqueue(uids(0, 2), { inputId: "A" })
    expect(await enqueue(uids(2, 4), { inputId: "B" })).toMatchObject({ run: 2 })
    const admin = connect()
    await admin.hdel(META, "runs")
    await admin.del(...await admin.keys(`${META}:run:1*`))
    expect(await enqueue(uids(4, 6), { inputId: "C" })).toMatchObject({ run: 3 })
  })

  it("a queue whose next thousand run numbers are someone else's keys is refused, not searched for ever", async () => {
    const admin = connect()
    await admin.mset(
      Object.fromEntries(Array.from({ length: 1001 }, (_, i) => [`${META}:run:${i + 1}:count`, "someone else's"]))
    )
    expect(failure(await tryEnqueue(uids(0, 1)))).toMatchObject({
      _tag: "QueueError",
      operation: "enqueue",
      message: "queue enqueue failed: no free run number after 1000 taken ones: the queue's keys are not its own"
    })
    // A thousand are passed over.
    await admin.del(`${META}:run:1001:count`)
    expect(await enqueue(uids(0, 1))).toMatchObject({ run: 1001, added: 1 })
  })

  it("a complete run with failures, three runs back, is compacted (its slots removed); a late outcome changes nothing", async () => {
    await enqueue([...uids(0, 2), UNKNOWN], { inputId: "A", attempts: 1 })
    await work(3)
    await eventually(async () => (await status()).run?.done === 2 && (await status()).run?.failed === 1)
    const runId = (await status()).run!.id
    for (const [name, from] of [["B", 10], ["C", 11], ["D", 12]] as const) {
      await enqueue(uids(from, from + 1), { inputId: name })
    }
    const admin = connect()
    expect(await admin.exists(`${META}:run:1:slots`)).toBe(0)
    await recordOutcome(settings(), 1, runId, { id: "b".repeat(32), index: 1, person: Buffer.alloc(8) }, "D")
    expect((await status(1)).run).toMatchObject({ persons: 3, done: 2, failed: 1 })
    expect(await admin.exists(`${META}:run:1:slots`)).toBe(0)
  })

  it("the unnamed run, all its persons done, is never compacted however many runs follow: its persons again add nobody", async () => {
    await enqueue(uids(0, 3))
    await work(3)
    await eventually(async () => (await status()).run?.done === 3)
    for (const [name, from] of [["B", 10], ["C", 11], ["D", 12]] as const) {
      await enqueue(uids(from, from + 1), { inputId: name })
    }
    expect(await enqueue(uids(0, 3))).toEqual({ run: 1, persons: 3, added: 0, present: 3 })
  })

  it("the run three back has no record (expired, removed): a new run starts all the same", async () => {
    for (const [name, from] of [["A", 0], ["B", 1], ["C", 2]] as const) {
      await enqueue(uids(from, from + 1), { inputId: name })
    }
    await connect().del(`${META}:run:1`)
    expect(await enqueue(uids(3, 4), { inputId: "D" })).toMatchObject({ run: 4, added: 1 })
  })
})
