/**
 * The bounds on a call, driven by TestClock with a fixed jitter: the attempt timeout and the deadline,
 * the concurrency bound and the wait for a turn, the response body limit.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Fiber, TestClock } from "effect"
import * as Fake from "./support/FakeService.js"
import { get, times, withClient } from "./support/resilienceFixtures.js"

describe("timeouts and the deadline", () => {
  it.effect("an attempt timeout is retried; the deadline ends the call with reason Deadline", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(() => Effect.never, () => Effect.never)
          const error = yield* Fake.runWithClock(Effect.flip(get))
          expect(error).toMatchObject({ _tag: "TransportError", reason: "Deadline", operation: "medications" })
          // attempt 1 times out at 30 s, waits 750 ms, attempt 2 is cut by the 45 s deadline
          expect(times(yield* fake.dataRequests)).toEqual([0, 30_750])
        }),
      { deadline: "45 seconds" }
    ))

  it.effect("a slow attempt with retries off is a Timeout, not a Deadline", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(() => Effect.never)
          const error = yield* Fake.runWithClock(Effect.flip(get))
          expect(error).toMatchObject({ _tag: "TransportError", reason: "Timeout" })
        }),
      { maxRetries: 0, requestTimeout: "5 seconds" }
    ))

  it.effect("the deadline also bounds the wait for a token", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptToken(() => Effect.never)
          const error = yield* Fake.runWithClock(Effect.flip(get))
          expect(error).toMatchObject({ _tag: "TransportError", reason: "Deadline" })
          expect(yield* fake.dataRequests).toHaveLength(0)
        }),
      { deadline: "5 seconds", tokenTimeout: "1 minute" }
    ))

  it.effect("a backoff that would pass the deadline is not started", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(Fake.respond(503, {}), Fake.respond(503, {}))
          const error = yield* Fake.runWithClock(Effect.flip(get))
          expect(error).toMatchObject({ _tag: "ServerError", status: 503 })
          // first wait 750 ms fits in 2 s; the second (1.5 s, to 2.25 s) would not
          expect(times(yield* fake.dataRequests)).toEqual([0, 750])
        }),
      { deadline: "2 seconds" }
    ))
})

describe("concurrency bound", () => {
  it.effect("at most maxConcurrentRequests data requests are in flight; the others wait, none is refused", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const gate = yield* Deferred.make<void>()
      let inFlight = 0
      let peak = 0
      const slow: Fake.Responder = (request) =>
        Effect.gen(function*() {
          inFlight++
          peak = Math.max(peak, inFlight)
          yield* Deferred.await(gate)
          inFlight--
          return yield* fake.handler(request)
        })
      yield* fake.scriptData(...Array.from({ length: 10 }, () => slow))
      const results = yield* Effect.gen(function*() {
        const calls = yield* Effect.fork(
          Effect.all(Array.from({ length: 10 }, () => get), { concurrency: "unbounded" })
        )
        for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
        expect(peak).toBe(3)
        yield* Deferred.succeed(gate, undefined)
        return yield* Fiber.join(calls)
      }).pipe(Effect.provide(Fake.clientLayer(fake, { maxConcurrentRequests: 3 })))
      expect(results).toHaveLength(10)
      expect(peak).toBe(3)
    }))
})

describe("waiting for a turn", () => {
  it.effect("callers get their turn in arrival order, and the wait is bounded by the deadline", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const gate = yield* Deferred.make<void>()
      const order: Array<string> = []
      const slow: Fake.Responder = (request) => Effect.zipRight(Deferred.await(gate), fake.handler(request))
      const tagged = (name: string): Fake.Responder => (request) =>
        Effect.sync(() => order.push(name)).pipe(Effect.zipRight(fake.handler(request)))
      yield* fake.scriptData(slow, tagged("second"), tagged("third"))
      yield* Effect.gen(function*() {
        const first = yield* Effect.fork(get)
        for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
        const second = yield* Effect.fork(get)
        for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
        const third = yield* Effect.fork(get)
        for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
        yield* Deferred.succeed(gate, undefined)
        yield* Fiber.join(first)
        yield* Fiber.join(second)
        yield* Fiber.join(third)
      }).pipe(Effect.provide(Fake.clientLayer(fake, { maxConcurrentRequests: 1 })))
      expect(order).toEqual(["second", "third"])
    }))

  it.effect("a caller that cannot get a turn before its deadline fails with Deadline, and frees its place", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      yield* fake.scriptData(() => Effect.zipRight(Effect.sleep("10 seconds"), Effect.never))
      const outcome = yield* Effect.gen(function*() {
        const hog = yield* Effect.fork(get)
        for (let i = 0; i < 10; i++) yield* Effect.yieldNow()
        const waiting = yield* Effect.fork(Effect.flip(get))
        yield* TestClock.adjust("3 seconds")
        const error = yield* Fiber.join(waiting)
        yield* Fiber.interrupt(hog)
        // The turn is free again: a new call goes through.
        const after = yield* get
        return { error, after }
      }).pipe(Effect.provide(Fake.clientLayer(fake, { maxConcurrentRequests: 1, deadline: "3 seconds" })))
      expect(outcome.error).toMatchObject({ _tag: "TransportError", reason: "Deadline", operation: "medications" })
      expect(outcome.after.medications).toHaveLength(2)
    }))
})

describe("response body limit", () => {
  it.effect("a body over maxResponseBytes is a ResponseTooLarge TransportError, not retried", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(Fake.respond(200, { Medications: [{ Note: "x".repeat(2000) }], Success: true }))
          const error = yield* Effect.flip(get)
          expect(error).toMatchObject({ _tag: "TransportError", reason: "ResponseTooLarge", operation: "medications" })
          expect(error.message).toContain("1024 bytes")
          expect(yield* fake.dataRequests).toHaveLength(1)
          expect((yield* get).medications).toHaveLength(2) // a normal answer still fits
        }),
      { maxResponseBytes: 1024 }
    ))
})
