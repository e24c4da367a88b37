/**
 * effect-clinical/bullmq's runs, on a real redis-server with real BullMQ: nothing read twice and
 * counts exact (again, outcomes recorded twice, failures retried into successes), runs whose records
 * someone else rewrote or that many later runs followed, and retryFailed run twice at once.
 */
import { Effect, Either } from "effect"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { MockClinicalServer } from "effect-clinical/testing"
import { describe, expect, it } from "vitest"
import { settingsOf } from "../src/internal/queue/queueSettings.js"
import { recordOutcome } from "../src/internal/queue/runStore.js"
import { connect, enqueue, eventually, mock, queueOptions, status, useServers } from "./support/queueServers.js"
import { diesAfterFive, persons, work } from "./support/queueWorkers.js"

useServers(persons)

describe("runs: nothing read twice, counts exact", () => {
  it("enqueue without an inputId: persons already done are not added again", async () => {
    const uids = persons.slice(0, 10).map((person) => person.personUid)
    await enqueue(uids)
    await work(1, (done) => done.length >= 10)
    await eventually(async () => (await status()).run?.done === 10)
    expect(await enqueue(uids)).toEqual({ run: 1, persons: 10, added: 0, present: 10 })
    expect((await status()).waiting).toBe(0)
    // A longer list of the same run: only the new persons are added.
    const more = persons.slice(0, 12).map((person) => person.personUid)
    expect(await enqueue(more)).toEqual({ run: 1, persons: 12, added: 2, present: 10 })
    // Another person at a position done before is another job.
    const changed = [persons[20]!.personUid, ...uids.slice(1)]
    expect(await enqueue(changed)).toMatchObject({ added: 1 })
  })

  it("the unnamed run counts persons, wherever each list put them: two lists read, counted 8 of 8, the first again adds nobody", async () => {
    const first = persons.slice(0, 5).map((person) => person.personUid)
    const second = persons.slice(30, 33).map((person) => person.personUid)
    await enqueue(first)
    await work(1, (done) => done.length >= 5)
    await enqueue(second)
    await work(1, (done) => done.length >= 3)
    await eventually(async () => (await status()).run?.done === 8)
    expect((await status()).run).toMatchObject({ named: false, persons: 8, done: 8, failed: 0 })
    expect(await enqueue(first)).toMatchObject({ added: 0, present: 5 })
    // The same person twice in one list, or at another position: one job.
    expect(await enqueue([second[0]!, first[0]!, second[0]!])).toMatchObject({ added: 0 })
    expect((await mock.counters()).medicationRequests).toBe(8)
  })

  it("again starts a new run: everyone is read again, and its counts are its own", async () => {
    const uids = persons.slice(0, 6).map((person) => person.personUid)
    expect(await enqueue(uids, { inputId: "nightly" })).toMatchObject({ run: 1, added: 6 })
    await work(1, (done) => done.length >= 6)
    await eventually(async () => (await status()).run?.done === 6)
    expect(await enqueue(uids, { inputId: "nightly" })).toMatchObject({ run: 1, added: 0 })
    expect(await enqueue(uids, { inputId: "nightly", again: true })).toMatchObject({ run: 2, added: 6 })
    expect((await status()).run).toEqual({
      run: 2,
      id: expect.stringMatching(/^[0-9a-f]{16}$/),
      named: true,
      operation: "medications",
      persons: 6,
      enqueued: true,
      done: 0,
      failed: 0
    })
    await work(1, (done) => done.length >= 6)
    await eventually(async () => (await status()).run?.done === 6)
    expect((await status()).run).toMatchObject({ run: 2, done: 6, failed: 0 })
    expect((await Effect.runPromise(ClinicalQueue.status(queueOptions(), { run: 1 }))).run).toMatchObject({
      run: 1,
      done: 6
    })
  })

  it("an outcome recorded twice (a person delivered again) counts once; a success is never undone", async () => {
    await enqueue([persons[0]!.personUid, persons[1]!.personUid], { inputId: "list" })
    const settings = Either.getOrThrow(settingsOf(queueOptions()))
    const runId = (await status()).run!.id
    const ids = (await connect().keys("bull:test:*")).map((key) => key.split(":")[2]!).filter((id) =>
      /^[0-9a-f]{32}$/.test(id)
    )
    const person = Buffer.alloc(8)
    const [first, second] = ids.map((id, index) => ({ id, index, person }))
    await recordOutcome(settings, 1, runId, first!, "D")
    await recordOutcome(settings, 1, runId, first!, "D")
    await recordOutcome(settings, 1, runId, first!, "F")
    await recordOutcome(settings, 1, runId, second!, "F")
    await recordOutcome(settings, 1, runId, second!, "F")
    expect((await status()).run).toMatchObject({ persons: 2, done: 1, failed: 1 })
    await recordOutcome(settings, 1, runId, second!, "D")
    expect((await status()).run).toMatchObject({ done: 2, failed: 0 })
    // Another job at a position replaces the first's count.
    await recordOutcome(settings, 1, runId, { ...second!, id: "f".repeat(32) }, "F")
    expect((await status()).run).toMatchObject({ done: 1, failed: 1 })
    // Another run under the same number (its records lost and started over), or none: left alone.
    await recordOutcome(settings, 1, "fedcba9876543210", first!, "F")
    await recordOutcome(settings, 9, runId, first!, "D")
    expect((await status()).run).toMatchObject({ done: 1, failed: 1 })
    expect(await connect().exists("bull:test:effect-clinical:run:9:slots")).toBe(0)
  })

  it("a failure retried into a success moves from one count to the other", async () => {
    const unknown = "UnKnownPersonUid0000000000000000000=="
    await enqueue([persons[0]!.personUid, unknown], { attempts: 1 })
    const records = await work(1, (done) => done.length >= 2)
    expect(records).toHaveLength(2)
    await eventually(async () => (await status()).failed === 1)
    expect((await status()).run).toMatchObject({ persons: 2, done: 1, failed: 1 })
    // The unknown person becomes known (another service), and is retried.
    const knowing = await MockClinicalServer.start({
      persons: [...persons, { ...MockClinicalServer.fixturePersons[0]!, personUid: unknown }]
    })
    try {
      expect(await Effect.runPromise(ClinicalQueue.retryFailed(queueOptions()))).toBe(1)
      await work(1, (done) => done.length >= 1, { baseUrl: knowing.url, applicationId: knowing.applicationId })
      await eventually(async () => (await status()).run?.done === 2)
      expect((await status()).run).toMatchObject({ persons: 2, done: 2, failed: 0 })
    } finally {
      await knowing.close()
    }
  })

  it("retryFailed while workers fail the jobs again: each failed job is put back once", async () => {
    const unknown = Array.from(
      { length: 40 },
      (_, i) => `UnKnownPersonUid${String(i).padStart(4, "0")}000000000000000==`
    )
    await enqueue(unknown, { attempts: 1 })
    await work(1, (done) => done.length >= 40)
    await eventually(async () => (await status()).failed === 40)
    await mock.resetCounters()
    // A worker fails each person again as soon as it is put back, while retryFailed runs.
    let again = 0
    const failing = work(1, () => ++again >= 40, undefined, { concurrency: 16 })
    expect(await Effect.runPromise(ClinicalQueue.retryFailed(queueOptions()))).toBe(40)
    await failing
    await eventually(async () => (await status()).failed === 40)
    expect((await mock.counters()).medicationRequests).toBe(40)
  })
})

