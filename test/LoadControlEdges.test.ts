/**
 * The load control's edges, found by an independent review of its wiring (issue 25): calls that
 * waited for a turn while the circuit opened, probes that learn nothing of the data service, a
 * batch's patience against a service that hangs, deadlines spent waiting for a turn, and what the
 * Promise entry and the gauge show. Each test failed on the wiring's first commit.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Clock, type Duration, Effect, Layer, Metric, Stream, TestClock } from "effect"
import { ClinicalClient, ClinicalError, HttpTransport, MedicationService } from "effect-clinical"
import * as ClinicalPromise from "effect-clinical/promise"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as Fake from "./support/FakeService.js"
import * as Hostile from "./support/HostileServer.js"

const get = MedicationService.get(Fake.PERSON_UID)
const tagsOf = Fake.outcomeTags

// First in the file: the gauge is the process's.
describe("the concurrency-limit gauge", () => {
  it.effect("shows the limit a new client starts with, before it first moves", () =>
    Fake.withClient(() =>
      Effect.gen(function*() {
        yield* get
        expect((yield* Metric.value(Telemetry.concurrencyLimit)).value).toBe(4)
      })
    ))
})

describe("effect-clinical/promise", () => {
  it("exports every error class the library has, CircuitOpen included", () => {
    const classes = Object.entries(ClinicalError).filter(([, value]) =>
      typeof value === "function" && value.prototype instanceof Error
    )
    expect(classes.map(([name]) => name)).toContain("CircuitOpen")
    for (const [name, value] of classes) expect((ClinicalPromise as Record<string, unknown>)[name], name).toBe(value)
  })
})

describe("calls waiting for a turn when the circuit opens", () => {
  it.effect("are refused, not sent (Effect path, default settings: 4 at once, the rest waiting)", () =>
    Fake.middleJitter(Fake.withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(...Fake.answering(503, 40))
          const results = yield* Effect.all(Array.from({ length: 40 }, () => Effect.either(get)), {
            concurrency: "unbounded"
          })
          // Threshold 10: the 11th request and later do not reach a service that looks down.
          expect((yield* fake.dataRequests).length).toBeLessThanOrEqual(10)
          expect(tagsOf(results).filter((tag) => tag === "CircuitOpen").length).toBeGreaterThanOrEqual(30)
        }),
      { maxRetries: 0 }
    )))

  it.scopedLive("are refused, not sent (common path, undici's dispatch)", () =>
    Effect.gen(function*() {
      const server = yield* Hostile.serve((received, res) => {
        if (Hostile.isToken(received)) {
          return Hostile.answerToken(res, { body: { Token: "token-1", TokenType: "Bearer" } })
        }
        setTimeout(() => Hostile.json(res, 503, {}), 5)
      })
      const results = yield* Effect.all(Array.from({ length: 40 }, () => Effect.either(get)), {
        concurrency: "unbounded"
      }).pipe(
        Effect.provide(
          ClinicalClient.layer({
            baseUrl: server.url,
            applicationId: Hostile.APPLICATION_ID,
            maxConcurrentRequests: 2,
            adaptiveConcurrency: false,
            maxRetries: 0
          }).pipe(Layer.provide(HttpTransport.layerUndici()))
        )
      )
      // Threshold 10, and the 2 in flight when it opens.
      expect(Hostile.dataRequests(server).length).toBeLessThanOrEqual(12)
      expect(tagsOf(results).filter((tag) => tag === "CircuitOpen").length).toBeGreaterThanOrEqual(28)
    }))
})

describe("a probe that learns nothing of the data service", () => {
  it.effect("whose token endpoint answers 429 does not close the circuit", () =>
    Fake.middleJitter(Fake.withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(...Fake.answering(503, 20))
          for (let i = 0; i < 10; i++) yield* Effect.flip(get)
          expect((yield* Effect.flip(get))._tag).toBe("CircuitOpen")
          // The token has expired: the probe must fetch one, and the token endpoint throttles.
          yield* fake.scriptToken(Fake.respond(429, {}))
          yield* TestClock.adjust("2 seconds")
          expect((yield* Effect.flip(get))._tag).toBe("RateLimited")
          expect((yield* Effect.flip(get))._tag).toBe("CircuitOpen")
          expect(yield* fake.dataRequests).toHaveLength(10)
        }),
      { maxRetries: 0 },
      { lifetimeMillis: 2000 }
    )))
})

describe("a batch", () => {
  it.effect(
    "waits for a service that hangs no longer than its outagePatience (plus one call)",
    () =>
      Fake.middleJitter(Fake.withClient(
        (fake) =>
          Effect.gen(function*() {
            yield* fake.scriptData(
              ...Fake.answering(503, 10),
              ...Array.from({ length: 1000 }, (): Fake.Responder => () => Effect.never)
            )
            const entries = yield* Fake.runWithClock(
              Stream.runCollect(
                MedicationService.getMany(Array.from({ length: 12 }, () => Fake.PERSON_UID), {
                  concurrency: 1,
                  outagePatience: "1 minute"
                })
              ),
              "1 second",
              100_000
            )
            expect(Chunk.toArray(entries).at(-1)?.outcome._tag).toBe("Skipped")
            // Counted on the sleeps alone, it ran 26 minutes for a patience of one.
            expect(yield* Clock.currentTimeMillis).toBeLessThanOrEqual(60_000 + 60_000 + 10_000)
          }),
        { maxRetries: 1 }
      )),
    60_000
  )

  it.effect(
    "against a slow service that takes 4 at once is not stopped by deadlines spent waiting for a turn",
    () =>
      Fake.middleJitter(Fake.withClient(
        (fake) =>
          Effect.gen(function*() {
            let inFlight = 0
            const responder: Fake.Responder = () =>
              Effect.suspend(() => {
                if (inFlight >= 4) return Effect.succeed(HttpTransport.jsonResponse(429, {}))
                inFlight++
                return Effect.sleep("5 seconds").pipe(
                  Effect.as(Fake.MEDICATIONS_ANSWER),
                  Effect.ensuring(Effect.sync(() => inFlight--))
                )
              })
            yield* fake.scriptData(...Array.from({ length: 2000 }, () => responder))
            const entries = yield* Fake.runWithClock(
              Stream.runCollect(MedicationService.getMany(Array.from({ length: 200 }, () => Fake.PERSON_UID))),
              "500 millis",
              100_000
            )
            // Before: 71 succeeded, 39 TransportError (Deadline), 90 skipped as TransportFailures.
            const stops = Chunk.toArray(entries).flatMap(({ outcome }) =>
              outcome._tag === "Skipped" ? [outcome.stop.reason] : []
            )
            expect(stops).toEqual([])
          }),
        {}
      )),
    60_000
  )

  it.effect("refuses a negative or NaN patience rather than reading it as none", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        for (const outagePatience of [-5, Number.NaN, "-5 seconds" as Duration.DurationInput]) {
          const error = yield* Effect.flip(
            Stream.runCollect(MedicationService.getMany([Fake.PERSON_UID], { outagePatience }))
          )
          expect(error).toMatchObject({ _tag: "InvalidRequest", field: "outagePatience" })
        }
        expect(yield* fake.requests).toEqual([])
      })
    ))
})
