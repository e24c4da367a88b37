/**
 * The retry policy, the deadline, the concurrency bound, the body limit and the token endpoint's
 * throttle memory, each driven by TestClock with a fixed jitter, so waits are exact.
 */
import { describe, expect, it } from "@effect/vitest"
import { Deferred, Effect, Exit, Fiber, Metric, MetricLabel, Random, TestClock, Tracer } from "effect"
import { type ClinicalClient, ClinicalError, HttpTransport, MedicationService, PersonData } from "effect-clinical"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as CapturingTracer from "./support/CapturingTracer.js"
import * as Fake from "./support/FakeService.js"

const middleJitter = Fake.middleJitter

const withClient = <A, E>(
  body: (fake: Fake.FakeService) => Effect.Effect<A, E, ClinicalClient.Services>,
  overrides: Parameters<typeof Fake.clientLayer>[1] = {}
) => middleJitter(Fake.withClient(body, overrides))

const get = MedicationService.get(Fake.PERSON_UID)
/** Where every medication request goes: errors show it. */
const medicationsUrl = { method: "POST", url: `${Fake.BASE_URL}${Fake.MEDICATION_PATH}` }
const times = (requests: ReadonlyArray<Fake.Recorded>) => requests.map((r) => r.at)
const counter = (metric: Metric.Metric.Counter<number>) => Effect.map(Metric.value(metric), (state) => state.count)

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

