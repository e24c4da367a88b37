/**
 * The load control through real calls (issue 25), against a fake service under TestClock with a fixed
 * jitter so that every count is exact: the adaptive concurrency limit, the retry budget, and a call
 * that waited for a turn. Their decisions alone are tested in ConcurrencyLimit and LoadControl.
 */
import { describe, expect, it } from "@effect/vitest"
import { Context, Effect, Fiber, Layer, Metric, Redacted } from "effect"
import { ClinicalClient, HttpTransport, TokenService } from "effect-clinical"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as Fake from "./support/FakeService.js"
import * as Hostile from "./support/HostileServer.js"
import { calls, fixedCapacity, get, outcomesOf, withClient } from "./support/loadControlFixtures.js"

// Hundreds of calls under TestClock, step by step: seconds on a busy machine.
describe("the adaptive concurrency limit", { timeout: 30_000 }, () => {
  it.effect("a cold client lets initialConcurrency requests out, more as answers come back, never more than the ceiling", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          const service = fixedCapacity(fake, 1000, 20)
          yield* service.script(400)
          const running = yield* Effect.fork(calls(400))
          for (let i = 0; i < 20; i++) yield* Effect.yieldNow()
          expect(service.seen.inFlight).toBe(4)
          const results = yield* Fake.runWithClock(running.await, "10 millis")
          expect(results._tag).toBe("Success")
          expect(service.seen.answered).toBe(400)
          expect(service.seen.peak).toBe(32)
          expect((yield* Metric.value(Telemetry.concurrencyLimit)).value).toBe(32)
        }),
      { maxConcurrentRequests: 32 }
    ))

  it.effect("against a service that takes 6 at once, 429s stay few and every call succeeds", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          const service = fixedCapacity(fake, 6, 20)
          yield* service.script(2000)
          const results = yield* Fake.runWithClock(calls(300), "10 millis")
          expect(outcomesOf(results).filter((tag) => tag !== "Right")).toEqual([])
          expect(service.seen.answered).toBe(300)
          // A client that never adapted would meet a 429 for most of its requests (see below).
          expect(service.seen.throttled / (service.seen.answered + service.seen.throttled)).toBeLessThan(0.05)
        }),
      {}
    ))

  it.effect("a limit started above the service's capacity comes down at the first 429s", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          const service = fixedCapacity(fake, 4, 20)
          yield* service.script(2000)
          const results = yield* Fake.runWithClock(calls(300), "10 millis")
          expect(outcomesOf(results).filter((tag) => tag !== "Right")).toEqual([])
          // 12 of the first 16 at once, then a few as the limit probes past 4 (25 in this run).
          expect(service.seen.throttled).toBeLessThanOrEqual(30)
        }),
      { initialConcurrency: 16 }
    ))

  it.effect("attempts that outlive their timeout bring it down, as 503s do: the service is overloaded, not down", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(...Array.from({ length: 8 }, (): Fake.Responder => () => Effect.never))
          const timedOut = yield* Fake.runWithClock(calls(8), "100 millis")
          expect(outcomesOf(timedOut)).toEqual(Array.from({ length: 8 }, () => "TransportError"))
          // One overload (the other seven went before the limit came down): 8 x 0.7.
          expect((yield* Metric.value(Telemetry.concurrencyLimit)).value).toBe(5)
          const service = fixedCapacity(fake, 100, 20)
          yield* service.script(8)
          yield* Fake.runWithClock(calls(8), "10 millis")
          expect(service.seen.peak).toBe(5)
        }),
      { initialConcurrency: 8, maxRetries: 0, requestTimeout: "1 second" }
    ))

  it.effect("turned off, the client keeps maxConcurrentRequests out and meets a 429 for most requests", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          const service = fixedCapacity(fake, 4, 20)
          yield* service.script(2000)
          yield* Fake.runWithClock(calls(50), "50 millis")
          expect(service.seen.throttled).toBeGreaterThan(service.seen.answered)
        }),
      { adaptiveConcurrency: false, maxConcurrentRequests: 16, circuitBreakerThreshold: 0, retryBudget: false }
    ))
})

