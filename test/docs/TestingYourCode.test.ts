/**
 * The README's "Testing your code" snippet is this file's region, run as the test it shows.
 */
// #region testing-your-code
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { ClinicalClient, MedicationService } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"

// The whole client against the mock, in memory: no sockets, and TestClock drives time.
const testLayer = (settings: { readonly maxRetries?: number } = {}) =>
  ClinicalClient.layer({
    baseUrl: "https://openapi.example.test", // never contacted
    applicationId: MockClinicalServer.demoApplicationId,
    ...settings
  }).pipe(Layer.provideMerge(MockClinicalServer.layerTransport()))

const person = MockClinicalServer.fixturePersons[0]!

describe("reading medications", () => {
  it.effect("an outage is a ServerError", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.MockClinicalServer
      yield* mock.injectFaults("medications", [MockClinicalServer.Fault.status(503)])
      const error = yield* Effect.flip(MedicationService.get(person.personUid))
      expect(error._tag).toBe("ServerError")
      expect((yield* mock.counters).tokenRequests).toBe(1)
    }).pipe(Effect.provide(testLayer({ maxRetries: 0 })))) // retries off: the one fault is the answer

  it.effect("with the default retries, a passing 503 is absorbed once the backoff has elapsed", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.MockClinicalServer
      yield* mock.injectFaults("medications", [MockClinicalServer.Fault.status(503)])
      const call = yield* Effect.fork(MedicationService.get(person.personUid))
      yield* TestClock.adjust("1 second") // the first backoff is at most 1 second
      const { medications } = yield* call
      expect(medications).toEqual(person.medications)
      expect((yield* mock.counters).medicationRequests).toBe(2)
    }).pipe(Effect.provide(testLayer())))
})
// #endregion
