/**
 * The Effect 4 line's mock: the Effect 4 client against it in memory (`layerTransport`) and over
 * loopback HTTP (`layerServed`, undici), its faults and counters, its options refused as
 * `InvalidConfig`, and `start()` driven with Promises. The service itself is the core's, shared with
 * the Effect 3 line (whose tests check its every answer): these check this line's shell over it.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Redacted, Scope } from "effect"
import { TestClock } from "effect/testing"
import * as ClinicalClient from "../src/ClinicalClient.js"
import type * as ClinicalConfig from "../src/ClinicalConfig.js"
import { InvalidConfig } from "../src/ClinicalError.js"
import * as HttpTransport from "../src/HttpTransport.js"
import * as MedicationService from "../src/MedicationService.js"
import * as PersonAuthentication from "../src/PersonAuthentication.js"
import { MockClinicalServer } from "../src/testing.js"

const APP = MockClinicalServer.demoApplicationId
const [ELEANOR, MARCUS] = MockClinicalServer.fixturePersons

const options = (baseUrl: string): ClinicalConfig.Options => ({
  baseUrl,
  applicationId: APP,
  retryBaseDelay: "5 millis",
  retryMaxDelay: "20 millis"
})

/** The client over the mock in memory, with the mock's controls in context. */
const inMemory = (mockOptions?: MockClinicalServer.Options) =>
  ClinicalClient.layer(options("https://clinical.example")).pipe(
    Layer.provideMerge(MockClinicalServer.layerTransport(mockOptions))
  )

/** The client over undici to the mock served on loopback, with its controls and base URL in context. */
const overLoopback = () =>
  Layer.unwrap(
    MockClinicalServer.BaseUrl.useSync((baseUrl) =>
      ClinicalClient.layer(options(baseUrl)).pipe(Layer.provide(HttpTransport.layerUndici()))
    )
  ).pipe(Layer.provideMerge(MockClinicalServer.layerServed()))

const tokenRequest = (baseUrl: string): HttpTransport.TransportRequest => ({
  method: "POST",
  url: `${baseUrl}/api/Server/Token`,
  headers: { "Content-Type": "application/json" },
  body: JSON.stringify({ ApplicationId: APP })
})

/** Waits (on the real clock) until the mock has counted a medication request. */
const untilMedicationRequest = (mock: MockClinicalServer.Service) =>
  Effect.gen(function*() {
    while ((yield* mock.counters).medicationRequests === 0) {
      yield* Effect.promise(() => new Promise((resolve) => setTimeout(resolve, 5)))
    }
  })

