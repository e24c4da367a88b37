/**
 * The worker pool behind `getMany`: every element once, in completion order, the bound on work in
 * flight, and the two ways review broke an earlier version (a lost wake-up under synchronous work;
 * cost growing with the concurrency under an asynchronous source: the second test fails on it).
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Effect, Fiber, Stream, TestClock } from "effect"
import { mapUnordered } from "../src/internal/batch/workers.js"

const indices = <E, R>(stream: Stream.Stream<number, E, R>) =>
  Effect.map(Stream.runCollect(stream), (all) => [...Chunk.toReadonlyArray(all)].sort((a, b) => a - b))

const range = (n: number) => Array.from({ length: n }, (_, i) => i)

async function* slowly(n: number) {
  for (let i = 0; i < n; i++) {
    await Promise.resolve()
    yield i
  }
}

describe("mapUnordered", () => {
  it.live(
    "synchronous work of uneven length at concurrency 1, 2 and 8: every element, no hang",
    () =>
      Effect.gen(function*() {
        // Many Effect steps per element, so that fibers yield between any two of them.
        const work = (i: number) =>
          Effect.gen(function*() {
            let total = 0
            for (let k = 0; k < (i * 7919) % 1500; k++) total += yield* Effect.succeed(1)
            return total >= 0 ? i : -1
          })
        for (const concurrency of [1, 2, 8]) {
          const all = yield* indices(mapUnordered(Stream.range(0, 2999), (i) => work(i), concurrency)).pipe(
            Effect.timeoutFail({ duration: "20 seconds", onTimeout: () => `hung at concurrency ${concurrency}` })
          )
          expect(all).toEqual(range(3000))
        }
      }),
    60_000
  )

  it.live(
    "an asynchronous source under 2,000 workers: done in about the time of one round of calls",
    () =>
      Effect.gen(function*() {
        let inFlight = 0
        let most = 0
        const started = Date.now()
        const all = yield* indices(
          mapUnordered(
            Stream.fromAsyncIterable(slowly(3000), String),
            (_element, index) =>
              Effect.acquireUseRelease(
                Effect.sync(() => most = Math.max(most, ++inFlight)),
                () => Effect.as(Effect.sleep("200 millis"), index),
                () => Effect.sync(() => inFlight--)
              ),
            2000
          )
        )
        expect(all).toEqual(range(3000))
        expect(most).toBe(2000)
        // Two rounds of 200 ms calls; the version that woke every worker per element took minutes.
        expect(Date.now() - started).toBeLessThan(20_000)
      }),
    60_000
  )

  // On the TestClock: 10 ms apart on a busy machine's real clock is no order at all.
  it.effect("results come in completion order; a failing source fails the stream", () =>
    Effect.gen(function*() {
      const collecting = yield* Effect.fork(Stream.runCollect(
        mapUnordered(Stream.make(30, 10, 20), (ms) => Effect.as(Effect.sleep(`${ms} millis`), ms), 3)
      ))
      yield* TestClock.adjust("30 millis")
      const order = yield* Fiber.join(collecting)
      expect(Chunk.toReadonlyArray(order)).toEqual([10, 20, 30])
      const failed = yield* Effect.flip(
        Stream.runDrain(mapUnordered(Stream.concat(Stream.make(1), Stream.fail("gone")), Effect.succeed, 2))
      )
      expect(failed).toBe("gone")
    }))
})
