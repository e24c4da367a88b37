import { FetchHttpClient } from "@effect/platform"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Layer } from "effect"
import { ClinicalClient, HttpTransport, MedicationService } from "effect-clinical"
import * as Fake from "./support/FakeService.js"
import * as Loopback from "./support/LoopbackServer.js"

const transports: ReadonlyArray<readonly [string, Layer.Layer<HttpTransport.HttpTransport>]> = [
  ["layerUndici", HttpTransport.layerUndici()],
  ["layerHttpClient + FetchHttpClient", HttpTransport.layerHttpClient.pipe(Layer.provide(FetchHttpClient.layer))]
]

describe("the whole client over a loopback HTTP server", () => {
  for (const [name, transport] of transports) {
    it.scopedLive(`${name}: gets medications and puts exactly the specified request on the wire`, () =>
      Effect.gen(function*() {
        const server = yield* Loopback.serve
        const client = ClinicalClient.layer({ baseUrl: server.url, applicationId: Fake.APPLICATION_ID }).pipe(
          Layer.provide(transport)
        )
        const results = yield* Effect.all(
          [MedicationService.get(Fake.PERSON_UID), MedicationService.get(Fake.PERSON_UID, { startDate: "2024-01-01" })],
          { concurrency: "unbounded" }
        ).pipe(Effect.provide(client))
        expect(results.map((r) => r.medications)).toEqual([Fake.MEDICATIONS, Fake.MEDICATIONS])

        const [token, ...data] = server.received
        expect(token).toMatchObject({
          method: "POST",
          path: "/api/Server/Token",
          body: JSON.stringify({ ApplicationId: Fake.APPLICATION_ID })
        })
        expect(token!.headers["content-type"]).toBe("application/json")
        expect(token!.headers.authorization).toBeUndefined()
        expect(token!.headers.applicationid).toBeUndefined()
        expect(data).toHaveLength(2)
        for (const request of data) {
          expect(request.method).toBe("POST")
          expect(request.path).toBe("/api/clinical/medication/get")
          expect(request.headers["content-type"]).toBe("application/json")
          expect(request.headers.authorization).toBe(`Bearer ${Fake.tokenValue(1)}`)
          expect(request.headers.applicationid).toBe(Fake.APPLICATION_ID)
        }
        expect(data.map((r) => JSON.parse(r.body)).sort((a, b) => Object.keys(a).length - Object.keys(b).length))
          .toEqual([{ personuid: Fake.PERSON_UID }, { personuid: Fake.PERSON_UID, StartDate: "2024-01-01" }])
      }))

    it.scopedLive(`${name}: interrupting a request aborts it on the socket`, () =>
      Effect.gen(function*() {
        const server = yield* Loopback.serve
        const send = Effect.flatMap(HttpTransport.HttpTransport, (t) =>
          t.send({
            method: "POST",
            url: `${server.url}/hang`,
            headers: { "Content-Type": "application/json" },
            body: "{}"
          }))
        const fiber = yield* Effect.fork(Effect.provide(send, transport))
        while (server.received.length === 0) {
          yield* Effect.sleep("5 millis")
        }
        yield* Fiber.interrupt(fiber)
        // The server sees the connection close: the request was aborted, not left to run.
        yield* Effect.promise(() => server.hangClosed).pipe(Effect.timeout("5 seconds"))
      }))

    it.scopedLive(`${name}: a refused connection is a TransportError`, () =>
      Effect.gen(function*() {
        const server = yield* Loopback.serve
        const closedUrl = server.url.replace(/:\d+$/, ":1")
        const error = yield* MedicationService.get(Fake.PERSON_UID).pipe(
          Effect.provide(ClinicalClient.layer({ baseUrl: closedUrl, applicationId: Fake.APPLICATION_ID })),
          Effect.provide(transport),
          Effect.flip
        )
        expect(error).toMatchObject({ _tag: "TransportError", reason: "Network", operation: "token" })
      }))

    it.scopedLive(`${name}: a GET-only mistake shows as UnexpectedStatus 405`, () =>
      Effect.gen(function*() {
        const server = yield* Loopback.serve
        const response = yield* Effect.flatMap(HttpTransport.HttpTransport, (t) =>
          t.send({ method: "GET", url: `${server.url}/api/clinical/medication/get`, headers: {} })).pipe(
            Effect.provide(transport)
          )
        expect(response.status).toBe(405)
        expect(response.headers["content-type"]).toBe("application/json; charset=utf-8")
      }))
  }

  it.scopedLive("ClinicalClient.layerUndici is a single ready layer", () =>
    Effect.gen(function*() {
      const server = yield* Loopback.serve
      const result = yield* MedicationService.get(Fake.PERSON_UID).pipe(
        Effect.provide(ClinicalClient.layerUndici({ baseUrl: server.url, applicationId: Fake.APPLICATION_ID }))
      )
      expect(result.medications).toEqual(Fake.MEDICATIONS)
    }))
})
