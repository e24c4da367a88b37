import { describe, expect, it } from "@effect/vitest"
import { Effect, Redacted, Schema, TestClock } from "effect"
import { ClinicalError, HttpTransport, MedicationService } from "effect-clinical"
import * as Fake from "./support/FakeService.js"

/** Where every medication request goes: errors show it. */
const medicationsUrl = { method: "POST", url: `${Fake.BASE_URL}${Fake.MEDICATION_PATH}` }

describe("MedicationService wire format", () => {
  it.effect("sends the token request, then the medication request, exactly as the interface specifies", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const result = yield* MedicationService.get(Fake.PERSON_UID, { startDate: "2024-01-01", endDate: "2024-12-31" })
        expect(result.medications).toEqual(Fake.MEDICATIONS)

        const [token, data] = yield* fake.requests
        expect(token).toEqual({
          at: 0,
          method: "POST",
          url: `${Fake.AUTH_URL}/api/Server/Token`,
          path: "/api/Server/Token",
          headers: { "Content-Type": "application/json", "Accept-Encoding": "identity" },
          body: JSON.stringify({ ApplicationId: Fake.APPLICATION_ID })
        })
        expect(data).toEqual({
          at: 0,
          method: "POST",
          url: `${Fake.BASE_URL}/api/clinical/medication/get`,
          path: "/api/clinical/medication/get",
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

  it.effect("sends only personuid when no dates are given, and reuses the cached token", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* MedicationService.get(Fake.PERSON_UID)
        yield* MedicationService.get(Redacted.make(Fake.PERSON_UID))
        const data = yield* fake.dataRequests
        expect(data.map((r) => r.body)).toEqual([
          JSON.stringify({ personuid: Fake.PERSON_UID }),
          JSON.stringify({ personuid: Fake.PERSON_UID })
        ])
        expect(yield* fake.tokenRequests).toHaveLength(1)
      })
    ))

  it.effect("formats Date bounds as their UTC calendar day", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* MedicationService.get(Fake.PERSON_UID, {
          startDate: new Date(Date.UTC(2024, 1, 29, 23, 59)),
          endDate: new Date(Date.UTC(2025, 0, 2))
        })
        const [data] = yield* fake.dataRequests
        expect(JSON.parse(data!.body!)).toEqual({
          personuid: Fake.PERSON_UID,
          StartDate: "2024-02-29",
          EndDate: "2025-01-02"
        })
      })
    ))

  it.effect("joins a base URL with a path prefix and trailing slash", () =>
    Fake.withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* MedicationService.get(Fake.PERSON_UID)
          const urls = (yield* fake.requests).map((r) => r.url)
          expect(urls).toEqual([
            "https://auth.example.org/token-service/api/Server/Token",
            "https://gateway.example.org/prefix/api/clinical/medication/get"
          ])
        }),
      { baseUrl: "https://gateway.example.org/prefix/", authUrl: "https://auth.example.org/token-service//" }
    ))
})

