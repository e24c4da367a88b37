/**
 * The documented person-data operations: one definition each, the same request body ("BaseRequest"),
 * the same envelope, the same machinery. What goes over the wire for each, how each answer is read,
 * and the items with echoed secrets redacted when asked.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Deferred, Effect, Fiber, Metric, Stream, TestClock } from "effect"
import { HttpTransport, MedicationService, PersonData } from "effect-clinical"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as CapturingTracer from "./support/CapturingTracer.js"
import * as Fake from "./support/FakeService.js"

const documented: ReadonlyArray<readonly [PersonData.Operation, string, string, ReadonlyArray<object>]> = [
  [PersonData.medications, "/api/clinical/medication/get", "Medications", [{ Name: "Lisinopril", Strength: "10 mg" }]],
  [PersonData.ethnicities, "/api/Demographics/ethnicity/get", "Ethnicities", [{
    Name: "Hispanic or Latino",
    Code: "2135-2"
  }]],
  [PersonData.detailedEthnicities, "/api/Demographics/detailedethnicity/get", "Ethnicities", [{
    Name: "Mexican",
    Code: "2148-5"
  }]],
  [PersonData.uniqueDeviceIdentifiers, "/api/Clinical/UniqueDeviceIdentifier/Get", "UniqueDeviceIdentifier", [{
    Udi: "(01)1"
  }]]
]

const envelope = (collection: string, items: unknown) => ({
  [collection]: items,
  ErrorMessage: null,
  ErrorType: null,
  Success: true
})

describe("PersonData: the documented operations", () => {
  for (const [operation, path, collection, items] of documented) {
    it.effect(`${operation.name}: POST ${path}, the BaseRequest body, the ${collection} collection`, () =>
      Fake.withClient((fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(Fake.respond(200, envelope(collection, items)))
          const result = yield* PersonData.get(operation, Fake.PERSON_UID, {
            startDate: "2024-01-01",
            endDate: "2024-12-31"
          })
          expect(result.items).toEqual(items)
          expect(result.raw).toEqual(envelope(collection, items))
          const request = (yield* fake.requests)[1]!
          // Exactly these headers: one more (or one less) would be a change of the wire format.
          expect(request).toEqual({
            at: 0,
            path,
            method: "POST",
            url: `${Fake.BASE_URL}${path}`,
            headers: {
              "Content-Type": "application/json",
              "Accept-Encoding": "identity",
              Authorization: `Bearer ${Fake.tokenValue(1)}`,
              ApplicationId: Fake.APPLICATION_ID
            },
            body: JSON.stringify({ personuid: Fake.PERSON_UID, StartDate: "2024-01-01", EndDate: "2024-12-31" })
          })
        })
      ))
  }

  it.effect("each labels its errors, span and metrics with its name", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const { spans, tracer } = yield* CapturingTracer.make
        for (const [operation] of documented) {
          yield* fake.scriptData(Fake.respond(400, {}))
          const error = yield* Effect.flip(PersonData.get(operation, Fake.PERSON_UID).pipe(Effect.withTracer(tracer)))
          expect(error).toMatchObject({ _tag: "BadRequest", operation: operation.name })
          const failures = Metric.tagged(
            Metric.tagged(Telemetry.failures, "operation", operation.name),
            "error",
            "BadRequest"
          )
          expect((yield* Metric.value(failures)).count).toBeGreaterThanOrEqual(1)
        }
        expect(spans.map((span) => span.name).filter((name) => name.startsWith("PersonData.")))
          .toEqual(documented.map(([operation]) => `PersonData.${operation.name}`))
      })
    ))

  it.effect("an answer that does not decode is the call's failure: counted, and on the call's span", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const { spans, tracer } = yield* CapturingTracer.make
        const failures = Metric.tagged(
          Metric.tagged(Telemetry.failures, "operation", "medications"),
          "error",
          "ResponseDecodeError"
        )
        const before = (yield* Metric.value(failures)).count
        yield* fake.scriptData(Fake.respond(200, envelope("Medications", "not a list")))
        const error = yield* Effect.flip(
          PersonData.get(PersonData.medications, Fake.PERSON_UID).pipe(Effect.withTracer(tracer))
        )
        expect(error).toMatchObject({
          _tag: "ResponseDecodeError",
          operation: "medications",
          method: "POST",
          url: `${Fake.BASE_URL}/api/clinical/medication/get`,
          status: 200
        })
        expect((yield* Metric.value(failures)).count - before).toBe(1)
        const call = spans.find((span) => span.name === "PersonData.medications")!
        expect(call.attributes.get("clinical.error")).toBe("ResponseDecodeError")
        expect(call.status._tag === "Ended" && call.status.exit._tag).toBe("Failure")
      })
    ))

  it.effect("the ethnicity items decode with the exported Ethnicity Schema", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(
          Fake.respond(200, envelope("Ethnicities", [{ Name: "Mexican", Code: "2148-5", Extra: 1 }])),
          Fake.respond(200, envelope("Ethnicities", [{ Name: "Mexican" }]))
        )
        const { items } = yield* PersonData.getAs(PersonData.detailedEthnicities, PersonData.Ethnicity, Fake.PERSON_UID)
        expect(items).toEqual([{ Name: "Mexican", Code: "2148-5" }])
        const error = yield* Effect.flip(
          PersonData.getAs(PersonData.ethnicities, PersonData.Ethnicity, Fake.PERSON_UID)
        )
        expect(error).toMatchObject({ _tag: "ResponseDecodeError", operation: "ethnicities" })
        expect(error.message).toContain("Ethnicities[0].Code is missing")
      })
    ))

  it.effect("MedicationService is the same operation: the same request, { medications, raw }", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const viaService = yield* MedicationService.get(Fake.PERSON_UID)
        const viaData = yield* PersonData.get(PersonData.medications, Fake.PERSON_UID)
        expect(viaService.medications).toEqual(viaData.items)
        const [, first, second] = yield* fake.requests
        expect({ ...first, at: 0 }).toEqual({ ...second, at: 0 })
      })
    ))

  it.effect("every operation of a client shares its bound on requests in flight", () =>
    Fake.withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* PersonData.get(PersonData.medications, Fake.PERSON_UID) // the token, first
          const release = yield* Deferred.make<void>()
          let inFlight = 0
          let most = 0
          const held: Fake.Responder = () =>
            Effect.gen(function*() {
              most = Math.max(most, ++inFlight)
              yield* Deferred.await(release)
              inFlight--
              return HttpTransport.jsonResponse(200, envelope("Ethnicities", []))
            })
          yield* fake.scriptData(held, held, held)
          const fiber = yield* Effect.fork(Effect.all([
            PersonData.get(PersonData.ethnicities, Fake.PERSON_UID),
            MedicationService.get(Fake.PERSON_UID),
            PersonData.get(PersonData.detailedEthnicities, Fake.PERSON_UID)
          ], { concurrency: "unbounded" }))
          yield* TestClock.adjust("1 millis")
          expect(inFlight).toBe(1)
          yield* Deferred.succeed(release, undefined)
          yield* Fiber.join(fiber).pipe(Effect.either)
          expect(most).toBe(1)
        }),
      { maxConcurrentRequests: 1 }
    ))
})

describe("PersonData: redactEchoedSecrets", () => {
  const echoed = (token: string) => ({
    Medications: [{
      Name: "Lisinopril",
      Note: `for ${Fake.PERSON_UID} with ${Fake.APPLICATION_ID.toUpperCase()}`,
      Trace: {
        request: [
          `Bearer ${token}`,
          encodeURIComponent(token),
          JSON.stringify(token).slice(1, -1).replace(/\//g, "\\/")
        ]
      },
      [Fake.PERSON_UID]: "a key that names the person"
    }],
    Echo: Fake.APPLICATION_ID.replace(/-/g, ""),
    Success: true
  })

  it.effect("off (the default): the items are what the server sent", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(Fake.respond(200, echoed(Fake.tokenValue(1))))
        const result = yield* PersonData.get(PersonData.medications, Fake.PERSON_UID)
        expect(result.raw).toEqual(echoed(Fake.tokenValue(1)))
      })
    ))

  it.effect("on: the PersonUid, the token and the ApplicationId are redacted wherever echoed, keys and raw included", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(Fake.respond(200, echoed(Fake.tokenValue(1))))
        const result = yield* PersonData.get(PersonData.medications, Fake.PERSON_UID, { redactEchoedSecrets: true })
        expect(result.items).toEqual([{
          Name: "Lisinopril",
          Note: "for <redacted> with <redacted>",
          Trace: { request: ["Bearer <redacted>", "<redacted>", "<redacted>"] },
          "<redacted>": "a key that names the person"
        }])
        expect(result.raw).toMatchObject({ Echo: "<redacted>", Success: true })
      })
    ))

  it.effect("on, with a date range and through getMany: each person's own answer redacted", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(Fake.respond(200, echoed(Fake.tokenValue(1))))
        const entries = yield* PersonData.getMany(PersonData.medications, [Fake.PERSON_UID], {
          startDate: "2024-01-01",
          redactEchoedSecrets: true
        }).pipe(Stream.runCollect)
        const [entry] = Chunk.toReadonlyArray(entries)
        expect(entry!.outcome._tag).toBe("Success")
        expect(JSON.stringify(entry!.outcome)).not.toContain(Fake.PERSON_UID)
        expect(JSON.stringify(entry!.outcome)).toContain("for <redacted> with <redacted>")
      })
    ))
})