describe("MockClinicalServer (Effect 4) in memory", () => {
  it.live("a fixture person's medications: one token request, one medication request, the PersonUid in its body", () =>
    Effect.gen(function*() {
      const { medications } = yield* MedicationService.get(Redacted.make(ELEANOR!.personUid))
      assert.deepStrictEqual<unknown>(medications, ELEANOR!.medications)
      const mock = yield* MockClinicalServer.MockClinicalServer
      const counters = yield* mock.counters
      assert.deepInclude(counters, { tokenRequests: 1, tokensIssued: 1, medicationRequests: 1, dataRequests: 1 })
      assert.deepStrictEqual(counters.byStatus, { 200: 2 })
      const [token, data] = yield* mock.requestLog
      assert.strictEqual(token!.operation, "token")
      assert.strictEqual(data!.path, "/api/clinical/medication/get")
      assert.strictEqual(data!.body, JSON.stringify({ personuid: ELEANOR!.personUid }))
      assert.strictEqual(data!.headers.ApplicationId, APP)
    }).pipe(Effect.provide(inMemory())))

  it.live("authenticate with a fixture person's pass code and date of birth: their PersonUid", () =>
    Effect.gen(function*() {
      const personUid = yield* PersonAuthentication.authenticate({
        passCode: Redacted.make(MARCUS!.passCode),
        dateOfBirth: MARCUS!.dateOfBirth
      })
      assert.strictEqual(Redacted.value(personUid), MARCUS!.personUid)
      const wrong = yield* Effect.flip(
        PersonAuthentication.authenticate({ passCode: "NOT-THE-CODE", dateOfBirth: MARCUS!.dateOfBirth })
      )
      assert.strictEqual(wrong._tag, "ApiError")
      const counters = yield* MockClinicalServer.MockClinicalServer.use((mock) => mock.counters)
      assert.deepInclude(counters, { tokenRequests: 1, authenticateRequests: 2 })
    }).pipe(Effect.provide(inMemory())))

  it.live("a 503 then success: the client retries, the mock counts both requests and each status", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.MockClinicalServer
      yield* mock.injectFaults("medications", [MockClinicalServer.Fault.status(503)])
      const { medications } = yield* MedicationService.get(ELEANOR!.personUid)
      assert.deepStrictEqual<unknown>(medications, ELEANOR!.medications)
      const counters = yield* mock.counters
      assert.deepInclude(counters, { tokenRequests: 1, medicationRequests: 2 })
      assert.deepStrictEqual(counters.byStatus, { 200: 2, 503: 1 })
      assert.deepStrictEqual((yield* mock.requestLog).map((logged) => logged.status), [200, 503, 200])
    }).pipe(Effect.provide(inMemory())))

  it.effect("a Drop fault is a TransportError; a delay waits on the mock's clock (TestClock)", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.make()
      yield* mock.injectFaults("token", [MockClinicalServer.Fault.drop, MockClinicalServer.Fault.delay("10 seconds")])
      const dropped = yield* Effect.flip(mock.handle(tokenRequest("http://mock")))
      assert.strictEqual(dropped._tag, "TransportError")
      assert.strictEqual(dropped.reason, "Network")
      const delayed = yield* Effect.forkChild(mock.handle(tokenRequest("http://mock")))
      yield* TestClock.adjust("9999 millis")
      assert.isUndefined(delayed.pollUnsafe())
      yield* TestClock.adjust("1 millis")
      const answered = yield* Fiber.join(delayed)
      assert.strictEqual(answered.status, 200)
      assert.deepInclude(yield* mock.counters, { tokenRequests: 2, tokensIssued: 1, dropped: 1 })
      assert.deepStrictEqual((yield* mock.requestLog).map((logged) => logged.at), [0, 10_000])
    }))

  it.effect("refused options and controls fail with InvalidConfig, naming the setting", () =>
    Effect.gen(function*() {
      const persons = yield* Effect.flip(MockClinicalServer.make({ persons: "everyone" as never }))
      assert.instanceOf(persons, InvalidConfig)
      assert.deepInclude(persons, { setting: "persons" })
      const lifetime = yield* Effect.flip(MockClinicalServer.make({ tokenLifetime: "forever" as never }))
      assert.deepInclude(lifetime, { setting: "tokenLifetime", reason: "must be a duration" })
      const mock = yield* MockClinicalServer.make()
      const faults = yield* Effect.flip(mock.injectFaults("any", [{ _tag: "Status", status: 42 } as never]))
      assert.deepInclude(faults, { setting: "faults" })
      const delay = yield* Effect.flip(mock.injectFaults("any", [MockClinicalServer.Fault.delay("soon" as never)]))
      assert.deepInclude(delay, { setting: "faults" })
      const offset = yield* Effect.flip(mock.setClockOffset(Number.NaN))
      assert.deepInclude(offset, { setting: "clockOffsetMillis" })
    }))
})

