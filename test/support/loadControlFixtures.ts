/**
 * What the LoadControlCalls*.test.ts files share: a client of the fake service under a fixed jitter
 * (so TestClock's counts are exact), the medications call made many times at once with each
 * outcome's tag, a service of fixed capacity, and data requests answered 503.
 */
import { Effect } from "effect"
import { type ClinicalClient, HttpTransport, MedicationService } from "effect-clinical"
import * as Fake from "./FakeService.js"

export const withClient = <A, E>(
  body: (fake: Fake.FakeService) => Effect.Effect<A, E, ClinicalClient.Services>,
  overrides: Parameters<typeof Fake.clientLayer>[1] = {},
  fakeOptions: Fake.FakeServiceOptions = {}
) => Fake.middleJitter(Fake.withClient(body, overrides, fakeOptions))

export const get = MedicationService.get(Fake.PERSON_UID)

/**
 * A service that takes `capacity` requests at once, each answered after `millis` (test clock);
 * one more is answered 429 at once. Counts what it saw.
 */
export const fixedCapacity = (fake: Fake.FakeService, capacity: number, millis: number) => {
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

export const calls = (count: number) =>
  Effect.all(Array.from({ length: count }, () => Effect.either(get)), {
    concurrency: "unbounded"
  })

/** Each call's outcome: the error's tag, or "Right". */
export const outcomesOf = Fake.outcomeTags

/** The next `count` data requests answered 503. */
export const fail503 = (fake: Fake.FakeService, count: number) => fake.scriptData(...Fake.answering(503, count))
