/**
 * How effect-clinical/bullmq's enqueue reads and ends, on a real redis-server with real BullMQ: its
 * lock checked once per chunk, a caller's signal, a run's bound of persons, a named run finished at
 * its size; and where an input's enqueue goes on (another operation's run, a resumed input, a run's
 * record gone).
 */
import { Effect, Either } from "effect"
import { PersonData } from "effect-clinical"
import * as ClinicalQueue from "effect-clinical/bullmq"
import { getEventListeners } from "node:events"
import { describe, expect, it, vi } from "vitest"
import { enqueueLocked, type EnqueueTerms, releaseLock, takeLock } from "../src/internal/queue/enqueue.js"
import {
  bullOf,
  enqueue,
  LOCK,
  META,
  monitored,
  persons,
  settings,
  status,
  tryEnqueue,
  uids
} from "./support/queueRuns.js"
import { connect, eventually, queueOptions, useServers } from "./support/queueServers.js"

useServers(persons)

async function* asyncOf(items: ReadonlyArray<string>): AsyncGenerator<string> {
  yield* items
}

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