describe("the retry budget", { timeout: 30_000 }, () => {
  const refusedByBudget = Metric.tagged(Telemetry.refusedByLoadControl, "reason", "retry-budget")

  it.effect("when every call fails, retries stay within the budget, and the refused ones fail with the error that asked", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(...Fake.answering(503, 800))
          const before = (yield* Metric.value(refusedByBudget)).count
          const results = yield* Fake.runWithClock(calls(200))
          expect(outcomesOf(results)).toEqual(Array.from({ length: 200 }, () => "ServerError"))
          const requests = (yield* fake.dataRequests).length
          // 200 first attempts; retries: the floor's 100, 0.5 per first attempt, and at most 10 a
          // second while the calls run (at most 6 s). Without a budget, 800 requests.
          expect(requests).toBeGreaterThanOrEqual(200 + 100 + 100 - 10)
          expect(requests).toBeLessThanOrEqual(200 + 100 + 100 + 60)
          // A refused retry ends its call: each refused call lost 1 to 3 requests.
          const refused = (yield* Metric.value(refusedByBudget)).count - before
          expect(refused).toBeGreaterThanOrEqual((800 - requests) / 3)
          expect(refused).toBeLessThanOrEqual(Math.min(200, 800 - requests))
        }),
      { adaptiveConcurrency: false, maxConcurrentRequests: 1000, circuitBreakerThreshold: 0 }
    ))

  it.effect("turned off, each call takes its retries", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(...Fake.answering(503, 800))
          yield* Fake.runWithClock(calls(200))
          expect(yield* fake.dataRequests).toHaveLength(800)
        }),
      { adaptiveConcurrency: false, maxConcurrentRequests: 1000, circuitBreakerThreshold: 0, retryBudget: false }
    ))
})

describe("a call that waited for a turn", () => {
  /** Tokens numbered as issued; the first data request held until `release`, the others answered at once. */
  const numberedTokens = () =>
    Effect.gen(function*() {
      let issued = 0
      let held: (() => void) | undefined
      const server = yield* Hostile.serve((received, res) => {
        if (Hostile.isToken(received)) {
          return Hostile.answerToken(res, { body: { Token: `token-${++issued}`, TokenType: "Bearer" } })
        }
        const answer = () => Hostile.json(res, 200, { Medications: [], Success: true })
        if (held === undefined && Hostile.dataRequests(server).length === 1) held = answer
        else answer()
      })
      return { server, release: () => held?.() }
    })

  for (
    const [path, transport] of [
      ["common path (undici's dispatch)", HttpTransport.layerUndici()],
      [
        "Effect path (undici's send alone)",
        Layer.map(HttpTransport.layerUndici(), (context) => {
          const { dispatch: _, ...sendOnly } = Context.get(context, HttpTransport.HttpTransport)
          return Context.make(HttpTransport.HttpTransport, sendOnly)
        })
      ]
    ] as const
  ) {
    it.scopedLive(`sends the token that replaced the one it took while it waited (${path})`, () =>
      Effect.gen(function*() {
        const { release, server } = yield* numberedTokens()
        yield* Effect.gen(function*() {
          const first = yield* TokenService.get
          const holding = yield* Effect.fork(get)
          while (Hostile.dataRequests(server).length < 1) yield* Effect.sleep("5 millis")
          // Waits for the one turn, with token-1 taken.
          const waiting = yield* Effect.fork(get)
          yield* Effect.sleep("20 millis")
          yield* TokenService.invalidate(first)
          expect(Redacted.value((yield* TokenService.get).token)).toBe("token-2")
          release()
          yield* Fiber.join(holding)
          yield* Fiber.join(waiting)
        }).pipe(
          Effect.provide(
            ClinicalClient.layer({
              baseUrl: server.url,
              applicationId: Hostile.APPLICATION_ID,
              maxConcurrentRequests: 1
            }).pipe(Layer.provide(transport))
          )
        )
        expect(Hostile.dataRequests(server).map((r) => r.headers.authorization)).toEqual([
          "Bearer token-1",
          "Bearer token-2"
        ])
      }))
  }
})