describe("MedicationService response decoding", () => {
  const envelope = (medications: unknown, extra: Record<string, unknown> = {}) => ({
    Medications: medications,
    Success: true,
    ErrorMessage: null,
    ErrorType: null,
    ...extra
  })

  it.effect("keeps every field of every item and the raw body", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const items = [{ Name: "Aspirin", Unknown: { nested: [1, 2] }, Dose: null }]
        const body = envelope(items, { ServerExtra: "kept" })
        yield* fake.scriptData(Fake.respond(200, body))
        const result = yield* MedicationService.get(Fake.PERSON_UID)
        expect(result.medications).toEqual(items)
        expect(result.raw).toEqual(body)
      })
    ))

  it.effect("finds the collection case-insensitively, in a bare array, or as the only array field", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(
          Fake.respond(200, { medications: [{ a: 1 }], success: true }),
          Fake.respond(200, [{ b: 2 }]),
          Fake.respond(200, { MedicationList: [{ c: 3 }], Success: true, ErrorMessage: null }),
          Fake.respond(200, { Medications: null, Success: true })
        )
        const got = yield* Effect.all(Array.from({ length: 4 }, () => MedicationService.get(Fake.PERSON_UID)))
        expect(got.map((r) => r.medications)).toEqual([[{ a: 1 }], [{ b: 2 }], [{ c: 3 }], []])
      })
    ))

  it.effect("two arrays named like the collection, and none exactly, is a ResponseDecodeError, not a guess (issue 24's audit)", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(
          Fake.respond(200, { ActiveMedications: [{ a: 1 }], PastMedications: [{ b: 2 }], Success: true })
        )
        const error = yield* Effect.flip(MedicationService.get(Fake.PERSON_UID))
        expect(error).toBeInstanceOf(ClinicalError.ResponseDecodeError)
        expect(error.message).toContain(
          "the body has 2 arrays named like Medications and none exactly: which holds it is unclear"
        )
      })
    ))

  it.effect("decodes items with the caller's Schema", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const Med = Schema.Struct({ Name: Schema.String, StartDate: Schema.optional(Schema.Date) })
        const result = yield* MedicationService.getAs(Med, Fake.PERSON_UID)
        expect(result.medications[0]).toEqual({ Name: "Lisinopril", StartDate: new Date("2024-01-05") })
        expect(result.medications).toHaveLength(2)

        yield* fake.scriptData(Fake.respond(200, envelope([{ Name: "ok" }, { Dose: "secret-dose-value" }])))
        const error = yield* Effect.flip(MedicationService.getAs(Med, Fake.PERSON_UID))
        expect(error).toBeInstanceOf(ClinicalError.ResponseDecodeError)
        expect(error.message).toContain("Medications[1].Name is missing")
        expect(String(error)).not.toContain("secret-dose-value")
      })
    ))

  it.effect("Success: false is an ApiError with the server's ErrorType and ErrorMessage, whatever the status", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        const failure = { Success: false, ErrorType: "PersonNotFound", ErrorMessage: "No such person", Medications: [] }
        yield* fake.scriptData(Fake.respond(200, failure), Fake.respond(400, failure), Fake.respond(500, failure))
        for (const status of [200, 400, 500]) {
          const error = yield* Effect.flip(MedicationService.get(Fake.PERSON_UID))
          expect(error).toEqual(
            new ClinicalError.ApiError({
              operation: "medications",
              method: "POST",
              url: `${Fake.BASE_URL}${Fake.MEDICATION_PATH}`,
              status,
              errorType: "PersonNotFound",
              errorMessage: "No such person"
            })
          )
        }
      })
    ))

  it.effect("scrubs the PersonUid, the token and the ApplicationId out of a server's ErrorMessage", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData((request) =>
          Effect.succeed(HttpTransport.jsonResponse(400, {
            Success: false,
            ErrorType: "Invalid",
            ErrorMessage: `person ${Fake.PERSON_UID} app ${Fake.APPLICATION_ID} ${
              HttpTransport.wireHeader(request, "Authorization")
            }`
          }))
        )
        const error = yield* Effect.flip(MedicationService.get(Fake.PERSON_UID))
        expect(error).toBeInstanceOf(ClinicalError.ApiError)
        expect((error as ClinicalError.ApiError).errorMessage).toBe(
          "person <redacted> app <redacted> Bearer <redacted>"
        )
      })
    ))

  const decodeFailures: ReadonlyArray<readonly [string, string, string]> = [
    ["a body that is not JSON", "<html>oops</html>", "the body is not JSON"],
    ["an empty body", "", "the body is not JSON"],
    ["a JSON string", "\"hello\"", "neither a JSON object nor an array"],
    ["Medications that is not an array", "{\"Medications\":{\"a\":1},\"Success\":true}", "Medications is not an array"],
    ["no collection at all", "{\"Success\":true}", "no Medications collection"],
    ["items that are not objects", "{\"Medications\":[1,\"x\"],\"Success\":true}", "Medications[0] has the wrong type"]
  ]
  for (const [name, body, reason] of decodeFailures) {
    it.effect(`${name} is a ResponseDecodeError`, () =>
      Fake.withClient((fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(() => Effect.succeed({ status: 200, headers: {}, body }))
          const error = yield* Effect.flip(MedicationService.get(Fake.PERSON_UID))
          expect(error._tag).toBe("ResponseDecodeError")
          expect(error.message).toContain(reason)
        })
      ))
  }
})

