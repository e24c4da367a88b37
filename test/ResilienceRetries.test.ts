/**
 * The retry policy and Retry-After, driven by TestClock with a fixed jitter so waits are exact: which
 * causes are retried and how long each wait is, Retry-After honoured and capped at maxRetryAfter, and
 * the token endpoint's throttle memory.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Metric, Random, TestClock } from "effect"
import { ClinicalError, HttpTransport, PersonData } from "effect-clinical"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as Fake from "./support/FakeService.js"
import { counter, get, medicationsUrl, middleJitter, times, withClient } from "./support/resilienceFixtures.js"

describe("retries", () => {
  it.effect("503, 503, 503, then 200: four attempts, waits of 750 ms, 1.5 s and 3 s", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        const retries503 = Metric.tagged(Metric.tagged(Telemetry.retries, "operation", "medications"), "cause", "503")
        const before = yield* counter(retries503)
        yield* fake.scriptData(Fake.respond(503, {}), Fake.respond(503, {}), Fake.respond(503, {}))
        const result = yield* Fake.runWithClock(get)
        expect(result.medications).toHaveLength(2)
        expect(times(yield* fake.dataRequests)).toEqual([0, 750, 2250, 5250])
        expect((yield* counter(retries503)) - before).toBe(3)
      })
    ))

  it.effect("every retried cause: network, timeout, 429, 500, 502, 503, 504", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(
            (request) => Effect.fail(HttpTransport.transportError(request, "Network", "ECONNRESET")),
            () => Effect.never, // outlives the 1 s requestTimeout
            Fake.respond(429, {}),
            Fake.respond(500, {}),
            Fake.respond(502, {}),
            Fake.respond(503, {}),
            Fake.respond(504, {})
          )
          const result = yield* Fake.runWithClock(get)
          expect(result.medications).toHaveLength(2)
          expect(yield* fake.dataRequests).toHaveLength(8)
        }),
      { maxRetries: 7, requestTimeout: "1 second", retryMaxDelay: "1 second" }
    ))

  it.effect("after maxRetries the last error is the answer: four attempts by default", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(...Array.from({ length: 5 }, () => Fake.respond(502, {})))
        const error = yield* Fake.runWithClock(Effect.flip(get))
        expect(error).toMatchObject({ _tag: "ServerError", status: 502 })
        expect(times(yield* fake.dataRequests)).toEqual([0, 750, 2250, 5250])
      })
    ))

  it.effect("maxRetries 0 turns retries off", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(Fake.respond(503, {}))
          expect((yield* Effect.flip(get))._tag).toBe("ServerError")
          expect(yield* fake.dataRequests).toHaveLength(1)
        }),
      { maxRetries: 0 }
    ))

  const final: ReadonlyArray<readonly [string, Fake.Responder, string]> = [
    ["400", Fake.respond(400, {}), "BadRequest"],
    ["404", Fake.respond(404, {}), "UnexpectedStatus"],
    ["501", Fake.respond(501, {}), "ServerError"],
    ["Success: false", Fake.respond(503, { Success: false, ErrorType: "X", ErrorMessage: "y" }), "ApiError"],
    [
      "a body that is not JSON",
      () => Effect.succeed({ status: 200, headers: {}, body: "<html>" }),
      "ResponseDecodeError"
    ]
  ]
  for (const [name, responder, tag] of final) {
    it.effect(`${name} is not retried (${tag})`, () =>
      withClient((fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(responder)
          expect((yield* Effect.flip(get))._tag).toBe(tag)
          expect(yield* fake.dataRequests).toHaveLength(1)
        })
      ))
  }

  it.effect("the backoff is capped by retryMaxDelay", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(...Array.from({ length: 4 }, () => Fake.respond(500, {})))
          yield* Fake.runWithClock(get)
          // steps 1, 2, 4, 8 s capped at 2 s, then 3/4 of each: 750, 1500, 1500, 1500
          expect(times(yield* fake.dataRequests)).toEqual([0, 750, 2250, 3750, 5250])
        }),
      { maxRetries: 4, retryMaxDelay: "2 seconds" }
    ))

  it.effect("jitter spreads the waits between half and all of each step", () =>
    Effect.gen(function*() {
      for (const [random, expected] of [[0, [0, 500, 1500]], [0.999, [0, 1000, 2999]]] as const) {
        const fake = yield* Fake.make()
        yield* fake.scriptData(Fake.respond(503, {}), Fake.respond(503, {}))
        yield* Fake.runWithClock(get).pipe(
          Effect.provide(Fake.clientLayer(fake)),
          Effect.withRandom(Random.fixed([random]))
        )
        const at = times(yield* fake.dataRequests)
        expect(at.map((t) => t - at[0]!)).toEqual(expected)
      }
    }))

  it.effect("a 401 refresh does not count as a retry, and a retry after it carries the new token", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(Fake.respond(401, {}), Fake.respond(503, {}))
        yield* Fake.runWithClock(get)
        const data = yield* fake.dataRequests
        expect(times(data)).toEqual([0, 0, 750])
        expect(data.map((r) => r.headers.Authorization)).toEqual([
          `Bearer ${Fake.tokenValue(1)}`,
          `Bearer ${Fake.tokenValue(2)}`,
          `Bearer ${Fake.tokenValue(2)}`
        ])
        expect(yield* fake.tokenRequests).toHaveLength(2)
      })
    ))

  it.effect("a token endpoint failure is retried by the call, then the data request is sent", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptToken(Fake.respond(500, {}))
        yield* Fake.runWithClock(get)
        expect(times(yield* fake.tokenRequests)).toEqual([0, 750])
        expect(times(yield* fake.dataRequests)).toEqual([750])
      })
    ))

  for (const retryWrites of [false, true]) {
    it.effect(`an operation that writes is ${retryWrites ? "retried with" : "not retried without"} retryWrites`, () =>
      Effect.gen(function*() {
        const fake = yield* Fake.make()
        yield* fake.scriptData(Fake.respond(503, {}))
        const writing = PersonData.operation({
          name: "medicationsWrite",
          path: Fake.MEDICATION_PATH,
          collection: "Medications",
          writes: true
        })
        const outcome = yield* Effect.either(Fake.runWithClock(PersonData.get(writing, Fake.PERSON_UID))).pipe(
          Effect.provide(Fake.clientLayer(fake, { retryWrites })),
          middleJitter
        )
        expect(outcome._tag).toBe(retryWrites ? "Right" : "Left")
        expect(yield* fake.dataRequests).toHaveLength(retryWrites ? 2 : 1)
      }))
  }
})

describe("Retry-After", () => {
  it.effect("retryRateLimited false: a 429 ends the call at once, its Retry-After kept, one request sent", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      yield* fake.scriptData(Fake.respond(429, {}, { "Retry-After": "2" }))
      const outcome = yield* Effect.flip(Fake.runWithClock(get)).pipe(
        Effect.provide(Fake.clientLayer(fake, { retryRateLimited: false })),
        middleJitter
      )
      expect(outcome).toMatchObject({ _tag: "RateLimited", status: 429, retryAfterMillis: 2_000 })
      expect(yield* fake.dataRequests).toHaveLength(1)
    }))

  it.effect("delta-seconds: the next attempt waits at least that long", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(Fake.respond(429, {}, { "Retry-After": "5" }))
        yield* Fake.runWithClock(get)
        expect(times(yield* fake.dataRequests)).toEqual([0, 5000])
      })
    ))

  it.effect("an HTTP date: the next attempt waits until then", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.UTC(2026, 10, 22, 8))
        yield* fake.scriptData(Fake.respond(503, {}, { "Retry-After": "Sun, 22 Nov 2026 08:00:07 GMT" }))
        yield* Fake.runWithClock(get)
        expect(times(yield* fake.dataRequests).map((t) => t - Date.UTC(2026, 10, 22, 8))).toEqual([0, 7000])
      })
    ))

  it.effect("a Retry-After shorter than the backoff does not shorten it", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(Fake.respond(429, {}, { "Retry-After": "0" }))
        yield* Fake.runWithClock(get)
        expect(times(yield* fake.dataRequests)).toEqual([0, 750])
      })
    ))

  for (const [status, tag] of [[429, "RateLimited"], [503, "ServerError"]] as const) {
    it.effect(`a ${status} Retry-After past the deadline fails at once with ${tag} carrying it`, () =>
      withClient((fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(Fake.respond(status, {}, { "Retry-After": "120" }))
          const error = yield* Effect.flip(get) // no clock movement needed: nothing waits
          expect(error).toEqual(
            status === 429
              ? new ClinicalError.RateLimited({
                operation: "medications",
                ...medicationsUrl,
                status,
                retryAfterMillis: 120_000
              })
              : new ClinicalError.ServerError({
                operation: "medications",
                ...medicationsUrl,
                status,
                retryAfterMillis: 120_000
              })
          )
          expect(yield* fake.dataRequests).toHaveLength(1)
        }), { maxRetryAfter: "1 hour" }))
  }
})

describe("token endpoint throttle memory", () => {
  it.effect("after a 429 with Retry-After, token requests fail fast until it has passed", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptToken(Fake.respond(429, {}, { "Retry-After": "10" }))
          expect(yield* Effect.flip(get)).toMatchObject({
            _tag: "RateLimited",
            operation: "token",
            retryAfterMillis: 10_000
          })
          yield* TestClock.adjust("4 seconds")
          const fastFails = yield* Effect.all(Array.from({ length: 20 }, () => Effect.flip(get)), { concurrency: 5 })
          for (const error of fastFails) {
            expect(error).toMatchObject({ _tag: "RateLimited", operation: "token", retryAfterMillis: 6_000 })
          }
          expect(yield* fake.tokenRequests).toHaveLength(1)
          yield* TestClock.adjust("6 seconds")
          expect((yield* get).medications).toHaveLength(2)
          expect(yield* fake.tokenRequests).toHaveLength(2)
        }),
      { maxRetries: 0 }
    ))

  it.effect("with retries on, the call waits out the token endpoint's Retry-After and succeeds", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptToken(Fake.respond(503, {}, { "Retry-After": "2" }))
        const result = yield* Fake.runWithClock(get)
        expect(result.medications).toHaveLength(2)
        expect(times(yield* fake.tokenRequests)).toEqual([0, 2000])
      })
    ))

  it.effect("concurrent callers during the pause send no token request", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptToken(Fake.respond(429, {}, { "Retry-After": "3" }))
        const results = yield* Fake.runWithClock(
          Effect.all(Array.from({ length: 50 }, () => get), { concurrency: "unbounded" })
        )
        expect(results).toHaveLength(50)
        expect(yield* fake.tokenRequests).toHaveLength(2)
      })
    ))
})

describe("an absurd Retry-After is capped at maxRetryAfter", () => {
  it.effect("a token endpoint's Retry-After of 99999999 s pauses token requests for 60 s by default", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptToken(Fake.respond(429, {}, { "Retry-After": "99999999" }))
          expect(yield* Effect.flip(get)).toMatchObject({ _tag: "RateLimited", retryAfterMillis: 60_000 })
          yield* TestClock.adjust("59999 millis")
          expect(yield* Effect.flip(get)).toMatchObject({ _tag: "RateLimited", retryAfterMillis: 1 })
          expect(yield* fake.tokenRequests).toHaveLength(1)
          yield* TestClock.adjust("1 millis")
          expect((yield* get).medications).toHaveLength(2)
          expect(yield* fake.tokenRequests).toHaveLength(2)
        }),
      { maxRetries: 0 }
    ))

  it.effect("an HTTP-date Retry-After years ahead is capped as well", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptToken(Fake.respond(503, {}, { "Retry-After": "Fri, 31 Dec 9999 23:59:59 GMT" }))
          expect(yield* Effect.flip(get)).toMatchObject({ _tag: "ServerError", retryAfterMillis: 60_000 })
        }),
      { maxRetries: 0 }
    ))

  it.effect("a single wait before a retry is capped too, and then the retry is made", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(Fake.respond(503, {}, { "Retry-After": "99999999" }))
          const result = yield* Fake.runWithClock(get, "1 second")
          expect(result.medications).toHaveLength(2)
          expect(times(yield* fake.dataRequests)).toEqual([0, 5_000])
        }),
      { maxRetryAfter: "5 seconds" }
    ))
})
