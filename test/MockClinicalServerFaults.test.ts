/**
 * The mock's faults: scripted ones in order, dropped connections and delays, random ones repeatable
 * by seed, clearing them, and the request log.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { HttpDate } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import { APP, tokenRequest, withMock } from "./support/mockServerFixtures.js"

describe("MockClinicalServer faults", () => {
  it.effect("scripted faults answer the next requests to their target, in order", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        yield* mock.injectFaults("token", [
          MockClinicalServer.Fault.status(503, { retryAfter: 2 }),
          MockClinicalServer.Fault.status(429, { body: "slow down", retryAfter: "Sun, 22 Nov 2026 08:00:00 GMT" }),
          MockClinicalServer.Fault.notJson,
          MockClinicalServer.Fault.missingTokenExpires,
          MockClinicalServer.Fault.malformedTokenExpires
        ])
        const a = yield* mock.handle(tokenRequest)
        expect([a.status, a.headers["retry-after"]]).toEqual([503, "2"])
        const b = yield* mock.handle(tokenRequest)
        expect([b.status, b.body, b.headers["retry-after"]]).toEqual([
          429,
          "slow down",
          "Sun, 22 Nov 2026 08:00:00 GMT"
        ])
        const c = yield* mock.handle(tokenRequest)
        expect([c.status, c.headers["content-type"]]).toEqual([200, "text/html"])
        expect(() => JSON.parse(c.body)).toThrow()
        const d = yield* mock.handle(tokenRequest)
        expect([d.status, d.headers.token_expires]).toEqual([200, undefined])
        const e = yield* mock.handle(tokenRequest)
        expect([e.status, e.headers.token_expires]).toEqual([200, "in one hour"])
        expect((yield* mock.handle(tokenRequest)).headers.token_expires).toBeDefined()
      })
    ))

  it.effect("a dropped connection is a TransportError in memory; a delay waits on the mock's clock", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        yield* mock.injectFaults("any", [MockClinicalServer.Fault.drop, MockClinicalServer.Fault.delay("3 seconds")])
        const dropped = yield* Effect.flip(mock.handle(tokenRequest))
        expect(dropped).toMatchObject({ _tag: "TransportError", reason: "Network" })
        const fiber = yield* Effect.fork(mock.handle(tokenRequest))
        yield* TestClock.adjust("2 seconds")
        expect(fiber.unsafePoll()).toBeNull()
        yield* TestClock.adjust("1 second")
        const response = yield* fiber
        expect(response.status).toBe(200)
        expect(response.headers.date).toBe(HttpDate.format(3000))
        const counters = yield* mock.counters
        expect(counters.dropped).toBe(1)
        expect(counters.byStatus).toEqual({ 200: 1 })
      })
    ))

  it.effect("random faults follow their probabilities and repeat exactly for a seed", () =>
    Effect.gen(function*() {
      const run = Effect.flatMap(MockClinicalServer.make(), (mock) =>
        Effect.gen(function*() {
          yield* mock.setRandomFaults("token", {
            seed: 42,
            faults: [
              { probability: 0.2, fault: MockClinicalServer.Fault.status(500) },
              { probability: 0.1, fault: MockClinicalServer.Fault.drop }
            ]
          })
          const outcomes: Array<number | string> = []
          for (let i = 0; i < 2000; i++) {
            const outcome = yield* mock.respond(tokenRequest)
            outcomes.push(outcome._tag === "Drop" ? "drop" : outcome.response.status)
          }
          return { outcomes, counters: yield* mock.counters }
        }))
      const first = yield* run
      const second = yield* run
      expect(second.outcomes).toEqual(first.outcomes)
      const share = (value: number | string) => first.outcomes.filter((o) => o === value).length / 2000
      expect(share(500)).toBeGreaterThan(0.17)
      expect(share(500)).toBeLessThan(0.23)
      expect(share("drop")).toBeGreaterThan(0.08)
      expect(share("drop")).toBeLessThan(0.12)
      expect(first.counters.dropped + first.counters.byStatus[500]! + first.counters.byStatus[200]!).toBe(2000)
    }))

  it.effect("clearFaults stops scripted and random faults; resetCounters empties the log", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        yield* mock.injectFaults("token", [MockClinicalServer.Fault.status(500)])
        yield* mock.setRandomFaults("any", {
          seed: 1,
          faults: [{ probability: 1, fault: MockClinicalServer.Fault.drop }]
        })
        yield* mock.clearFaults
        expect((yield* mock.handle(tokenRequest)).status).toBe(200)
        expect((yield* mock.requestLog).map((r) => [r.operation, r.status])).toEqual([["token", 200]])
        yield* mock.resetCounters
        expect(yield* mock.requestLog).toEqual([])
        expect((yield* mock.counters).tokenRequests).toBe(0)
      })
    ))

  it.effect("the request log keeps what arrived, within its limit", () =>
    withMock(
      (mock) =>
        Effect.gen(function*() {
          for (let i = 0; i < 5; i++) yield* mock.handle(tokenRequest)
          const log = yield* mock.requestLog
          expect(log).toHaveLength(3)
          expect(log[0]).toMatchObject({
            method: "POST",
            path: "/api/Server/Token",
            body: JSON.stringify({ ApplicationId: APP }),
            status: 200
          })
          expect((yield* mock.counters).tokenRequests).toBe(5)
        }),
      { requestLogLimit: 3 }
    ))
})
