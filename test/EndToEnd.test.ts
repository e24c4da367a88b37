/**
 * The real client, over real sockets, against the mock served on loopback: once through the
 * default undici transport and once through @effect/platform's fetch client.
 */
import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Exit, Fiber, Layer, Redacted, Scope } from "effect"
import {
  ClinicalClient,
  type ClinicalConfig,
  type ClinicalError,
  HttpTransport,
  MedicationService,
  PersonAuthentication,
  PersonData,
  TokenService
} from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"

const transports: ReadonlyArray<
  readonly [string, Layer.Layer<HttpTransport.HttpTransport, ClinicalError.InvalidConfig>]
> = [
  ["layerUndici", HttpTransport.layerUndici()],
  ["layerHttpClient + FetchHttpClient", HttpTransport.layerHttpClient.pipe(Layer.provide(FetchHttpClient.layer))]
]

const persons = MockClinicalServer.fixturePersons

/** A mock served on loopback for this test, and a client layer pointed at it. */
const setup = (
  transport: Layer.Layer<HttpTransport.HttpTransport, ClinicalError.InvalidConfig>,
  options?: MockClinicalServer.Options,
  wrap: (inner: HttpTransport.Service) => HttpTransport.Service = (inner) => inner,
  clientOptions: Partial<ClinicalConfig.Options> = {}
) =>
  Effect.gen(function*() {
    const mock = yield* MockClinicalServer.make(options)
    const baseUrl = yield* MockClinicalServer.serve(mock)
    const wrapped = Layer.effect(HttpTransport.HttpTransport, Effect.map(HttpTransport.HttpTransport, wrap)).pipe(
      Layer.provide(transport)
    )
    const client = ClinicalClient.layer({
      baseUrl,
      applicationId: MockClinicalServer.demoApplicationId,
      ...clientOptions
    }).pipe(Layer.provide(wrapped))
    return { mock, baseUrl, client }
  })

const getAll = Effect.forEach(persons, (person) => MedicationService.get(person.personUid))

