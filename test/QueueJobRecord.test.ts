/**
 * effect-clinical/bullmq's pauses and the queue's own record, on a real redis-server with real
 * BullMQ: a fleet pause only ever extended, a refused token's pause, what the record says (a pause's
 * reason, a refused key or operation, its events stream's length), and a sealing key that is not
 * the queue's (issue 50). The persons are read through a PersonData layer of the test's own.
 */
import { Effect, Either } from "effect"
import { ClinicalError, PersonData } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { describe, expect, it } from "vitest"
import { settingsOf } from "../src/internal/queue/queueSettings.js"
import { signed } from "../src/internal/queue/runRecord.js"
import {
  bullQueue,
  connect,
  enqueue,
  eventually,
  KEY,
  OTHER_KEY,
  queueOptions,
  status,
  useServers
} from "./support/queueServers.js"
import {
  at,
  failuresByKind,
  found,
  jobsByOutcome,
  notFound,
  scripted,
  since,
  started,
  taggedNow,
  work
} from "./support/scriptedWorkers.js"

useServers()

describe("pauses", () => {
  it("a 429 while a longer pause holds leaves the longer one: a pause is extended, never shortened", async () => {
    await enqueue(["Person0000000000000000000000=="])
    let answer!: () => void
    const answered = new Promise<void>((resolve) => (answer = resolve))
    const { asked, layer } = scripted(() =>
      Effect.promise(() => answered).pipe(
        Effect.zipRight(Effect.fail(new ClinicalError.RateLimited({ ...at, status: 429, retryAfterMillis: 1_000 })))
      )
    )
    const outcomes = jobsByOutcome()
    const failures = failuresByKind()
    await work(layer, async () => {
      if (asked() === 1 && (await status()).rateLimitedForMillis === 0) {
        // Another worker's pause, a minute long, set while this call is under way.
        await bullQueue().rateLimit(60_000)
        answer()
      }
      // Until the attempt is counted, whatever its outcome.
      return Object.keys(since(outcomes, jobsByOutcome())).length > 0
    })
    expect((await status()).rateLimitedForMillis).toBeGreaterThan(30_000)
    expect(since(outcomes, jobsByOutcome())).toEqual({ paused: 1 })
    expect(since(failures, failuresByKind())).toEqual(taggedNow({ RateLimited: 1 }))
  })

  it("a refused token pauses the queue with its reason, counted as paused; resumed, the person is read", async () => {
    await enqueue(["Person0000000000000000000000=="])
    const { layer } = scripted((_, before) =>
      before === 0 ? Effect.fail(new ClinicalError.Unauthorized({ ...at, status: 401 })) : Effect.succeed(found)
    )
    const outcomes = jobsByOutcome()
    const failures = failuresByKind()
    const records = await work(layer, async (done) => {
      const now = await status()
      if (now.isPaused) {
        expect(now.pausedBecause).toMatch(/^the service refused a fresh token \(Unauthorized\)/)
        await Effect.runPromise(ClinicalQueue.resume(queueOptions()))
      }
      return done.length === 1
    })
    expect(records).toMatchObject([{ outcome: "Success" }])
    expect(since(outcomes, jobsByOutcome())).toEqual({ paused: 1, completed: 1 })
    expect(since(failures, failuresByKind())).toEqual(taggedNow({ Unauthorized: 1 }))
  })
})

describe("the queue's own record", () => {
  const metaKey = "bull:test:effect-clinical"

  it("why it was paused: an empty reason is none; a long one (someone else's) is cut at 500 characters", async () => {
    await enqueue(["Person0000000000000000000000=="])
    const admin = connect()
    await admin.hset(metaKey, "pausedBecause", "")
    expect((await status()).pausedBecause).toBeUndefined()
    await admin.hset(metaKey, "pausedBecause", `maintenance ${"r".repeat(1_000)}`)
    expect((await status()).pausedBecause).toBe(`maintenance ${"r".repeat(488)}`)
  })

  it("an operation signed with the key but not a name (another program's record) reads as none", async () => {
    await enqueue(["Person0000000000000000000000=="])
    const settings = Either.getOrThrow(settingsOf(queueOptions()))
    await connect().hset(metaKey, "operation", signed(settings.keys, ":operation", { name: "medications" }))
    expect((await status()).operation).toBeUndefined()
  })

  it("a worker with another key, or of other operations, is refused at start, the refusal saying why", async () => {
    await enqueue(["Person0000000000000000000000=="], { operation: PersonData.ethnicities })
    const { layer } = scripted(() => Effect.succeed(found))
    const refused = (options: Parameters<typeof ClinicalQueue.worker>[0]) =>
      Effect.runPromise(Effect.flip(Effect.scoped(ClinicalQueue.worker(options))).pipe(Effect.provide(layer)))
    expect(await refused({ ...queueOptions(OTHER_KEY), operation: PersonData.ethnicities, sink: () => {} })).toEqual(
      new ClinicalError.InvalidConfig({
        setting: "sealingKey",
        reason:
          "does not open the records of the queue \"test\": it is not the key the queue was filled with, and every process of a queue needs the same key"
      })
    )
    expect(
      await refused({
        ...queueOptions(),
        operation: [PersonData.medications, PersonData.detailedEthnicities],
        sink: () => {}
      })
    ).toEqual(
      new ClinicalError.InvalidConfig({
        setting: "operation",
        reason: "the queue \"test\" holds ethnicities jobs, not medications or detailedEthnicities"
      })
    )
  })

  it("its events stream is kept to about 1,000 entries (BullMQ's default keeps 10,000)", async () => {
    const uids = Array.from({ length: 1_500 }, (_, i) => `Person${String(i).padStart(6, "0")}0000000000000000==`)
    await enqueue(uids)
    expect((await status()).waiting).toBe(1_500)
    // Trimmed approximately: whole blocks of entries, never much past the length asked.
    expect(await connect().xlen("bull:test:events")).toBeLessThanOrEqual(1_200)
  })
})

