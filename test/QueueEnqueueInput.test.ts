/**
 * How effect-clinical/bullmq's enqueue reads its input and ends, on a real redis-server: a slow or
 * stalled input, its lock renewed, lost or given back, interrupted, resumed where it stopped, forged
 * records, and maxWaiting into a paused queue.
 */
import { Effect, Either, Fiber } from "effect"
import { PersonData } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { describe, expect, it } from "vitest"
import { connect, enqueue, eventually, mock, queueOptions, status, useServers } from "./support/queueServers.js"
import { diesAfterFive, persons, work } from "./support/queueWorkers.js"

useServers(persons)

describe("the enqueue", () => {
  /** An input that yields `first` persons, then waits until `release` is called, then the rest. */
  const stalled = (uids: ReadonlyArray<string>, first: number) => {
    let release: () => void
    const released = new Promise<void>((resolve) => (release = resolve))
    let taken = 0
    const input = (async function*() {
      for (const [i, uid] of uids.entries()) {
        if (i === first) await released
        taken++
        yield uid
      }
    })()
    return { input, release: () => release(), taken: () => taken }
  }

  it("persons taken from a slow input reach Redis within about a second, not when a chunk fills", async () => {
    const uids = persons.slice(0, 5).map((person) => person.personUid)
    const slow = stalled(uids, 3)
    const enqueuing = Effect.runPromise(
      ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, slow.input)
    )
    await eventually(async () => (await status()).waiting === 3)
    expect((await status()).run).toMatchObject({ persons: 3, enqueued: false })
    slow.release()
    expect(await enqueuing).toMatchObject({ persons: 5, added: 5 })
  })

  it("its lock is renewed while the input is slow; a second enqueue stays refused", async () => {
    const slow = stalled(persons.slice(0, 4).map((person) => person.personUid), 2)
    const enqueuing = Effect.runPromise(
      ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, slow.input)
    )
    const admin = connect()
    await eventually(async () => (await admin.exists("bull:test:effect-clinical:enqueuing")) === 1)
    // As if most of its minute had passed: 2.5 s left. A live enqueue renews it within that.
    await admin.pexpire("bull:test:effect-clinical:enqueuing", 2_500)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    expect(await admin.pttl("bull:test:effect-clinical:enqueuing")).toBeGreaterThan(30_000)
    const second = await Effect.runPromise(
      Effect.either(ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, ["x"]))
    )
    expect(Either.getLeft(second).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "QueueError",
      message: expect.stringContaining("another enqueue into this queue is running")
    })
    slow.release()
    expect(await enqueuing).toMatchObject({ added: 4 })
    expect(await admin.exists("bull:test:effect-clinical:enqueuing")).toBe(0)
  })

  it("a lock lost to another enqueue stops this one, which leaves the other's lock alone", async () => {
    const slow = stalled(persons.slice(0, 4).map((person) => person.personUid), 2)
    const enqueuing = Effect.runPromise(
      Effect.either(ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, slow.input))
    )
    const admin = connect()
    await eventually(async () => (await admin.exists("bull:test:effect-clinical:enqueuing")) === 1)
    // It lapsed, and another enqueue took it.
    await admin.set("bull:test:effect-clinical:enqueuing", "another-owner", "PX", 60_000)
    await new Promise((resolve) => setTimeout(resolve, 1_500))
    slow.release()
    const outcome = await enqueuing
    expect(Either.getLeft(outcome).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "QueueError",
      message: expect.stringContaining("the enqueue lock was lost")
    })
    expect(await admin.get("bull:test:effect-clinical:enqueuing")).toBe("another-owner")
  })

  it("interrupted, it stops and gives its lock back at once", async () => {
    const slow = stalled(persons.slice(0, 4).map((person) => person.personUid), 2)
    const fiber = Effect.runFork(
      ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, slow.input)
    )
    const admin = connect()
    await eventually(async () => (await status()).waiting === 2)
    await Effect.runPromise(Fiber.interrupt(fiber))
    expect(await admin.exists("bull:test:effect-clinical:enqueuing")).toBe(0)
    expect(slow.taken()).toBe(2)
  })

  it("a resumed named enqueue goes on from the last person recorded: none skipped, none read twice", async () => {
    const uids = persons.slice(0, 8).map((person) => person.personUid)
    expect(Either.isLeft(await diesAfterFive(uids, "file"))).toBe(true)
    expect((await status()).run).toMatchObject({ persons: 5, enqueued: false })
    expect(await enqueue(uids, { inputId: "file" })).toEqual({ run: 1, persons: 8, added: 3, present: 5 })
    const records = await work(1, (done) => done.length >= 8)
    expect(records.map((record) => record.index).sort((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7])
    expect((await mock.counters()).medicationRequests).toBe(8)
  })

  it("forged records (no key) are not trusted: an enqueue reads its input again and adds nothing twice", async () => {
    const uids = persons.slice(0, 6).map((person) => person.personUid)
    expect(await enqueue(uids, { inputId: "file" })).toMatchObject({ run: 1, added: 6 })
    const admin = connect()
    for (const key of await admin.keys("bull:test:effect-clinical:*")) {
      if (/:(input:[0-9a-f]+|run:\d+)$/.test(key)) {
        await admin.set(key, JSON.stringify({ persons: 1e18, done: true, finished: true, run: 1, named: true }))
      }
    }
    await admin.hset("bull:test:effect-clinical", "run", JSON.stringify(1))
    const again = await enqueue(uids, { inputId: "file" })
    expect(again.persons).toBe(6)
    expect(again.present + again.added).toBe(6)
    expect(typeof again.run).toBe("number")
    // A forged count reads as a count, or as none: never as text.
    await admin.hset(`bull:test:effect-clinical:run:${again.run}:count`, "done", "x", "failed", "1e400")
    expect((await status()).run).toMatchObject({ done: 0, failed: 0 })
  })

  it("maxWaiting into a paused queue stops, saying why; while it waits for room, onWaiting is told", async () => {
    const uids = persons.slice(0, 8).map((person) => person.personUid)
    await enqueue(uids.slice(0, 4))
    const queue = connect()
    await queue.hset("bull:test:effect-clinical", "pausedBecause", "the token endpoint refused the ApplicationId")
    const bull = new (await import("bullmq")).Queue("test", { connection: queue })
    await bull.pause()
    const told: Array<number> = []
    const refused = await Effect.runPromise(Effect.either(ClinicalQueue.enqueue({
      ...queueOptions(),
      operation: PersonData.medications,
      maxWaiting: 4,
      onWaiting: (waiting) => told.push(waiting)
    }, uids)))
    expect(Either.getLeft(refused).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "QueueError",
      message: expect.stringMatching(
        /the queue is paused \(the token endpoint refused the ApplicationId\).*maxWaiting is 4/
      )
    })
    expect(await queue.exists("bull:test:effect-clinical:enqueuing")).toBe(0)
    await bull.resume()
    const waiting = Effect.runPromise(ClinicalQueue.enqueue({
      ...queueOptions(),
      operation: PersonData.medications,
      maxWaiting: 4,
      onWaiting: (count) => told.push(count)
    }, uids))
    await eventually(() => told.length > 0)
    expect(told[0]).toBe(4)
    await work(1, (done) => done.length >= 8)
    expect(await waiting).toMatchObject({ persons: 8, added: 4 })
    await bull.close()
  })
})

