/** docs/testing.md, "In memory": this file's region is the snippet, run as the test it shows. */
// #region in-memory
import { expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { ClinicalClient, MedicationService } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"

const testLayer = ClinicalClient.layer({
  baseUrl: "https://openapi.example.test", // never contacted
  applicationId: MockClinicalServer.demoApplicationId
}).pipe(Layer.provideMerge(MockClinicalServer.layerTransport()))

const person = MockClinicalServer.fixturePersons[0]!

it.effect("a token expired between two calls is renewed", () =>
  Effect.gen(function*() {
    const mock = yield* MockClinicalServer.MockClinicalServer
    yield* MedicationService.get(person.personUid)
    yield* TestClock.adjust("2 hours")
    yield* MedicationService.get(person.personUid)
    expect((yield* mock.counters).tokenRequests).toBe(2)
  }).pipe(Effect.provide(testLayer)))
// #endregion
