/**
 * A batch while the circuit is open (issue 25): the persons refused wait for the probe, go as soon as
 * it closes the circuit, or stop the batch once the service stays down longer than its patience.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, type Duration, Effect, Stream } from "effect"
import { MedicationService, type PersonData } from "effect-clinical"
import * as Fake from "./support/FakeService.js"
import { fail503, fixedCapacity, withClient } from "./support/loadControlFixtures.js"

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