describe("a sealing key that is not the queue's (issue 50)", () => {
  const metaKey = "bull:test:effect-clinical"
  const wrongKey = new ClinicalError.InvalidConfig({
    setting: "sealingKey",
    reason:
      "does not open the records of the queue \"test\": it is not the key the queue was filled with, and every process of a queue needs the same key"
  })

  it("status, retryFailed and resume refuse it, saying so, and change nothing; before, status read as no run and no operation", async () => {
    await enqueue(["Person0000000000000000000000==", "Person1111111111111111111111=="], { attempts: 1 })
    await work(scripted(() => Effect.fail(notFound())).layer, async () => (await status()).failed === 2)
    await bullQueue().pause()
    const other = queueOptions(OTHER_KEY)
    expect(await Effect.runPromise(Effect.flip(ClinicalQueue.status(other)))).toEqual(wrongKey)
    expect(await Effect.runPromise(Effect.flip(ClinicalQueue.retryFailed(other)))).toEqual(wrongKey)
    expect(await Effect.runPromise(Effect.flip(ClinicalQueue.resume(other)))).toEqual(wrongKey)
    const after = await status()
    expect(after).toMatchObject({ operation: "medications", failed: 2, waiting: 0, isPaused: true })
    expect(after.run).toMatchObject({ run: 1, persons: 2 })
    expect(String(wrongKey)).not.toContain(KEY)
    expect(String(wrongKey)).not.toContain(OTHER_KEY)
  })

  it("a key check that is not one of ours (16 hex digits) is none: no refusal, and a worker claims nothing over it", async () => {
    await enqueue(["Person0000000000000000000000=="])
    await connect().hset(metaKey, "keyCheck", "# Server\r\nredis_version:7.2.0")
    expect(await Effect.runPromise(ClinicalQueue.status(queueOptions(OTHER_KEY)))).toMatchObject({ waiting: 1 })
  })

  it("a worker started on an empty queue claims it for its key: an enqueue with another is refused", async () => {
    const { layer } = scripted(() => Effect.succeed(found))
    const worker = await started(layer, { sink: () => {} })
    try {
      const refused = await Effect.runPromise(Effect.flip(ClinicalQueue.enqueue({
        ...queueOptions(OTHER_KEY),
        operation: PersonData.medications
      }, ["Person0000000000000000000000=="])))
      expect(refused).toEqual(wrongKey)
      expect((await status()).waiting).toBe(0)
    } finally {
      await worker.close()
    }
  })

  it("a worker whose key the queue no longer records takes no job it cannot open: each goes back, unattempted, and it stops", async () => {
    const { asked, layer } = scripted(() => Effect.succeed(found))
    const told: Array<string> = []
    const worker = await started(layer, { sink: () => {}, onError: (error) => told.push(error.message) })
    try {
      // Someone replaced the queue's record, then filled it with another key.
      await connect().del(metaKey)
      await enqueue(["Person0000000000000000000000==", "Person1111111111111111111111=="], { sealingKey: OTHER_KEY })
      await eventually(() => told.length > 0)
      expect(told[0]).toBe(new ClinicalError.InvalidConfig(wrongKey).message)
      const queue = bullQueue()
      await eventually(async () => (await queue.getJobCounts("active")).active === 0)
      expect(await queue.getJobCounts("waiting", "failed", "completed")).toEqual({
        waiting: 2,
        failed: 0,
        completed: 0
      })
      for (const job of await queue.getWaiting()) expect(job.attemptsMade).toBe(0)
      expect(asked()).toBe(0)
    } finally {
      await worker.close()
    }
    // A worker with the queue's key reads them both.
    const records = await work(layer, (done) => done.length === 2, { ...queueOptions(OTHER_KEY) })
    expect(records.map((record) => record.outcome)).toEqual(["Success", "Success"])
  })
})
