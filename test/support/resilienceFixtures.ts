/**
 * What the Resilience*.test.ts files share: a client of the fake service under a fixed jitter (so
 * TestClock's waits are exact), the medications call, where its requests go, when they were sent,
 * and a counter's count.
 */
import { Effect, Metric } from "effect"
import { type ClinicalClient, MedicationService } from "effect-clinical"
import * as Fake from "./FakeService.js"

export const middleJitter = Fake.middleJitter

export const withClient = <A, E>(
  body: (fake: Fake.FakeService) => Effect.Effect<A, E, ClinicalClient.Services>,
  overrides: Parameters<typeof Fake.clientLayer>[1] = {}
) => middleJitter(Fake.withClient(body, overrides))

export const get = MedicationService.get(Fake.PERSON_UID)
/** Where every medication request goes: errors show it. */
export const medicationsUrl = { method: "POST", url: `${Fake.BASE_URL}${Fake.MEDICATION_PATH}` }
export const times = (requests: ReadonlyArray<Fake.Recorded>) => requests.map((r) => r.at)
export const counter = (metric: Metric.Metric.Counter<number>) =>
  Effect.map(Metric.value(metric), (state) => state.count)
