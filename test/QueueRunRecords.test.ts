/**
 * effect-clinical/bullmq's runs' records and numbers on a real redis-server (the mock serves the
 * workers where a test needs persons done): their TTLs, scripts' failures, records read up to 4096
 * bytes or signed by an earlier version, numbers past missing keys, and compaction, when Redis holds
 * what this version did not write.
 */
import { Effect, Layer } from "effect"
import { ClinicalClient, PersonData, TokenStore } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { describe, expect, it, vi } from "vitest"
import { signed } from "../src/internal/queue/runRecord.js"
import { recordOutcome } from "../src/internal/queue/runStore.js"
import { enqueue, failure, META, persons, settings, status, tryEnqueue, uids } from "./support/queueRuns.js"
import { connect, eventually, KEY, mock, queueOptions, useServers } from "./support/queueServers.js"

useServers(persons)

/** A person the mock does not know: failed at once. */
const UNKNOWN = "UnKnownPersonUid0000000000000000000=="

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
