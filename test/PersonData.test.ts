/**
 * The person-data operations: one definition each, the same request body ("BaseRequest"), the
 * same envelope, the same machinery. What goes over the wire for each documented operation, how
 * each answer is read, an operation the library does not know, and definitions that are refused.
 */
import { describe, expect, it } from "@effect/vitest"
import { Chunk, Context, Deferred, Effect, Fiber, Metric, Schema, Stream, TestClock, Tracer } from "effect"
import { ClinicalClient, ClinicalError, HttpTransport, MedicationService, PersonData } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
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

describe("PersonData: an operation the library does not know", () => {
  const allergies = PersonData.operation({
    name: "allergies",
    path: "/api/clinical/allergy/get",
    collection: "Allergies"
  })

  it.effect("is one line, and gets the request, the envelope, the retries and the typed errors", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(
          Fake.respond(503, {}),
          Fake.respond(200, { allergies: [{ Substance: "Penicillin" }], success: true }),
          Fake.respond(200, { Success: false, ErrorType: "PersonNotFound", ErrorMessage: "Not found." })
        )
        const { items } = yield* Fake.runWithClock(PersonData.get(allergies, Fake.PERSON_UID))
        expect(items).toEqual([{ Substance: "Penicillin" }])
        const sent = (yield* fake.requests).filter((r) => r.path === "/api/clinical/allergy/get")
        expect(sent).toHaveLength(2)
        expect(JSON.parse(sent[0]!.body!)).toEqual({ personuid: Fake.PERSON_UID })
        expect(yield* Effect.flip(PersonData.get(allergies, Fake.PERSON_UID))).toEqual(
          new ClinicalError.ApiError({
            operation: "allergies",
            method: "POST",
            url: `${Fake.BASE_URL}/api/clinical/allergy/get`,
            status: 200,
            errorType: "PersonNotFound",
            errorMessage: "Not found."
          })
        )
      })
    ))

  it.effect("finds its collection as the only array field named like it, and refuses a body without it", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(
          Fake.respond(200, { AllergyList: [{ Substance: "Latex" }], Notes: [], Success: true }),
          Fake.respond(200, { Success: true }),
          Fake.respond(200, { Allergies: null, Success: true })
        )
        expect((yield* PersonData.get(allergies, Fake.PERSON_UID)).items).toEqual([{ Substance: "Latex" }])
        const error = yield* Effect.flip(PersonData.get(allergies, Fake.PERSON_UID))
        expect(error).toMatchObject({ _tag: "ResponseDecodeError", operation: "allergies" })
        expect(error.message).toContain("no Allergies collection")
        expect((yield* PersonData.get(allergies, Fake.PERSON_UID)).items).toEqual([])
      })
    ))

  it.effect("the name a collection's variant must contain: its stem, not less (issue 24's mutation run)", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        // Each body has a decoy array whose name holds a shorter cut of the collection's name.
        const cases = [
          ["Medications", { MedicationList: [{ a: 1 }], Misc: [] }],
          ["Devices", { DeviceList: [{ a: 1 }], DeviationNotes: [] }],
          ["Allergies", { AllergyList: [{ a: 1 }], AllNotes: [] }],
          ["Udi", { UdiList: [{ a: 1 }], UdMap: [] }]
        ] as const
        for (const [collection, body] of cases) {
          yield* fake.scriptData(Fake.respond(200, { ...body, Success: true }))
          const op = PersonData.operation({ name: "variant", path: "/x", collection })
          expect((yield* PersonData.get(op, Fake.PERSON_UID)).items, collection).toEqual([{ a: 1 }])
        }
      })
    ))

  it.effect("a definition that cannot be used is refused with InvalidRequest naming the field, sending nothing", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const NAME = "must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter"
        const COLLECTION = "must be the name of the payload collection"
        const bad: ReadonlyArray<readonly [PersonData.Operation, string, string | undefined]> = [
          [PersonData.operation({ name: "", path: "/x", collection: "X" }), "operation.name", NAME],
          [PersonData.operation({ name: "has space", path: "/x", collection: "X" }), "operation.name", NAME],
          [PersonData.operation({ name: "x", path: "x", collection: "X" }), "operation.path", undefined],
          [PersonData.operation({ name: "x", path: "/x?y=1", collection: "X" }), "operation.path", undefined],
          [PersonData.operation({ name: "x", path: "/x", collection: "" }), "operation.collection", COLLECTION],
          [
            PersonData.operation({ name: "x", path: "/x", collection: "C".repeat(129) }),
            "operation.collection",
            COLLECTION
          ],
          [PersonData.operation({ name: "x", path: "/x", collection: 5 as never }), "operation.collection", COLLECTION],
          [PersonData.operation(undefined as never), "operation.name", NAME],
          [undefined as never, "operation", "must be a PersonData.operation(...)"],
          [null as never, "operation", "must be a PersonData.operation(...)"]
        ]
        for (const [operation, field, reason] of bad) {
          const error = yield* Effect.flip(PersonData.get(operation, Fake.PERSON_UID))
          expect(error).toMatchObject({ _tag: "InvalidRequest", field, ...(reason === undefined ? {} : { reason }) })
        }
        expect(yield* fake.requests).toHaveLength(0)
        // A collection name of 128 characters is taken.
        yield* fake.scriptData(Fake.respond(200, { ["C".repeat(128)]: [], Success: true }))
        const longest = PersonData.operation({ name: "x", path: "/x", collection: "C".repeat(128) })
        expect((yield* PersonData.get(longest, Fake.PERSON_UID)).items).toEqual([])
      })
    ))

  it.effect("getAs refuses a schema that is not one", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(PersonData.getAs(allergies, {} as Schema.Schema<unknown>, Fake.PERSON_UID))
        expect(error).toMatchObject({ _tag: "InvalidRequest", operation: "allergies", field: "schema" })
        expect(yield* fake.requests).toHaveLength(0)
      })
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