describe("MedicationService status mapping (retries off, so that each response is the call's answer)", () => {
  const noRetries = { maxRetries: 0 }
  const cases: ReadonlyArray<readonly [number, string]> = [
    [400, "BadRequest"],
    [404, "UnexpectedStatus"],
    [405, "UnexpectedStatus"],
    [429, "RateLimited"],
    [500, "ServerError"],
    [502, "ServerError"],
    [503, "ServerError"],
    [504, "ServerError"],
    [302, "UnexpectedStatus"]
  ]
  for (const [status, tag] of cases) {
    it.effect(`HTTP ${status} gives ${tag}`, () =>
      Fake.withClient((fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(Fake.respond(status, { Message: "nope" }))
          const error = yield* Effect.flip(MedicationService.get(Fake.PERSON_UID))
          expect(error._tag).toBe(tag)
          expect(error).toMatchObject({ operation: "medications", status })
        }), noRetries))
  }

  it.effect("429 carries Retry-After in seconds or as an HTTP date", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.UTC(2026, 10, 22, 8, 0, 0))
        yield* fake.scriptData(
          Fake.respond(429, {}, { "Retry-After": "7" }),
          Fake.respond(429, {}, { "Retry-After": "Sun, 22 Nov 2026 08:00:30 GMT" }),
          Fake.respond(429, {}, { "Retry-After": "soon" }),
          Fake.respond(503, {}, { "Retry-After": "2" })
        )
        const errors = yield* Effect.all(
          Array.from({ length: 4 }, () => Effect.flip(MedicationService.get(Fake.PERSON_UID)))
        )
        expect(errors.map((e) => (e as ClinicalError.RateLimited).retryAfterMillis)).toEqual([
          7000,
          30000,
          undefined,
          2000
        ])
        expect(errors.map((e) => e._tag)).toEqual(["RateLimited", "RateLimited", "RateLimited", "ServerError"])
      }), noRetries))

  it.effect("a transport failure is a TransportError naming the operation", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData((request) =>
          Effect.fail(HttpTransport.transportError(request, "Network", "ECONNRESET: socket hang up"))
        )
        const error = yield* Effect.flip(MedicationService.get(Fake.PERSON_UID))
        expect(error).toEqual(
          new ClinicalError.TransportError({
            operation: "medications",
            reason: "Network",
            method: "POST",
            url: `${Fake.BASE_URL}/api/clinical/medication/get`,
            detail: "ECONNRESET: socket hang up"
          })
        )
      }), noRetries))

  it.effect("an attempt slower than requestTimeout is a Timeout TransportError", () =>
    Fake.withClient(
      (fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(() => Effect.never)
          const fiber = yield* Effect.fork(Effect.flip(MedicationService.get(Fake.PERSON_UID)))
          yield* TestClock.adjust("2 seconds")
          const error = yield* fiber
          expect(error).toMatchObject({ _tag: "TransportError", reason: "Timeout", operation: "medications" })
        }),
      { requestTimeout: "2 seconds", maxRetries: 0 }
    ))
})

