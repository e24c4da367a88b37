/**
 * effect-clinical/bullmq's enqueue failing, on a real redis-server with real BullMQ, as a caller
 * reads it: a lock another enqueue holds, takes over or lets lapse, a paused queue's reason, an empty
 * input into a full queue, and its input closed. The rest of the enqueue is
 * test/QueueEnqueue.test.ts and test/QueueEnqueueInput.test.ts.
 */
import { describe, expect, it } from "vitest"
import {
  bullOf,
  enqueue,
  failure,
  LOCK,
  META,
  monitored,
  persons,
  status,
  tryEnqueue,
  uids
} from "./support/queueRuns.js"
import { connect, eventually, useServers } from "./support/queueServers.js"

useServers(persons)

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