describe("MockClinicalServer (Effect 4) over loopback HTTP", () => {
  it.live("layerServed: the client over undici gets a fixture person's medications; a 503, then success", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.MockClinicalServer
      yield* mock.injectFaults("medications", [MockClinicalServer.Fault.status(503, { retryAfter: 0 })])
      const { medications } = yield* MedicationService.get(ELEANOR!.personUid)
      assert.deepStrictEqual<unknown>(medications, ELEANOR!.medications)
      assert.deepInclude(yield* mock.counters, { tokenRequests: 1, medicationRequests: 2 })
      const url = yield* MockClinicalServer.BaseUrl
      assert.match(url, /^http:\/\/127\.0\.0\.1:\d+$/)
    }).pipe(Effect.provide(overLoopback())))

  it.live("a Drop fault closes the connection without an answer: the client's TransportError, counted as dropped", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.MockClinicalServer
      yield* mock.injectFaults("token", [MockClinicalServer.Fault.drop])
      const url = yield* MockClinicalServer.BaseUrl
      const transport = yield* HttpTransport.HttpTransport
      const failed = yield* Effect.flip(transport.send(tokenRequest(url)))
      assert.strictEqual(failed._tag, "TransportError")
      assert.strictEqual(failed.reason, "Network")
      assert.strictEqual((yield* transport.send(tokenRequest(url))).status, 200)
      assert.deepInclude(yield* mock.counters, { tokenRequests: 2, tokensIssued: 1, dropped: 1 })
      assert.deepStrictEqual((yield* mock.requestLog).map((logged) => logged.status), ["dropped", 200])
    }).pipe(Effect.provide(Layer.mergeAll(MockClinicalServer.layerServed(), HttpTransport.layerUndici()))))

  it.effect("closing the server drops an answer still delayed (it never answers, even when due)", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.make()
      yield* mock.injectFaults("medications", [MockClinicalServer.Fault.delay("60 seconds")])
      const scope = yield* Scope.make()
      const url = yield* Scope.provide(MockClinicalServer.serve(mock, {}), scope)
      const answer = fetch(`${url}/api/clinical/medication/get`, { method: "POST", body: "{}" }).then(
        (response) => response.status,
        () => "dropped" as const
      )
      yield* untilMedicationRequest(mock)
      yield* Scope.close(scope, Exit.void)
      assert.strictEqual(yield* Effect.promise(() => answer), "dropped")
      // The delay sleeps on this test's clock: due now, but the closed server interrupted it.
      yield* TestClock.adjust("60 seconds")
      assert.deepStrictEqual(yield* mock.requestLog, [])
      assert.deepInclude(yield* mock.counters, { medicationRequests: 1, dropped: 0 })
    }))

  it("start(): a Promise API for tests without Effect; close() stops it; bad options reject with InvalidConfig", async () => {
    const mock = await MockClinicalServer.start()
    try {
      const response = await fetch(`${mock.url}/api/Server/Token`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ ApplicationId: mock.applicationId })
      })
      assert.strictEqual(response.status, 200)
      assert.match(response.headers.get("token_expires") ?? "", /GMT$/)
      await mock.injectFaults("token", [MockClinicalServer.Fault.status(503)])
      assert.strictEqual((await fetch(`${mock.url}/api/Server/Token`, { method: "POST" })).status, 503)
      assert.deepInclude(await mock.counters(), { tokenRequests: 2, tokensIssued: 1 })
    } finally {
      await mock.close()
    }
    const after = await fetch(`${mock.url}/api/Server/Token`, { method: "POST" }).then(
      () => "answered",
      () => "refused"
    )
    assert.strictEqual(after, "refused")
    const refused = await MockClinicalServer.start({ persons: "everyone" as never }).then(() => undefined, (e) => e)
    assert.instanceOf(refused, InvalidConfig)
    assert.deepInclude(refused, { setting: "persons" })
    const taken = await MockClinicalServer.start()
    try {
      const port = Number(new URL(taken.url).port)
      const busy = await MockClinicalServer.start({ port }).then(() => undefined, (e) => e)
      assert.instanceOf(busy, InvalidConfig)
      assert.deepInclude(busy, { setting: "port", reason: "cannot be listened on (EADDRINUSE)" })
    } finally {
      await taken.close()
    }
  })
})