describe("the enqueue's end (from review)", () => {
  it("a chunk that cannot be added while the input stalls: the enqueue fails at once, its lock given back", async () => {
    await enqueue(persons.slice(0, 2).map((person) => person.personUid))
    const admin = connect()
    const bull = new (await import("bullmq")).Queue("test", { connection: admin })
    await bull.pause()
    // One person, then an input that never yields again.
    const stalled = (async function*() {
      yield persons[10]!.personUid
      await new Promise(() => {})
    })()
    const outcome = await Effect.runPromise(Effect.either(ClinicalQueue.enqueue({
      ...queueOptions(),
      operation: PersonData.medications,
      maxWaiting: 2,
      again: true
    }, stalled)))
    // Paused by hand: no reason recorded, none made up.
    expect(Either.getLeft(outcome).pipe((e) => e._tag === "Some" && e.value)).toMatchObject({
      _tag: "QueueError",
      message: expect.stringMatching(
        /^queue enqueue failed: the queue is paused: its \d+ waiting jobs do not move until it is resumed, and maxWaiting is 2$/
      )
    })
    expect(await admin.exists("bull:test:effect-clinical:enqueuing")).toBe(0)
    await bull.close()
  })

  it("interrupted while its input stalls: the lock is given back and renewed no more", async () => {
    const stalled = (async function*() {
      yield persons[0]!.personUid
      await new Promise(() => {})
    })()
    const fiber = Effect.runFork(
      ClinicalQueue.enqueue({ ...queueOptions(), operation: PersonData.medications }, stalled)
    )
    await eventually(async () => (await status()).waiting === 1)
    await Effect.runPromise(Fiber.interrupt(fiber))
    const admin = connect()
    expect(await admin.exists("bull:test:effect-clinical:enqueuing")).toBe(0)
    // Another enqueue takes the lock; the interrupted one must not renew it (nor touch it) again.
    await admin.set("bull:test:effect-clinical:enqueuing", "another", "PX", 5_000)
    const monitor = connect()
    const seen: Array<string> = []
    const feed = await monitor.monitor()
    feed.on("monitor", (_time: string, args: Array<string>) => seen.push(args.join(" ")))
    await new Promise((resolve) => setTimeout(resolve, 2_500))
    feed.disconnect()
    expect(seen.filter((command) => /enqueuing/.test(command))).toEqual([])
  })
})
