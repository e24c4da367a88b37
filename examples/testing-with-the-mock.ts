/**
 * How you test your own code with the mock: swap `MockClinicalServer.layerTransport()` in where
 * your backend provides the real transport. No sockets, no credentials, and `TestClock` drives the
 * token lifetimes. Written with node:test so that `npx tsx examples/testing-with-the-mock.ts` runs it;
 * the same layers work in vitest or any other runner.
 */
import { Effect, Layer, TestClock, TestContext } from "effect"
import { ClinicalClient, MedicationService } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import assert from "node:assert/strict"
import { test } from "node:test"

// --- Your code: a function of your backend that uses the client. -------------------------------

/** Names of the medications a person still takes, for a reminder e-mail. */
const activeMedicationNames = (personUid: string) =>
  Effect.map(
    MedicationService.get(personUid),
    ({ medications }) => medications.filter((m) => m.EndDate === null).map((m) => String(m.Name))
  )

// --- Its tests. ----------------------------------------------------------------------------------

/** The client over an in-memory mock; the mock stays in context for its controls. */
const testLayer = ClinicalClient.layer({
  baseUrl: "https://openapi.example.test", // never contacted: the transport is in memory
  applicationId: MockClinicalServer.demoApplicationId
}).pipe(Layer.provideMerge(MockClinicalServer.layerTransport()))

const run = <A, E>(effect: Effect.Effect<A, E, Layer.Layer.Success<typeof testLayer>>) =>
  Effect.runPromise(effect.pipe(Effect.provide(testLayer), Effect.provide(TestContext.TestContext)))

const eleanor = MockClinicalServer.fixturePersons[0]!

test("lists only the medications still taken", () =>
  run(Effect.gen(function*() {
    const names = yield* activeMedicationNames(eleanor.personUid)
    assert.deepEqual(names, ["Lisinopril", "Metformin Hydrochloride", "Atorvastatin Calcium", "Aspirin"])
  })))

test("an unknown person is a typed ApiError", () =>
  run(Effect.gen(function*() {
    const error = yield* Effect.flip(activeMedicationNames("not-a-known-person"))
    assert.equal(error._tag, "ApiError")
    assert.equal(error._tag === "ApiError" && error.errorType, "PersonNotFound")
  })))

test("a brief outage is absorbed by a retry", () =>
  run(Effect.gen(function*() {
    const mock = yield* MockClinicalServer.MockClinicalServer
    yield* mock.injectFaults("medications", [MockClinicalServer.Fault.status(503)])
    // The retry waits a jittered backoff on the clock: let the test clock move it along.
    const fiber = yield* Effect.fork(activeMedicationNames(eleanor.personUid))
    yield* TestClock.adjust("2 seconds")
    assert.equal((yield* fiber.await)._tag, "Success")
    assert.equal((yield* mock.counters).medicationRequests, 2)
  })))

test("an outage longer than the call's deadline surfaces at once as ServerError", () =>
  run(Effect.gen(function*() {
    const mock = yield* MockClinicalServer.MockClinicalServer
    yield* mock.injectFaults("medications", [MockClinicalServer.Fault.status(503, { retryAfter: 300 })])
    const error = yield* Effect.flip(activeMedicationNames(eleanor.personUid))
    assert.equal(error._tag, "ServerError")
    // The client caps a server's Retry-After at maxRetryAfter (60 seconds by default).
    assert.equal(error._tag === "ServerError" && error.retryAfterMillis, 60_000)
  })))

test("a token that expires between two calls is renewed without the caller noticing", () =>
  run(Effect.gen(function*() {
    const mock = yield* MockClinicalServer.MockClinicalServer
    yield* activeMedicationNames(eleanor.personUid)
    yield* TestClock.adjust("2 hours")
    yield* activeMedicationNames(eleanor.personUid)
    assert.equal((yield* mock.counters).tokenRequests, 2)
  })))