describe("end to end over loopback HTTP", () => {
  for (const [name, transport] of transports) {
    describe(name, () => {
      it.scopedLive("authenticates each fixture person, then reads their medications and ethnicities", () =>
        Effect.gen(function*() {
          const { client, mock } = yield* setup(transport)
          const read = Effect.forEach(persons, (person) =>
            Effect.gen(function*() {
              const personUid = yield* PersonAuthentication.authenticate({
                passCode: person.passCode,
                dateOfBirth: person.dateOfBirth
              })
              const { medications } = yield* MedicationService.get(personUid)
              const ethnicities = yield* PersonData.getAs(PersonData.ethnicities, PersonData.Ethnicity, personUid)
              return { personUid: Redacted.value(personUid), medications, ethnicities: ethnicities.items }
            }))
          const results = yield* Effect.provide(read, client)
          expect(results).toEqual(persons.map((person) => ({
            personUid: person.personUid,
            medications: person.medications,
            ethnicities: person.ethnicities
          })))
          const counters = yield* mock.counters
          expect(counters.requestsByOperation).toMatchObject({
            token: 1,
            authenticate: 3,
            medications: 3,
            ethnicities: 3
          })
        }))

      it.scopedLive("reads the medications of every fixture person", () =>
        Effect.gen(function*() {
          const { client, mock } = yield* setup(transport)
          const results = yield* Effect.provide(getAll, client)
          expect(results.map((r) => r.medications)).toEqual(persons.map((p) => p.medications))
          expect(yield* mock.counters).toMatchObject({ tokenRequests: 1, medicationRequests: 3 })
        }))

      it.scopedLive(
        "500 concurrent calls on a cold client make exactly one token request",
        () =>
          Effect.gen(function*() {
            const { client, mock } = yield* setup(transport)
            const results = yield* Effect.all(
              Array.from({ length: 500 }, (_, i) => MedicationService.get(persons[i % 3]!.personUid)),
              { concurrency: "unbounded" }
            ).pipe(Effect.provide(client))
            expect(results).toHaveLength(500)
            expect(yield* mock.counters).toMatchObject({ tokenRequests: 1, medicationRequests: 500 })
          }),
        60_000
      ) // 500 real round trips through fetch: seconds on a busy 2-core machine, not 5

      it.scopedLive("tokens revoked mid-run give one refresh and no failed call", () =>
        Effect.gen(function*() {
          // The tokens are revoked just before the 100th data request leaves, whatever the machine's
          // load: that request, and any sent beside it, carry the revoked token.
          let dataRequests = 0
          let revoke: Effect.Effect<void> = Effect.void
          const { client, mock } = yield* setup(transport, undefined, (inner) => ({
            send: (request) =>
              /token$/i.test(request.url)
                ? inner.send(request)
                : Effect.suspend(() =>
                  Effect.zipRight(++dataRequests === 100 ? revoke : Effect.void, inner.send(request))
                )
          }))
          revoke = mock.revokeAllTokens
          const results = yield* Effect.provide(
            Effect.all(Array.from({ length: 300 }, () => MedicationService.get(persons[0]!.personUid)), {
              concurrency: 25
            }),
            client
          )
          expect(results).toHaveLength(300)
          const counters = yield* mock.counters
          expect(counters.tokenRequests).toBe(2)
          expect(counters.byStatus[401]).toBeGreaterThanOrEqual(1)
          expect(counters.medicationRequests).toBe(300 + counters.byStatus[401]!)
        }), 60_000) // 300 real round trips, as above

      it.scopedLive("a token expired on the server (419) is renewed and the call succeeds", () =>
        Effect.gen(function*() {
          const { client, mock } = yield* setup(transport)
          yield* Effect.provide(
            Effect.gen(function*() {
              const before = yield* TokenService.get
              yield* mock.setClockOffset(2 * 3_600_000) // the server now sees every issued token as expired
              const result = yield* MedicationService.get(persons[1]!.personUid)
              expect(result.medications).toEqual(persons[1]!.medications)
              const after = yield* TokenService.get
              expect(after.generation).toBe(before.generation + 1)
              expect(after.lifetimeMillis).toBe(3_600_000)
            }),
            client
          )
          const counters = yield* mock.counters
          expect(counters.byStatus[419]).toBe(1)
          expect(counters.tokenRequests).toBe(2)
        }))

      it.scopedLive("a server clock one hour ahead changes nothing", () =>
        Effect.gen(function*() {
          const { client, mock } = yield* setup(transport, { clockOffsetMillis: 3_600_000 })
          const token = yield* Effect.provide(Effect.zipRight(getAll, TokenService.get), client)
          expect(token.lifetimeMillis).toBe(3_600_000)
          expect(Math.abs(token.serverClockSkewMillis! - 3_600_000)).toBeLessThan(5_000)
          expect(yield* mock.counters).toMatchObject({ tokenRequests: 1, medicationRequests: 3 })
        }))

      it.scopedLive("a GET gives UnexpectedStatus 405", () =>
        Effect.gen(function*() {
          // A transport (think: a misconfigured proxy) that turns data requests into GETs.
          const { client } = yield* setup(transport, undefined, (inner) => ({
            send: (request) => inner.send(/token$/i.test(request.url) ? request : { ...request, method: "GET" })
          }))
          const error = yield* Effect.flip(Effect.provide(MedicationService.get(persons[0]!.personUid), client))
          expect(error).toMatchObject({ _tag: "UnexpectedStatus", status: 405, operation: "medications" })
        }))

      it.scopedLive("the server stopping mid-run gives TransportError, and the client works again once it is back", () =>
        Effect.gen(function*() {
          const mock = yield* MockClinicalServer.make()
          const serverScope = yield* Scope.make()
          const baseUrl = yield* Scope.extend(MockClinicalServer.serve(mock), serverScope)
          const port = Number(new URL(baseUrl).port)
          // Retries off: with them, the call would back off and retry for seconds before failing.
          const client = ClinicalClient.layer({
            baseUrl,
            applicationId: MockClinicalServer.demoApplicationId,
            maxRetries: 0
          }).pipe(Layer.provide(transport))
          yield* Effect.provide(
            Effect.gen(function*() {
              expect((yield* MedicationService.get(persons[0]!.personUid)).medications).toHaveLength(5)
              // Stopped while a request is in flight (the mock holds it for a second)...
              yield* mock.injectFaults("medications", [MockClinicalServer.Fault.delay("1 second")])
              const inFlight = yield* Effect.fork(Effect.flip(MedicationService.get(persons[0]!.personUid)))
              while ((yield* mock.counters).medicationRequests < 2) yield* Effect.sleep("5 millis")
              yield* Scope.close(serverScope, Exit.void)
              expect(yield* Fiber.join(inFlight)).toMatchObject({ _tag: "TransportError", reason: "Network" })
              // ...and while it is down.
              const error = yield* Effect.flip(MedicationService.get(persons[0]!.personUid))
              expect(error).toMatchObject({ _tag: "TransportError", reason: "Network", operation: "medications" })
              yield* MockClinicalServer.serve(mock, { port })
              expect((yield* MedicationService.get(persons[0]!.personUid)).medications).toHaveLength(5)
            }),
            client
          )
        }))

      it.scopedLive("a dropped connection is retried and the call succeeds; a non-JSON page is not retried", () =>
        Effect.gen(function*() {
          const { client, mock } = yield* setup(transport, undefined, undefined, { retryBaseDelay: "10 millis" })
          yield* mock.injectFaults("medications", [MockClinicalServer.Fault.notJson, MockClinicalServer.Fault.drop])
          const [error, recovered] = yield* Effect.provide(
            Effect.all([
              Effect.flip(MedicationService.get(persons[0]!.personUid)),
              MedicationService.get(persons[0]!.personUid)
            ]),
            client
          )
          expect(recovered.medications).toHaveLength(5)
          expect(error._tag).toBe("ResponseDecodeError")
          expect(yield* mock.counters).toMatchObject({ medicationRequests: 3, dropped: 1 })
        }))

      it.scopedLive("with retries off, a dropped connection is a TransportError", () =>
        Effect.gen(function*() {
          const { client, mock } = yield* setup(transport, undefined, undefined, { maxRetries: 0 })
          yield* mock.injectFaults("medications", [MockClinicalServer.Fault.drop])
          const error = yield* Effect.flip(Effect.provide(MedicationService.get(persons[0]!.personUid), client))
          expect(error).toMatchObject({ _tag: "TransportError", reason: "Network" })
        }))
    })
  }
})