describe("MedicationService 401 and 419", () => {
  for (const status of [401, 419]) {
    it.effect(`${status} then success: one refresh, one retry with the new token`, () =>
      Fake.withClient((fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(Fake.respond(status, {}))
          const result = yield* MedicationService.get(Fake.PERSON_UID)
          expect(result.medications).toHaveLength(2)
          const data = yield* fake.dataRequests
          expect(data.map((r) => r.headers.Authorization)).toEqual([
            `Bearer ${Fake.tokenValue(1)}`,
            `Bearer ${Fake.tokenValue(2)}`
          ])
          expect(yield* fake.tokenRequests).toHaveLength(2)
        })
      ))
  }

  const twice = [
    [401, new ClinicalError.Unauthorized({ operation: "medications", ...medicationsUrl, status: 401 })],
    [419, new ClinicalError.TokenExpired({ operation: "medications", ...medicationsUrl, status: 419 })]
  ] as const
  for (const [status, expected] of twice) {
    it.effect(`${status} twice gives ${expected._tag} after exactly two data requests and two token requests`, () =>
      Fake.withClient((fake) =>
        Effect.gen(function*() {
          yield* fake.scriptData(Fake.respond(status, {}), Fake.respond(status, {}))
          const error = yield* Effect.flip(MedicationService.get(Fake.PERSON_UID))
          expect(error).toEqual(expected)
          expect(yield* fake.dataRequests).toHaveLength(2)
          expect(yield* fake.tokenRequests).toHaveLength(2)
        })
      ))
  }

  it.effect("tokens revoked on the server: every caller recovers with a single shared refresh", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* MedicationService.get(Fake.PERSON_UID)
        yield* fake.revokeAll
        const results = yield* Effect.all(
          Array.from({ length: 50 }, () => MedicationService.get(Fake.PERSON_UID)),
          { concurrency: "unbounded" }
        )
        expect(results).toHaveLength(50)
        expect(yield* fake.tokenRequests).toHaveLength(2)
      })
    ))
})

describe("MedicationService input checks", () => {
  const refused: ReadonlyArray<readonly [string, unknown, Record<string, unknown> | undefined, string]> = [
    ["an empty PersonUid", "", undefined, "personUid"],
    ["a blank PersonUid", "   ", undefined, "personUid"],
    ["a PersonUid with CR/LF", "abc\r\nX-Injected: 1", undefined, "personUid"],
    ["a PersonUid with a NUL", "abc\u0000", undefined, "personUid"],
    ["a non-ASCII PersonUid", "pérson", undefined, "personUid"],
    ["a very long PersonUid", "a".repeat(5000), undefined, "personUid"],
    ["a PersonUid that is not a string", 42, undefined, "personUid"],
    ["a redacted empty PersonUid", Redacted.make(""), undefined, "personUid"],
    ["a malformed startDate", Fake.PERSON_UID, { startDate: "01/02/2024" }, "startDate"],
    ["an impossible endDate", Fake.PERSON_UID, { endDate: "2023-02-29" }, "endDate"],
    ["an invalid Date", Fake.PERSON_UID, { startDate: new Date("nope") }, "startDate"],
    [
      "a range that ends before it starts",
      Fake.PERSON_UID,
      { startDate: "2024-02-01", endDate: "2024-01-01" },
      "startDate"
    ]
  ]
  for (const [name, personUid, options, field] of refused) {
    it.effect(`${name} is refused with InvalidRequest before anything is sent`, () =>
      Fake.withClient((fake) =>
        Effect.gen(function*() {
          const error = yield* Effect.flip(
            MedicationService.get(personUid as string, options as MedicationService.GetOptions)
          )
          expect(error).toBeInstanceOf(ClinicalError.InvalidRequest)
          expect(error).toMatchObject({ operation: "medications", field })
          expect(yield* fake.requests).toHaveLength(0)
        })
      ))
  }

  it.effect("never echoes the refused value", () =>
    Fake.withClient(() =>
      Effect.gen(function*() {
        const error = yield* Effect.flip(MedicationService.get("leaky-value\n"))
        expect(error._tag).toBe("InvalidRequest")
        expect(String(error)).not.toContain("leaky-value")
        expect(JSON.stringify(error)).not.toContain("leaky-value")
      })
    ))
})