describe("runs whose records someone else rewrote, or that many later runs followed (from review)", () => {
  it("a queue record deleted mid-input: another input never gets the run, and the first goes on where it stopped", async () => {
    const a = persons.slice(0, 8).map((person) => person.personUid)
    await diesAfterFive(a, "A")
    // Whoever can write Redis removes the queue's own record (its run counter with it).
    await connect().del("bull:test:effect-clinical")
    const b = await enqueue(persons.slice(40, 43).map((person) => person.personUid), { inputId: "B" })
    expect(b.run).not.toBe(1)
    expect(await enqueue(a, { inputId: "A" })).toEqual({ run: 1, persons: 8, added: 3, present: 5 })
    const records = await work(1, (done) => done.length >= 11)
    expect(records.filter((record) => record.run === 1).map((record) => record.index).sort()).toEqual([
      0,
      1,
      2,
      3,
      4,
      5,
      6,
      7
    ])
  })

  it("a run still at work is kept whole, however many runs come after it: enqueued again, it adds nobody", async () => {
    for (const [name, from] of [["A", 0], ["B", 10], ["C", 20], ["D", 30]] as const) {
      await enqueue(persons.slice(from, from + 5).map((person) => person.personUid), { inputId: name })
    }
    expect(await enqueue(persons.slice(0, 5).map((person) => person.personUid), { inputId: "A" })).toEqual({
      run: 1,
      persons: 5,
      added: 0,
      present: 5
    })
    await work(1, (done) => done.length >= 20)
    const first = await Effect.runPromise(ClinicalQueue.status(queueOptions(), { run: 1 }))
    expect(first.run).toMatchObject({ persons: 5, done: 5 })
  })

  it("a complete run three runs back has its slots removed, its counts kept; its late outcomes change nothing", async () => {
    await enqueue(persons.slice(0, 3).map((person) => person.personUid), { inputId: "A" })
    await work(1, (done) => done.length >= 3)
    await eventually(async () => (await status()).run?.done === 3)
    for (const [name, from] of [["B", 10], ["C", 20], ["D", 30]] as const) {
      await enqueue(persons.slice(from, from + 2).map((person) => person.personUid), { inputId: name })
    }
    const admin = connect()
    expect(await admin.exists("bull:test:effect-clinical:run:1:slots")).toBe(0)
    expect((await Effect.runPromise(ClinicalQueue.status(queueOptions(), { run: 1 }))).run).toMatchObject({
      persons: 3,
      done: 3,
      enqueued: true
    })
    // Enqueued again, the finished input adds nobody.
    expect(await enqueue(persons.slice(0, 3).map((person) => person.personUid), { inputId: "A" })).toMatchObject({
      run: 1,
      added: 0
    })
  })

  it("a tag of characters longer in bytes than hex digits in the queue's record: read as none, status works", async () => {
    await enqueue([persons[0]!.personUid])
    await connect().hset("bull:test:effect-clinical", "operation", "é".repeat(32) + ".1", "run", "é".repeat(32) + ".1")
    const after = await status()
    expect(after.operation).toBeUndefined()
    expect(after.run).toBeUndefined()
    expect(after.waiting).toBe(1)
  })
})

describe("retryFailed (from review)", () => {
  it("two at once put every failed job back, each once, and leave none failed", async () => {
    const unknown = Array.from(
      { length: 300 },
      (_, i) => `UnKnownPersonUid${String(i).padStart(4, "0")}111111111111111==`
    )
    await enqueue(unknown, { attempts: 1 })
    await work(1, (done) => done.length >= 300, undefined, { concurrency: 32 })
    await eventually(async () => (await status()).failed === 300)
    const [one, two] = await Promise.all([
      Effect.runPromise(ClinicalQueue.retryFailed(queueOptions())),
      Effect.runPromise(ClinicalQueue.retryFailed(queueOptions()))
    ])
    expect(one + two).toBe(300)
    expect((await status()).failed).toBe(0)
    expect((await status()).waiting).toBe(300)
    // About 1.2 s alone, over 2 s beside a busy suite: vitest's default 5 s was too close a ceiling.
  }, 30_000)
})