describe("a call's span, each way a fiber can be traced (issue 24's mutation run)", () => {
  it.effect("a PersonUid refused before anything is sent still ends the call's span, as a failure", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const { spans, tracer } = yield* CapturingTracer.make
        const error = yield* Effect.flip(PersonData.get(PersonData.medications, "").pipe(Effect.withTracer(tracer)))
        expect(error).toMatchObject({ _tag: "InvalidRequest", field: "personUid" })
        const call = spans.find((span) => span.name === "PersonData.medications")!
        expect(call.status._tag === "Ended" && call.status.exit._tag).toBe("Failure")
        expect(yield* fake.requests).toHaveLength(0)
      })
    ))

  it.effect("tracing turned off: no span is made, the call is made, and no traceparent is sent (there are no ids to pass)", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* CapturingTracer.make
      const fake = yield* Fake.make()
      const result = yield* PersonData.get(PersonData.medications, Fake.PERSON_UID).pipe(
        Effect.provide(Fake.clientLayer(fake, { tracePropagation: true })),
        Effect.withTracerEnabled(false),
        Effect.withTracer(tracer)
      )
      expect(result.items).toHaveLength(Fake.MEDICATIONS.length)
      expect(spans).toEqual([])
      // Effect's no-op span has no W3C ids ("noop"): a header made of it would be malformed.
      expect((yield* fake.requests).map((request) => request.headers["traceparent"])).toEqual([undefined, undefined])
    }))

  it.effect("a tracer whose ids are not W3C ids (all zeros, as OpenTelemetry's without an SDK; not hex): no traceparent", () =>
    Effect.gen(function*() {
      const { tracer } = yield* CapturingTracer.make
      for (
        const [traceId, spanId] of [["0".repeat(32), "0".repeat(16)], ["x".repeat(32), "1".repeat(16)], [
          "a".repeat(32),
          "b".repeat(15)
        ]]
      ) {
        const odd = Tracer.make({
          span: (...args) => Object.assign(tracer.span(...args), { traceId, spanId }),
          context: tracer.context
        })
        const fake = yield* Fake.make()
        yield* PersonData.get(PersonData.medications, Fake.PERSON_UID).pipe(
          Effect.provide(Fake.clientLayer(fake, { tracePropagation: true })),
          Effect.withTracer(odd)
        )
        const sent = (yield* fake.requests).map((request) => request.headers["traceparent"])
        expect(sent, traceId).toEqual([undefined, undefined])
      }
    }))

  it.effect("under a span that is not propagated (Effect's DisablePropagation): the call's spans start a trace of their own", () =>
    Effect.gen(function*() {
      const { spans, tracer } = yield* CapturingTracer.make
      const fake = yield* Fake.make()
      yield* PersonData.get(PersonData.medications, Fake.PERSON_UID).pipe(
        Effect.provide(Fake.clientLayer(fake, { tracePropagation: true })),
        Effect.withSpan("quiet", { context: Context.make(Tracer.DisablePropagation, true) }),
        Effect.withTracer(tracer)
      )
      // As Effect.withSpan makes them: the quiet span is no parent; the call's span is a root,
      // with its attributes and no stack trace; the attempts are its children, and their ids go out.
      const call = spans.find((span) => span.name === "PersonData.medications")!
      expect(call.parent._tag).toBe("None")
      expect(Object.fromEntries(call.attributes)).toEqual({
        "clinical.operation": "medications",
        "clinical.attempts": 1,
        "http.response.status_code": 200
      })
      const attempts = spans.filter((span) => span.kind === "client")
      expect(attempts).toHaveLength(2)
      const data = attempts.find((span) =>
        span.attributes.get("url.full") === `${Fake.BASE_URL}/api/clinical/medication/get`
      )!
      expect(data.parent).toMatchObject({ _tag: "Some", value: { spanId: call.spanId } })
      expect((yield* fake.requests).map((request) => request.headers["traceparent"])).toEqual(
        attempts.map((span) => `00-${span.traceId}-${span.spanId}-01`)
      )
    }))

  it.effect("getAs refuses a schema that is not one, naming why", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(
          PersonData.getAs(PersonData.medications, "not a schema" as never, Fake.PERSON_UID)
        )
        expect(error).toMatchObject({ _tag: "InvalidRequest", field: "schema", reason: "must be a Schema" })
        expect(yield* fake.requests).toHaveLength(0)
      })
    ))
})