describe("MedicationService layers", () => {
  it.effect("ClinicalClient.layer fails with InvalidConfig for a bad setting", () =>
    Effect.gen(function*() {
      const fake = yield* Fake.make()
      const error = yield* Effect.flip(
        MedicationService.get(Fake.PERSON_UID).pipe(
          Effect.provide(Fake.clientLayer(fake, { applicationId: "not-a-guid" }))
        )
      )
      expect(error).toMatchObject({ _tag: "InvalidConfig", setting: "applicationId" })
    }))
})

describe("error messages say where and what to check", () => {
  it.effect("every HTTP error names the method and the URL it went to", () =>
    Fake.withClient(
      (fake) =>
        Effect.gen(function*() {
          const answers = [400, 404, 405, 429, 500, 503].map((status) => Fake.respond(status, {}))
          yield* fake.scriptData(...answers, Fake.respond(200, "<html>not json</html>"))
          for (let i = 0; i < answers.length + 1; i++) {
            const error = yield* Effect.flip(MedicationService.get(Fake.PERSON_UID))
            expect(error.message).toContain(`medications request POST ${Fake.BASE_URL}${Fake.MEDICATION_PATH} (HTTP `)
            expect(error).toMatchObject({ method: "POST", url: `${Fake.BASE_URL}${Fake.MEDICATION_PATH}` })
          }
        }),
      { maxRetries: 0 }
    ))

  it.effect("a refused ApplicationId names the token host and says what to check", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptToken(Fake.respond(401, {}), Fake.respond(400, {}))
        for (const status of [401, 400]) {
          const error = yield* Effect.flip(MedicationService.get(Fake.PERSON_UID))
          expect(error.message).toBe(
            `token request POST ${Fake.AUTH_URL}/api/Server/Token (HTTP ${status}) was refused ${
              status === 401 ? "as unauthorized" : "as a bad request"
            }: the token host refused the ApplicationId. Check the ApplicationId (applicationId, ` +
              "CLINICAL_APPLICATION_ID) and that the token host (authUrl) and the data host (baseUrl) belong to the " +
              "same environment, test or production"
          )
        }
      })
    ))

  it.effect("a fresh token refused by the data host points at the environments", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* fake.scriptData(Fake.respond(401, {}), Fake.respond(401, {}))
        const error = yield* Effect.flip(MedicationService.get(Fake.PERSON_UID))
        expect(error.message).toContain("was refused as unauthorized, with a fresh token too")
        expect(error.message).toContain("belong to the same environment, test or production")
      })
    ))
})

describe("input boundaries", () => {
  it.effect("a PersonUid of 2,048 characters is sent; one of 2,049 is refused before sending", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* MedicationService.get("A".repeat(2_048))
        expect(yield* fake.dataRequests).toHaveLength(1)
        const error = yield* Effect.flip(MedicationService.get("A".repeat(2_049)))
        expect(error).toMatchObject({
          _tag: "InvalidRequest",
          field: "personUid",
          reason: "is longer than 2048 characters"
        })
        expect(yield* fake.dataRequests).toHaveLength(1)
      })
    ))

  it.effect("a one-day range (start = end) is sent; year 0000 is refused", () =>
    Fake.withClient((fake) =>
      Effect.gen(function*() {
        yield* MedicationService.get(Fake.PERSON_UID, { startDate: "2024-03-01", endDate: "2024-03-01" })
        expect(JSON.parse((yield* fake.dataRequests)[0]!.body!)).toMatchObject({
          StartDate: "2024-03-01",
          EndDate: "2024-03-01"
        })
        for (const field of ["startDate", "endDate"] as const) {
          const error = yield* Effect.flip(MedicationService.get(Fake.PERSON_UID, { [field]: "0000-01-01" }))
          expect(error).toMatchObject({ _tag: "InvalidRequest", field, reason: "is not a real calendar date" })
        }
        expect(yield* fake.dataRequests).toHaveLength(1)
      })
    ))
})
