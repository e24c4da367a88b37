/**
 * The load control through real calls (issue 25): the adaptive concurrency limit, the circuit
 * breaker and the retry budget, against a fake service under TestClock with a fixed jitter, so that
 * every count is exact. Their decisions alone are tested in ConcurrencyLimit and LoadControl.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, type Duration, Effect, Fiber, Layer, Metric, Redacted, Stream, TestClock } from "effect"
import { ClinicalClient, HttpTransport, MedicationService, type PersonData, TokenService } from "effect-clinical"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as Fake from "./support/FakeService.js"
import * as Hostile from "./support/HostileServer.js"

const withClient = <A, E>(
  body: (fake: Fake.FakeService) => Effect.Effect<A, E, ClinicalClient.Services>,
  overrides: Parameters<typeof Fake.clientLayer>[1] = {},
  fakeOptions: Fake.FakeServiceOptions = {}
) => Fake.middleJitter(Fake.withClient(body, overrides, fakeOptions))

const get = MedicationService.get(Fake.PERSON_UID)

/**
 * A service that takes `capacity` requests at once, each answered after `millis` (test clock);
 * one more is answered 429 at once. Counts what it saw.
 */
const fixedCapacity = (fake: Fake.FakeService, capacity: number, millis: number) => {
  const seen = { inFlight: 0, peak: 0, answered: 0, throttled: 0 }
  const responder: Fake.Responder = () =>
    Effect.suspend(() => {
      if (seen.inFlight >= capacity) {
        seen.throttled++
        return Effect.succeed(HttpTransport.jsonResponse(429, {}))
      }
      seen.inFlight++
      seen.peak = Math.max(seen.peak, seen.inFlight)
      return Effect.sleep(millis).pipe(
        Effect.as(Fake.MEDICATIONS_ANSWER),
        Effect.ensuring(Effect.sync(() => {
          seen.inFlight--
          seen.answered++
        }))
      )
    })
  return { seen, script: (count: number) => fake.scriptData(...Array.from({ length: count }, () => responder)) }
}

const calls = (count: number) =>
  Effect.all(Array.from({ length: count }, () => Effect.either(get)), {
    concurrency: "unbounded"
  })

/** Each call's outcome: the error's tag, or "Right". */
const outcomesOf = Fake.outcomeTags

/** The next `count` data requests answered 503. */
const fail503 = (fake: Fake.FakeService, count: number) => fake.scriptData(...Fake.answering(503, count))

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

describe("a batch while the circuit is open", () => {
  const batchOf = (count: number, options: PersonData.ManyOptions = {}) =>
    Effect.map(
      Stream.runCollect(
        MedicationService.getMany(Array.from({ length: count }, () => Fake.PERSON_UID), { concurrency: 1, ...options })
      ),
      (entries) =>
        Chunk.toArray(entries).sort((a, b) => a.index - b.index).map(({ outcome }) =>
          outcome._tag === "Failure" ? outcome.error._tag : outcome._tag
        )
    )

  it.effect("pauses: the persons refused wait for the probe and succeed once the service is back", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(...Fake.answering(503, 10))
          const outcomes = yield* Fake.runWithClock(batchOf(15))
          expect(outcomes).toEqual([
            ...Array.from({ length: 10 }, () => "ServerError"),
            ...Array.from({ length: 5 }, () => "Success")
          ])
          expect((yield* fake.dataRequests).map((r) => r.at)).toEqual([
            ...Array.from({ length: 10 }, () => 0),
            ...Array.from({ length: 5 }, () => 500)
          ])
        }),
      { maxRetries: 0 }
    ))

  it.effect("many persons waiting for the probe go as soon as it closes the circuit, not a cool-down later", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(...Fake.answering(503, 10))
          const service = fixedCapacity(fake, 1000, 20)
          yield* service.script(40)
          const outcomes = yield* Fake.runWithClock(batchOf(50, { concurrency: 16 }), "10 millis")
          expect(outcomes.filter((tag) => tag === "Success")).toHaveLength(40)
          const sent = (yield* fake.dataRequests).map((r) => r.at).slice(10)
          // The probe at 500 ms, answered at 520; those refused meanwhile ask again 100 ms after their
          // refusal and go at 600 (before, they waited the cool-down, 500 ms: at 1000).
          expect(sent[0]).toBe(500)
          expect(Math.max(...sent)).toBeLessThanOrEqual(700)
        }),
      { maxRetries: 0 }
    ))

  it.effect("stops once the service stays down longer than its patience: the person refused fails, the rest are skipped", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(...Fake.answering(503, 30))
          const outcomes = yield* Fake.runWithClock(batchOf(20, { outagePatience: "1 second" }))
          // Probes at 500 ms and 1.5 s fail; the next would come after 3.5 s, past the patience.
          expect(outcomes).toEqual([
            ...Array.from({ length: 12 }, () => "ServerError"),
            "CircuitOpen",
            ...Array.from({ length: 7 }, () => "Skipped")
          ])
          expect(yield* fake.dataRequests).toHaveLength(12)
        }),
      { maxRetries: 0 }
    ))

  it.effect("with no patience, the first refusal stops it", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(...Fake.answering(503, 10))
          const outcomes = yield* batchOf(12, { outagePatience: 0 })
          expect(outcomes.slice(10)).toEqual(["CircuitOpen", "Skipped"])
        }),
      { maxRetries: 0 }
    ))

  it.effect("a person whose call failed with a transient error is sent once more, as a new call with its own retries", () =>
    withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fail503(fake, 3)
          expect(yield* Fake.runWithClock(batchOf(1))).toEqual(["Success"])
          expect(yield* fake.dataRequests).toHaveLength(4)
          yield* fail503(fake, 4)
          expect(yield* Fake.runWithClock(batchOf(1))).toEqual(["ServerError"])
          expect(yield* fake.dataRequests).toHaveLength(8)
        }),
      { maxRetries: 1 }
    ))

  it.effect("a patience that is no duration is refused before anything is sent", () =>
    withClient((fake) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(batchOf(3, { outagePatience: "soon" as Duration.DurationInput }))
        expect(error).toMatchObject({ _tag: "InvalidRequest", field: "outagePatience" })
        expect(yield* fake.requests).toEqual([])
      })
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
