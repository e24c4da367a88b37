/**
 * effect-clinical/bullmq's enqueue in one process, on a real redis-server with real BullMQ, against
 * the mock served over loopback: what Redis holds (sealed persons, never one in the clear), stable
 * ids, the bound on waiting jobs, one enqueue at a time, its settings and date ranges, and the keys
 * and operations it refuses.
 */
import { Effect, Either } from "effect"
import { PersonData } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { describe, expect, it } from "vitest"
import { expectNone } from "./support/Leaks.js"
import { connect, enqueue, mock, OTHER_KEY, queueOptions, redis, status, useServers } from "./support/queueServers.js"
import { everything, persons, work } from "./support/queueWorkers.js"
import * as RedisServer from "./support/RedisServer.js"

useServers(persons)

describe("enqueue", () => {
  it("seals every person: Redis holds their count, never a PersonUid, in any form; ids say nothing", async () => {
    const uids = persons.map((person) => person.personUid)
    const enqueued = await enqueue(uids)
    expect(enqueued).toEqual({ run: 1, persons: 60, added: 60, present: 0 })
    expect((await status()).waiting).toBe(60)
    const held = await everything()
    expectNone("Redis", held, uids)
    expect(held).toContain("sealed")
  })

  it("the same input again adds nothing (stable ids); with an inputId, a finished enqueue is not read again", async () => {
    const uids = persons.map((person) => person.personUid)
    expect(await enqueue(uids)).toMatchObject({ added: 60 })
    expect(await enqueue(uids)).toEqual({ run: 1, persons: 60, added: 0, present: 60 })
    // A named input is a run of its own: its jobs are its own (ids differ by run).
    expect(await enqueue(uids.slice(0, 10), { inputId: "file-a" })).toEqual({
      run: 2,
      persons: 10,
      added: 10,
      present: 0
    })
    let read = 0
    const counted = function*() {
      for (const uid of uids.slice(0, 10)) {
        read++
        yield uid
      }
    }
    expect(await enqueue([...counted()].slice(0, 0), { inputId: "file-a" })).toEqual({
      run: 2,
      persons: 10,
      added: 0,
      present: 10
    })
    read = 0
    expect(await enqueue(counted(), { inputId: "file-a" })).toMatchObject({ added: 0 })
    expect(read).toBe(0)
    expect((await status()).waiting).toBe(70)
  })

  it("maxWaiting: enqueueing waits while that many jobs wait, and goes on as the workers take them", async () => {
    const uids = persons.slice(0, 30).map((person) => person.personUid)
    let finished = false
    const enqueuing = enqueue(uids, { maxWaiting: 10 }).then((enqueued) => {
      finished = true
      return enqueued
    })
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(finished).toBe(false)
    expect((await status()).waiting).toBe(10)
    const records = await work(1, (done) => done.length >= 30)
    expect(await enqueuing).toEqual({ run: 1, persons: 30, added: 30, present: 0 })
    expect(new Set(records.map((record) => record.index)).size).toBe(30)
  })

  it("one enqueue into a queue at a time: a second is refused while the first runs", async () => {
    const uids = persons.slice(0, 10).map((person) => person.personUid)
    const first = enqueue(uids, { maxWaiting: 5 })
    while ((await status()).waiting < 5) await new Promise((resolve) => setTimeout(resolve, 20))
    const second = await Effect.runPromise(
      Effect.either(ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, ["x"]))
    )
    expect(Either.getLeft(second).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "QueueError",
      message: expect.stringContaining("another enqueue into this queue is running")
    })
    await work(1, (done) => done.length >= 10)
    expect(await first).toMatchObject({ added: 10 })
  })

  it.each([
    ["operation", { operation: { name: 7 } }, "must be a PersonData operation"],
    ["attempts", { attempts: 0 }, "must be a whole number from 1 to 100"],
    ["attempts", { attempts: 101 }, "must be a whole number from 1 to 100"],
    ["backoff", { backoff: "soon" }, "must be a duration"],
    ["fleetConcurrency", { fleetConcurrency: 0 }, "must be a whole number, 1 or more"],
    ["ratePerSecond", { ratePerSecond: 1.5 }, "must be a whole number, 1 or more"],
    ["maxWaiting", { maxWaiting: -1 }, "must be a whole number, 1 or more"],
    ["inputId", { inputId: "" }, "must be a non-empty string"],
    ["inputId", { inputId: 42 }, "must be a non-empty string"],
    ["onWaiting", { onWaiting: "log" }, "must be a function"]
  ])("enqueue refuses %s %j before Redis sees anything: InvalidConfig naming it", async (setting, bad, reason) => {
    const refused = await Effect.runPromise(Effect.flip(
      ClinicalQueue.enqueue(
        { ...queueOptions(), operation: PersonData.medications, ...(bad as Partial<ClinicalQueue.EnqueueOptions>) },
        [persons[0]!.personUid]
      )
    ))
    expect(refused).toMatchObject({ _tag: "InvalidConfig", setting, reason })
    expect(await RedisServer.contents(redis.port)).toBe("")
  })

  it("enqueue takes every setting at its bound: 100 attempts, a backoff, a fleet concurrency, a rate, a bound on waiting", async () => {
    const enqueued = await enqueue([persons[0]!.personUid], {
      attempts: 100,
      backoff: "2 seconds",
      fleetConcurrency: 1_000_000,
      ratePerSecond: 1_000_000,
      maxWaiting: 1,
      inputId: "input-1",
      onWaiting: () => {}
    })
    expect(enqueued).toMatchObject({ added: 1 })
  })

  it("a date range: checked at enqueue; each job carries its own, so enqueues of different ranges share a queue", async () => {
    const bad = await Effect.runPromise(Effect.either(
      ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications, startDate: "2024-02-30" }, ["a"])
    ))
    expect(Either.getLeft(bad).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "InvalidConfig",
      setting: "startDate"
    })
    const [first, second] = [persons[0]!.personUid, persons[1]!.personUid]
    await enqueue([first], { startDate: "2020-01-01", endDate: "2020-12-31" })
    expect(await enqueue([second], { startDate: "2024-01-01" })).toMatchObject({ added: 1 })
    // The same person at the same position with another range is another job.
    expect(await enqueue([first], { startDate: "2021-01-01" })).toMatchObject({ added: 1 })
    await work(1, (done) => done.length >= 3)
    const bodies = (await mock.requestLog()).filter((entry) => entry.operation === "medications")
      .map((entry) => JSON.parse(entry.body!) as Record<string, unknown>)
    const rangeOf = (uid: string) =>
      bodies.filter((body) => body.personuid === uid).map(({ EndDate, StartDate }) => ({ StartDate, EndDate }))
    expect(rangeOf(first)).toEqual(expect.arrayContaining([
      { StartDate: "2020-01-01", EndDate: "2020-12-31" },
      { StartDate: "2021-01-01", EndDate: undefined }
    ]))
    expect(rangeOf(second)).toEqual([{ StartDate: "2024-01-01", EndDate: undefined }])
  })

  it("a queue of one operation refuses another's jobs, and another sealing key", async () => {
    await enqueue(["a"])
    const other = await Effect.runPromise(
      Effect.either(ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.ethnicities }, ["b"]))
    )
    expect(Either.getLeft(other).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "InvalidConfig",
      setting: "operation"
    })
    const wrongKey = await Effect.runPromise(
      Effect.either(ClinicalQueue.enqueue({ ...queueOptions(OTHER_KEY), operation: PersonData.medications }, ["b"]))
    )
    expect(Either.getLeft(wrongKey).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "InvalidConfig",
      setting: "sealingKey"
    })
  })

  it("a missing or weak sealing key is refused before Redis is touched", async () => {
    for (const key of [undefined, "short", "a".repeat(64)]) {
      const outcome = await Effect.runPromise(
        Effect.either(
          ClinicalQueue.enqueue(
            { ...queueOptions(), sealingKey: key, operation: PersonData.medications },
            ["a"]
          )
        )
      )
      expect(Either.getLeft(outcome).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
        _tag: "InvalidConfig",
        setting: "sealingKey"
      })
    }
    expect(await connect().dbsize()).toBe(0)
  })
})