describe("code of the caller's that throws on the common path: the call dies, never hangs, its turn given back", () => {
  const boom = new Error("boom")
  const Throwing = Schema.transform(Schema.Unknown, Schema.Unknown, {
    decode: () => {
      throw boom
    },
    encode: (value) => value
  })
  const person = MockClinicalServer.fixturePersons[0]!.personUid

  /** A tracer that throws from `where` for client (HTTP attempt) spans while `armed()`. */
  const throwingTracer = (where: "span" | "end", armed: () => boolean) =>
    Effect.map(CapturingTracer.make, ({ tracer }) =>
      Tracer.make({
        span: (name, parent, context, links, startTime, kind, options) => {
          if (where === "span" && kind === "client" && armed()) throw boom
          const span = tracer.span(name, parent, context, links, startTime, kind, options)
          if (where === "end" && kind === "client") {
            const end = span.end.bind(span)
            return Object.assign(span, {
              end: (...args: Parameters<typeof end>) => {
                if (armed()) throw boom
                end(...args)
              }
            })
          }
          return span
        },
        context: tracer.context
      }))

  /** Runs `body` against a loopback mock over undici, one request at a time, each call bounded by 5 s. */
  const overUndici = <A>(body: Effect.Effect<A, ClinicalError.ClinicalError, ClinicalClient.Services>) =>
    Effect.gen(function*() {
      const mock = yield* Effect.acquireRelease(
        Effect.promise(() => MockClinicalServer.start()),
        (started) => Effect.promise(() => started.close())
      )
      return yield* body.pipe(
        Effect.provide(
          ClinicalClient.layerUndici({ baseUrl: mock.url, applicationId: mock.applicationId, maxConcurrentRequests: 1 })
        ),
        Effect.timeout("5 seconds"),
        Effect.orDie
      )
    }).pipe(Effect.scoped)

  it.live(
    "a Schema that throws, whether the token was cached (the common path) or not; then a call that decodes",
    () =>
      overUndici(Effect.gen(function*() {
        for (let call = 0; call < 3; call++) {
          const exit = yield* Effect.exit(PersonData.getAs(PersonData.medications, Throwing, person))
          expect(exit).toMatchObject({ _tag: "Failure", cause: { _tag: "Die", defect: boom } })
        }
        // The one turn was given back each time.
        const { items } = yield* PersonData.getAs(PersonData.medications, Schema.Unknown, person)
        expect(items).toEqual(MockClinicalServer.fixturePersons[0]!.medications)
      })),
    { timeout: 20_000 }
  )

  it.live(
    "a tracer whose attempt span throws when it ends, or when it is made; then calls with it well again",
    () =>
      Effect.gen(function*() {
        for (const where of ["end", "span"] as const) {
          let armed = false
          const tracer = yield* throwingTracer(where, () => armed)
          yield* overUndici(
            Effect.gen(function*() {
              yield* PersonData.get(PersonData.medications, person) // the token cached: the common path next
              armed = true
              const exit = yield* Effect.exit(PersonData.get(PersonData.medications, person))
              expect(exit, where).toMatchObject({ _tag: "Failure", cause: { _tag: "Die", defect: boom } })
              armed = false
              const { items } = yield* PersonData.get(PersonData.medications, person)
              expect(items, where).toEqual(MockClinicalServer.fixturePersons[0]!.medications)
            }).pipe(Effect.withTracer(tracer))
          )
        }
      }),
    { timeout: 30_000 }
  )

  it.live(
    "a queued call whose span throws when its turn comes: it dies, and the call that gave the turn ends well",
    () =>
      Effect.gen(function*() {
        let calls = 0
        // The second attempt span made after the warm-up throws: the queued call's.
        const tracer = yield* throwingTracer("span", () => calls > 0 && ++calls === 3)
        yield* overUndici(
          Effect.gen(function*() {
            yield* PersonData.get(PersonData.medications, person)
            calls = 1
            const [holder, queued] = yield* Effect.all([
              Effect.exit(PersonData.get(PersonData.medications, person)),
              Effect.exit(PersonData.get(PersonData.medications, person))
            ], { concurrency: 2 })
            expect(holder).toMatchObject({ _tag: "Success" })
            expect(queued).toMatchObject({ _tag: "Failure", cause: { _tag: "Die", defect: boom } })
          }).pipe(Effect.withTracer(tracer))
        )
      }),
    { timeout: 20_000 }
  )
})
