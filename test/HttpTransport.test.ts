/**
 * The transports against real sockets: what a server receives, what comes back, and that
 * interrupting a caller aborts the request on the socket.
 */
import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer, Redacted } from "effect"
import {
  ClinicalClient,
  type ClinicalError,
  HttpTransport,
  MedicationService,
  PersonAuthentication
} from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import * as util from "node:util"
import * as Raw from "./support/RawServer.js"

const transports: ReadonlyArray<
  readonly [string, Layer.Layer<HttpTransport.HttpTransport, ClinicalError.InvalidConfig>]
> = [
  ["layerUndici", HttpTransport.layerUndici()],
  ["layerHttpClient + FetchHttpClient", HttpTransport.layerHttpClient.pipe(Layer.provide(FetchHttpClient.layer))]
]

const APP = MockClinicalServer.demoApplicationId
const PERSON = MockClinicalServer.fixturePersons[0]!

const send = (request: HttpTransport.TransportRequest) =>
  Effect.flatMap(HttpTransport.HttpTransport, (transport) => transport.send(request))

describe("HttpTransport over real sockets", () => {
  for (const [name, transport] of transports) {
    describe(name, () => {
      it.scopedLive("the whole client puts exactly the specified requests on the wire", () =>
        Effect.gen(function*() {
          const mock = yield* MockClinicalServer.make()
          const baseUrl = yield* MockClinicalServer.serve(mock)
          const client = ClinicalClient.layer({ baseUrl, applicationId: Redacted.make(APP) }).pipe(
            Layer.provide(transport)
          )
          const result = yield* MedicationService.get(PERSON.personUid, { startDate: "2020-01-01" }).pipe(
            Effect.provide(client)
          )
          expect(result.medications.map((m) => m.Name)).toEqual([
            "Metformin Hydrochloride",
            "Atorvastatin Calcium",
            "Aspirin",
            "Amoxicillin"
          ])
          const [token, data] = yield* mock.requestLog
          expect(token).toMatchObject({
            method: "POST",
            path: "/api/Server/Token",
            body: JSON.stringify({ ApplicationId: APP })
          })
          expect(token!.headers["content-type"]).toBe("application/json")
          expect(token!.headers.authorization).toBeUndefined()
          expect(token!.headers.applicationid).toBeUndefined()
          expect(data).toMatchObject({
            method: "POST",
            path: "/api/clinical/medication/get",
            body: JSON.stringify({ personuid: PERSON.personUid, StartDate: "2020-01-01" }),
            status: 200
          })
          expect(data!.headers["content-type"]).toBe("application/json")
          expect(data!.headers.applicationid).toBe(APP)
          expect(data!.headers.authorization).toMatch(/^Bearer [A-Za-z0-9+/=]{112}$/)
        }))

      // What an application writes to add a header of its own: a copy of the request, spread, or
      // a wrapper that passes everything else through.
      const copies: ReadonlyArray<
        readonly [string, (request: HttpTransport.TransportRequest) => HttpTransport.TransportRequest]
      > = [
        ["spread", (request) => ({ ...request, headers: { ...request.headers, "x-copied": "yes" } })],
        ["Proxy", (request) =>
          new Proxy(request, {
            get: (target, name, receiver) =>
              name === "headers"
                ? { ...target.headers, "x-copied": "yes" }
                : Reflect.get(target, name, receiver)
          })],
        [
          "Object.create",
          (request) =>
            Object.create(request, { headers: { value: { ...request.headers, "x-copied": "yes" }, enumerable: true } })
        ]
      ]
      for (const [style, copy] of copies) {
        it.scopedLive(`a transport of the application's that copies each request (${style}, a header added) sends it whole (from review)`, () =>
          Effect.gen(function*() {
            const mock = yield* MockClinicalServer.make()
            const baseUrl = yield* MockClinicalServer.serve(mock)
            const seen: Array<string | undefined> = []
            const printed: Array<string> = []
            const copying = Layer.effect(
              HttpTransport.HttpTransport,
              Effect.map(HttpTransport.HttpTransport, (inner): HttpTransport.Service => ({
                send: (request) => {
                  const copied = copy(request)
                  for (const shown of [request, copied]) {
                    printed.push(
                      util.inspect(shown, { showHidden: true, getters: true, depth: 9 }),
                      JSON.stringify(shown),
                      String(shown)
                    )
                  }
                  seen.push(HttpTransport.wireBody({ method: "POST", url: copied.url, headers: {}, body: copied.body }))
                  return inner.send(copied)
                }
              }))
            ).pipe(Layer.provide(transport))
            for (const tracePropagation of [false, true]) {
              const client = ClinicalClient.layer({ baseUrl, applicationId: Redacted.make(APP), tracePropagation })
                .pipe(
                  Layer.provide(copying)
                )
              const result = yield* MedicationService.get(PERSON.personUid).pipe(Effect.provide(client))
              expect(result.medications).toEqual(PERSON.medications)
              const personUid = yield* PersonAuthentication.authenticate({
                passCode: PERSON.passCode,
                dateOfBirth: PERSON.dateOfBirth
              }).pipe(Effect.provide(client))
              expect(Redacted.value(personUid)).toBe(PERSON.personUid)
            }
            const tokenBody = JSON.stringify({ ApplicationId: APP })
            const dataBody = JSON.stringify({ personuid: PERSON.personUid })
            const log = yield* mock.requestLog
            const authBody = log[3]!.body
            expect(authBody).toContain(PERSON.passCode)
            expect(log.map((entry) => [entry.path, entry.body, entry.headers["x-copied"], entry.status])).toEqual(
              [false, true].flatMap(() => [
                ["/api/Server/Token", tokenBody, "yes", 200],
                ["/api/clinical/medication/get", dataBody, "yes", 200],
                // The authenticate host's own token (see PersonAuthentication).
                ["/api/Server/Token", tokenBody, "yes", 200],
                ["/api/Server/Authenticate", authBody, "yes", 200]
              ])
            )
            expect(log[5]!.headers.traceparent).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/)
            // The copy's own `body` is the body too, for an application's code that reads it.
            expect(seen).toEqual([tokenBody, dataBody, tokenBody, authBody, tokenBody, dataBody, tokenBody, authBody])
            // Printed, neither the request nor its copy shows a secret.
            for (const secret of [APP, PERSON.personUid, PERSON.passCode, PERSON.dateOfBirth]) {
              expect(printed.filter((text) => text.includes(secret))).toEqual([])
            }
          }))
      }

      it.scopedLive("a copy of a request whose body the application replaced sends the replacement", () =>
        Effect.gen(function*() {
          const mock = yield* MockClinicalServer.make()
          const baseUrl = yield* MockClinicalServer.serve(mock)
          const other = MockClinicalServer.fixturePersons[1]!
          const replacing = Layer.effect(
            HttpTransport.HttpTransport,
            Effect.map(HttpTransport.HttpTransport, (inner): HttpTransport.Service => ({
              send: (request) =>
                inner.send(
                  request.url.endsWith("/get")
                    ? { ...request, body: Redacted.make(JSON.stringify({ personuid: other.personUid })) }
                    : request
                )
            }))
          ).pipe(Layer.provide(transport))
          for (const tracePropagation of [false, true]) {
            const client = ClinicalClient.layer({ baseUrl, applicationId: Redacted.make(APP), tracePropagation }).pipe(
              Layer.provide(replacing)
            )
            const result = yield* MedicationService.get(PERSON.personUid).pipe(Effect.provide(client))
            expect(result.medications).toEqual(other.medications)
          }
        }))

      it.scopedLive("returns status, lower-cased headers and body; sends no body with GET", () =>
        Effect.gen(function*() {
          const mock = yield* MockClinicalServer.make()
          const baseUrl = yield* MockClinicalServer.serve(mock)
          const response = yield* send({ method: "GET", url: `${baseUrl}/api/Server/Token`, headers: {}, body: "{}" })
            .pipe(
              Effect.provide(transport)
            )
          expect(response.status).toBe(405)
          expect(response.headers["content-type"]).toBe("application/json; charset=utf-8")
          expect(response.headers.pragma).toBe("no-cache")
          expect(JSON.parse(response.body).Message).toContain("GET")
          expect((yield* mock.requestLog)[0]!.body).toBe("")
        }))

      it.scopedLive("interrupting a request aborts it on the socket", () =>
        Effect.gen(function*() {
          const server = yield* Raw.serve
          const request = { method: "POST", url: `${server.url}/hang`, headers: {}, body: "{}" } as const
          const fiber = yield* Effect.fork(Effect.provide(send(request), transport))
          while (server.arrived() === 0) yield* Effect.sleep("5 millis")
          yield* Fiber.interrupt(fiber)
          // The server sees the connection close now, not when some timeout fires.
          yield* Effect.promise(() => server.closed).pipe(Effect.timeout("5 seconds"))
        }))

      for (const route of ["chunked", "sized"]) {
        it.scopedLive(`a ${route} body over maxResponseBytes is ResponseTooLarge; one within it is read whole`, () =>
          Effect.gen(function*() {
            const server = yield* Raw.serve
            const fetchBody = (bytes: number) =>
              send({ method: "POST", url: `${server.url}/${route}/${bytes}`, headers: {}, maxResponseBytes: 10_000 })
                .pipe(
                  Effect.provide(transport)
                )
            expect((yield* fetchBody(10_000)).body).toHaveLength(10_000)
            const error = yield* Effect.flip(fetchBody(200_000))
            expect(error).toMatchObject({ _tag: "TransportError", reason: "ResponseTooLarge" })
            expect(error.message).toContain("10000 bytes")
          }))
      }

      it.scopedLive("a refused connection is a TransportError that names the request and says it was not sent", () =>
        Effect.gen(function*() {
          const url = `${yield* Raw.closedPortUrl}/api/Server/Token`
          const error = yield* send({ method: "POST", url, headers: {} }).pipe(Effect.provide(transport), Effect.flip)
          expect(error).toMatchObject({
            _tag: "TransportError",
            reason: "Network",
            method: "POST",
            url,
            // No connection was made: the server surely never saw the request (authenticate may resend it).
            requestSent: false
          })
        }))
    })
  }

  it.scopedLive("ClinicalClient.layerUndici is a single ready layer", () =>
    Effect.gen(function*() {
      const mock = yield* MockClinicalServer.make()
      const baseUrl = yield* MockClinicalServer.serve(mock)
      const result = yield* MedicationService.get(PERSON.personUid).pipe(
        Effect.provide(ClinicalClient.layerUndici({ baseUrl, applicationId: APP }))
      )
      expect(result.medications).toEqual(PERSON.medications)
    }))
})

describe("transport limits at their edges", () => {
  for (const [name, transport] of transports) {
    it.scopedLive(`${name}: a timeout beyond Node's timer range is no limit, rather than one that fires at once`, () =>
      Effect.gen(function*() {
        const server = yield* Raw.serve
        const response = yield* send({
          method: "POST",
          url: `${server.url}/sized/10`,
          headers: {},
          timeoutMillis: 2_147_483_648
        }).pipe(Effect.provide(transport))
        expect(response.body).toHaveLength(10)
      }))
  }

  it.effect("HttpTransport.make counts the body's bytes, not its characters", () =>
    Effect.gen(function*() {
      const transport = HttpTransport.make(() => Effect.succeed({ status: 200, headers: {}, body: "é".repeat(6) }))
      const request = { method: "POST", url: "https://x.org/", headers: {} } as const
      const tooLarge = yield* Effect.flip(transport.send({ ...request, maxResponseBytes: 11 }))
      expect(tooLarge).toMatchObject({ _tag: "TransportError", reason: "ResponseTooLarge" })
      expect((yield* transport.send({ ...request, maxResponseBytes: 12 })).body).toBe("éééééé")
    }))
})
