/**
 * The circuit breaker through real calls (issue 25), against a fake service under TestClock with a
 * fixed jitter: what opens it and what does not, the probe after the cool-down, and the limit's slow
 * start once it closes. Its decisions alone are tested in LoadControl.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Metric, TestClock } from "effect"
import { HttpTransport } from "effect-clinical"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as Fake from "./support/FakeService.js"
import { calls, fail503, fixedCapacity, get, outcomesOf, withClient } from "./support/loadControlFixtures.js"

describe("the circuit breaker", () => {
  it.effect("10 failures in a row open it: calls fail with CircuitOpen, nothing sent; after the cool-down one probe closes it", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fail503(fake, 10)
          for (let i = 0; i < 10; i++) expect((yield* Effect.flip(get))._tag).toBe("ServerError")
          const refused = yield* Effect.flip(get)
          expect(refused).toMatchObject({ _tag: "CircuitOpen", operation: "medications", retryAfterMillis: 500 })
          expect(refused.message).toBe(
            "medications call refused: the service looks down (circuit open); it is probed again in 500 ms"
          )
          expect(yield* fake.dataRequests).toHaveLength(10)
          yield* TestClock.adjust("499 millis")
          expect(yield* Effect.flip(get)).toMatchObject({ _tag: "CircuitOpen", retryAfterMillis: 1 })
          yield* TestClock.adjust("1 millis")
          expect((yield* get).medications).toHaveLength(2)
          expect(outcomesOf(yield* calls(5))).toEqual(Array.from({ length: 5 }, () => "Right"))
          expect(yield* fake.dataRequests).toHaveLength(16)
        }),
      { maxRetries: 0 }
    ))

  it.effect("once it closes, the limit the outage brought down to 1 starts again in slow start: full speed in a few round trips", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fail503(fake, 10)
          for (let i = 0; i < 10; i++) yield* Effect.flip(get)
          expect((yield* Metric.value(Telemetry.concurrencyLimit)).value).toBe(1)
          yield* TestClock.adjust("500 millis")
          const service = fixedCapacity(fake, 1000, 20)
          yield* service.script(201)
          yield* Fake.runWithClock(get, "10 millis") // the probe: the circuit closes
          const started = yield* TestClock.currentTimeMillis
          const results = yield* Fake.runWithClock(calls(200), "10 millis")
          expect(outcomesOf(results).filter((tag) => tag !== "Right")).toEqual([])
          // 1, 1.5, 2.25, ... 64 at once (slow start, times 1.5 a round trip): all done in 240 ms (creeping
          // back up from 1 took 680 ms, 35 at most at once).
          expect(service.seen.peak).toBe(64)
          expect((yield* TestClock.currentTimeMillis) - started).toBeLessThanOrEqual(13 * 20)
        }),
      { maxRetries: 0 }
    ))

  it.effect("a failed probe opens it again for twice as long, up to the longest cool-down; calls wait for the probe", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fail503(fake, 13)
          for (let i = 0; i < 10; i++) yield* Effect.flip(get)
          const cooldowns: Array<number> = []
          for (let probe = 0; probe < 3; probe++) {
            const refused = yield* Effect.flip(get)
            expect(refused._tag).toBe("CircuitOpen")
            const wait = (refused as { readonly retryAfterMillis: number }).retryAfterMillis
            cooldowns.push(wait)
            yield* TestClock.adjust(wait)
            expect(yield* Effect.flip(get)).toMatchObject({ _tag: "ServerError", status: 503 })
          }
          expect(cooldowns).toEqual([500, 1000, 2000])
          expect(yield* Effect.flip(get)).toMatchObject({ _tag: "CircuitOpen", retryAfterMillis: 2000 })
          expect(yield* fake.dataRequests).toHaveLength(13)
        }),
      { maxRetries: 0 }
    ))

  it.effect("the network failing opens it too; 429s and 4xx do not (the service is up)", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(
            ...Array.from({ length: 6 }, () => Fake.respond(429, {})),
            ...Array.from({ length: 6 }, () => Fake.respond(400, {})),
            ...Array.from(
              { length: 10 },
              (): Fake.Responder => (request) =>
                Effect.fail(HttpTransport.transportError(request, "Network", "ECONNREFUSED"))
            )
          )
          for (let i = 0; i < 22; i++) expect((yield* Effect.flip(get))._tag).not.toBe("CircuitOpen")
          expect((yield* Effect.flip(get))._tag).toBe("CircuitOpen")
          expect(yield* fake.dataRequests).toHaveLength(22)
        }),
      { maxRetries: 0 }
    ))

  it.effect("a certificate or a proxy refused does not open it: every call says what was refused", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          const refused = (reason: "Tls" | "Proxy"): Fake.Responder => (request) =>
            Effect.fail(HttpTransport.transportError(request, reason, "refused", false))
          yield* fake.scriptData(
            ...Array.from({ length: 12 }, () => refused("Tls")),
            ...Array.from({ length: 12 }, () => refused("Proxy"))
          )
          const reasons: Array<string> = []
          for (let i = 0; i < 24; i++) {
            const error = yield* Effect.flip(get)
            reasons.push(error._tag === "TransportError" ? error.reason : error._tag)
          }
          expect(reasons).toEqual([
            ...Array.from({ length: 12 }, () => "Tls"),
            ...Array.from({ length: 12 }, () => "Proxy")
          ])
          expect(yield* fake.dataRequests).toHaveLength(24)
          expect((yield* get).medications).toHaveLength(2)
        }),
      { maxRetries: 0 }
    ))

  it.effect("an answer between failures starts the count again", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fail503(fake, 9)
          for (let i = 0; i < 9; i++) yield* Effect.flip(get)
          yield* get
          yield* fail503(fake, 9)
          for (let i = 0; i < 9; i++) expect((yield* Effect.flip(get))._tag).toBe("ServerError")
          yield* get
        }),
      { maxRetries: 0 }
    ))

  it.effect("a call's retry the open circuit refuses ends the call with CircuitOpen", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fail503(fake, 10)
          // Ten calls at once: each one's first attempt fails; their retries (after 750 ms) find it open.
          const results = yield* Fake.runWithClock(calls(10))
          expect(outcomesOf(results)).toEqual(Array.from({ length: 10 }, () => "CircuitOpen"))
          expect(yield* fake.dataRequests).toHaveLength(10)
        }),
      { adaptiveConcurrency: false, circuitBreakerCooldown: "5 seconds", circuitBreakerMaxCooldown: "5 seconds" }
    ))

  it.effect("retries that come after the cool-down: the first probes, its answer closes the circuit, the others go", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fail503(fake, 10)
          const results = yield* Fake.runWithClock(calls(10))
          expect(outcomesOf(results)).toEqual(Array.from({ length: 10 }, () => "Right"))
          expect(yield* fake.dataRequests).toHaveLength(20)
        }),
      { adaptiveConcurrency: false }
    ))

  it.effect("a probe whose call is interrupted is given up: the next call probes at once", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fail503(fake, 10)
          for (let i = 0; i < 10; i++) yield* Effect.flip(get)
          yield* fake.scriptData(() => Effect.never)
          yield* TestClock.adjust("500 millis")
          const probe = yield* Effect.fork(get)
          while ((yield* fake.dataRequests).length < 11) yield* Effect.yieldNow()
          expect(yield* Effect.flip(get)).toMatchObject({ _tag: "CircuitOpen" })
          yield* Fiber.interrupt(probe)
          expect((yield* get).medications).toHaveLength(2)
          expect(yield* fake.dataRequests).toHaveLength(12)
        }),
      { maxRetries: 0 }
    ))

  it.effect("threshold 0 turns it off: every call is sent", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fail503(fake, 30)
          for (let i = 0; i < 30; i++) expect((yield* Effect.flip(get))._tag).toBe("ServerError")
          expect(yield* fake.dataRequests).toHaveLength(30)
        }),
      { maxRetries: 0, circuitBreakerThreshold: 0 }
    ))

  it.effect("a probe whose token cannot be had is a failed probe: the breaker does not stay half-open", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fail503(fake, 10)
          for (let i = 0; i < 10; i++) yield* Effect.flip(get)
          // Past the token's lifetime: the probe must fetch a token, and the token endpoint is down.
          yield* fake.scriptToken(...Fake.answering(503, 20))
          yield* TestClock.adjust("2 seconds")
          expect(yield* Fake.runWithClock(Effect.flip(get))).toMatchObject({ _tag: "ServerError", operation: "token" })
          // Open again, for the doubled cool-down from the probe's failure (the clock moved on since).
          const refused = yield* Effect.flip(get)
          expect(refused._tag).toBe("CircuitOpen")
          const wait = (refused as { readonly retryAfterMillis: number }).retryAfterMillis
          expect(wait).toBeGreaterThan(500)
          expect(wait).toBeLessThanOrEqual(1000)
          expect((yield* fake.tokenRequests).map((r) => r.at)).toEqual([0, 2000])
          expect(yield* fake.dataRequests).toHaveLength(10)
        }),
      { maxRetries: 0 },
      { lifetimeMillis: 2000 }
    ))
})