describe("spans", () => {
  it.effect("PersonData.medications (the span of MedicationService.get) and TokenService.refresh carry attempts, status and reason", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        const { spans, tracer } = yield* CapturingTracer.make
        yield* fake.scriptData(Fake.respond(503, {}))
        yield* Fake.runWithClock(get).pipe(Effect.withTracer(tracer))
        const byName = (name: string) => spans.find((span) => span.name === name)!
        expect(byName("PersonData.medications").kind).toBe("internal")
        expect(Object.fromEntries(byName("PersonData.medications").attributes)).toMatchObject({
          "clinical.operation": "medications",
          "clinical.attempts": 2,
          "http.response.status_code": 200
        })
        expect(Object.fromEntries(byName("TokenService.refresh").attributes)).toMatchObject({
          "clinical.refresh.reason": "empty",
          "clinical.token.generation": 1,
          "clinical.server_clock_skew_ms": 0,
          "clinical.token.source": "server",
          "http.response.status_code": 200
        })
      })
    ))

  it.effect("one CLIENT span per HTTP attempt, as OpenTelemetry's HTTP client conventions name it", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        const { spans, tracer } = yield* CapturingTracer.make
        yield* fake.scriptData(Fake.respond(503, {}))
        yield* Fake.runWithClock(get).pipe(Effect.withTracer(tracer))
        const call = spans.find((span) => span.name === "PersonData.medications")!
        const refresh = spans.find((span) => span.name === "TokenService.refresh")!
        const attempts = spans.filter((span) => span.kind === "client")
        expect(attempts.map((span) => span.name)).toEqual(["POST", "POST", "POST"])
        const [token, first, second] = attempts.map((span) => ({
          parent: span.parent._tag === "Some" ? span.parent.value : undefined,
          attributes: Object.fromEntries(span.attributes),
          ended: span.status._tag === "Ended"
        }))
        expect(token).toEqual({
          parent: refresh,
          attributes: {
            "http.request.method": "POST",
            "server.address": "openapiauthtest.intelichart.com",
            "server.port": 443,
            "url.full": `${Fake.AUTH_URL}${Fake.TOKEN_PATH}`,
            "http.response.status_code": 200
          },
          ended: true
        })
        const data = {
          "http.request.method": "POST",
          "server.address": "openapitest.intelichart.com",
          "server.port": 443,
          "url.full": `${Fake.BASE_URL}${Fake.MEDICATION_PATH}`
        }
        expect(first).toEqual({
          parent: call,
          attributes: { ...data, "http.response.status_code": 503, "error.type": "503" },
          ended: true
        })
        expect(second).toEqual({
          parent: call,
          attributes: { ...data, "http.request.resend_count": 1, "http.response.status_code": 200 },
          ended: true
        })
      })
    ))

  it.effect("a transport failure's attempt span says why, and the duration histogram counts every attempt", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        const { spans, tracer } = yield* CapturingTracer.make
        const duration = (status: number | undefined, error: string | undefined) =>
          Metric.taggedWithLabels(Telemetry.httpClientRequestDuration, [
            MetricLabel.make("http.request.method", "POST"),
            MetricLabel.make("server.address", "openapitest.intelichart.com"),
            MetricLabel.make("server.port", "443"),
            ...(status === undefined ? [] : [MetricLabel.make("http.response.status_code", String(status))]),
            ...(error === undefined ? [] : [MetricLabel.make("error.type", error)])
          ])
        const before = (yield* Metric.value(duration(undefined, "Network"))).count
        const okBefore = (yield* Metric.value(duration(200, undefined))).count
        yield* fake.scriptData((request) => Effect.fail(HttpTransport.transportError(request, "Network", "ECONNRESET")))
        yield* Fake.runWithClock(get).pipe(Effect.withTracer(tracer))
        const failed = spans.find((span) => span.kind === "client" && span.attributes.get("error.type") === "Network")!
        expect(failed.attributes.get("http.response.status_code")).toBeUndefined()
        expect((yield* Metric.value(duration(undefined, "Network"))).count - before).toBe(1)
        expect((yield* Metric.value(duration(200, undefined))).count - okBefore).toBe(1)
      })
    ))

  it.effect("with no tracer installed a call makes no span (nothing could see one), and still records its metrics", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        // What a transport sees as the current span: the call's, when spans are made.
        const seen: Array<string> = []
        const answer = HttpTransport.jsonResponse(200, { Medications: [], Success: true })
        const looking: Fake.Responder = () =>
          Effect.map(Effect.option(Effect.currentSpan), (span) => {
            seen.push(span._tag === "Some" ? `${span.value.name} under ${span.value.parent._tag}` : "none")
            return answer
          })
        const duration = Metric.taggedWithLabels(Telemetry.httpClientRequestDuration, [
          MetricLabel.make("http.request.method", "POST"),
          MetricLabel.make("server.address", "openapitest.intelichart.com"),
          MetricLabel.make("server.port", "443"),
          MetricLabel.make("http.response.status_code", "200")
        ])
        const before = (yield* Metric.value(duration)).count
        yield* fake.scriptData(looking, looking)
        // Effect's default tracer: spans made there go nowhere, so the call makes none.
        yield* Fake.runWithClock(get)
        const { spans, tracer } = yield* CapturingTracer.make
        yield* Fake.runWithClock(get).pipe(Effect.withTracer(tracer))
        expect(seen).toEqual(["none", "PersonData.medications under None"])
        expect(spans.filter((span) => span.kind === "client").map((span) => span.name)).toEqual(["POST"])
        expect((yield* Metric.value(duration)).count - before).toBe(2)
      })
    ))

  it.effect("an attempt answered 400 ends its span failed, with error.type 400; a 200 ends it OK (issue 24's audit)", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        const { spans, tracer } = yield* CapturingTracer.make
        yield* fake.scriptData(Fake.respond(400, { Success: false, ErrorType: "Bad", ErrorMessage: "no" }))
        yield* Effect.exit(Fake.runWithClock(get).pipe(Effect.withTracer(tracer)))
        yield* Fake.runWithClock(get).pipe(Effect.withTracer(tracer))
        const attempts = spans.filter((span) =>
          span.kind === "client" && span.attributes.get("server.address") ===
            "openapitest.intelichart.com"
        )
        const outcome = (span: Tracer.Span) =>
          span.status._tag === "Ended" ? (Exit.isSuccess(span.status.exit) ? "ok" : "failed") : "running"
        expect(attempts.map((span) => [span.attributes.get("error.type"), outcome(span)])).toEqual([
          ["400", "failed"],
          [undefined, "ok"]
        ])
      })
    ))

  it.effect("the duration histogram records seconds, as the conventions name it (issue 24's audit)", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        const duration = Metric.taggedWithLabels(Telemetry.httpClientRequestDuration, [
          MetricLabel.make("http.request.method", "POST"),
          MetricLabel.make("server.address", "openapitest.intelichart.com"),
          MetricLabel.make("server.port", "443"),
          MetricLabel.make("http.response.status_code", "200")
        ])
        const before = yield* Metric.value(duration)
        // An answer 60 ms in coming, on the real clock.
        yield* fake.scriptData(() =>
          Effect.zipRight(
            Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 60))),
            Effect.succeed(HttpTransport.jsonResponse(200, { Medications: [], Success: true }))
          )
        )
        yield* Fake.runWithClock(get)
        const after = yield* Metric.value(duration)
        expect(after.count - before.count).toBe(1)
        // At least 0.06 s; in milliseconds it would be 60 or more.
        expect(after.sum - before.sum).toBeGreaterThanOrEqual(0.055)
        expect(after.sum - before.sum).toBeLessThan(30)
      })
    ))

  it.effect("traceparent carries the span's sampled flag: 00 for a span not sampled (issue 24's audit)", () =>
    Effect.gen(function*() {
      const { tracer } = yield* CapturingTracer.make
      const unsampled = Tracer.make({
        span: (...args) => Object.defineProperty(tracer.span(...args), "sampled", { value: false }),
        context: tracer.context
      })
      const fake = yield* Fake.make()
      yield* MedicationService.get(Fake.PERSON_UID).pipe(
        Effect.provide(Fake.clientLayer(fake, { tracePropagation: true })),
        Effect.withTracer(unsampled)
      )
      const sent = (yield* fake.requests).map((request) => request.headers["traceparent"])
      expect(sent).toHaveLength(2)
      for (const header of sent) expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-00$/)
    }))

  it.effect("with no tracer installed, tracePropagation still sends a traceparent of its own ids", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      yield* MedicationService.get(Fake.PERSON_UID).pipe(
        Effect.provide(Fake.clientLayer(fake, { tracePropagation: true }))
      )
      const sent = (yield* fake.requests).map((request) => request.headers["traceparent"])
      expect(sent).toHaveLength(2)
      for (const header of sent) expect(header).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/)
    }))

  it.effect("no traceparent is sent unless tracePropagation asks for it; then it is the attempt span's", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* CapturingTracer.make
      for (const tracePropagation of [false, true]) {
        const fake = yield* Fake.make()
        yield* MedicationService.get(Fake.PERSON_UID).pipe(
          Effect.provide(Fake.clientLayer(fake, { tracePropagation })),
          Effect.withTracer(tracer)
        )
        const sent = (yield* fake.requests).map((request) => request.headers["traceparent"])
        if (!tracePropagation) {
          expect(sent).toEqual([undefined, undefined])
          continue
        }
        const attempts = spans.filter((span) => span.kind === "client").slice(-2)
        expect(sent).toEqual(attempts.map((span) => `00-${span.traceId}-${span.spanId}-01`))
      }
    }))
})
