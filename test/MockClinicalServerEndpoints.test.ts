/**
 * The mock's endpoints, in memory: the token endpoint (tokens shaped like the real ones, the
 * documented headers, refusals) and the person-data endpoints (the envelope, dates, refused tokens,
 * unknown persons, authentication by pass code).
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { HttpDate } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import {
  APP,
  BASE,
  ELEANOR,
  getToken,
  json,
  MARCUS,
  medicationRequest,
  post,
  tokenRequest,
  withMock
} from "./support/mockServerFixtures.js"

describe("MockClinicalServer token endpoint", () => {
  it.effect("issues tokens shaped like the real ones, with the documented headers", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        yield* TestClock.setTime(Date.UTC(2026, 10, 22, 8))
        const response = yield* mock.handle(tokenRequest)
        expect(response.status).toBe(200)
        const body = json(response)
        expect(body.TokenType).toBe("Bearer")
        expect(body.Token).toHaveLength(112)
        expect(body.Token).toMatch(/^[A-Za-z0-9+/=]+$/)
        for (const char of ["/", "+", "="]) expect(body.Token).toContain(char)
        expect(response.headers).toMatchObject({
          token_expires: "Sun, 22 Nov 2026 09:00:00 GMT",
          date: "Sun, 22 Nov 2026 08:00:00 GMT",
          "cache-control": "no-cache",
          pragma: "no-cache",
          expires: "-1",
          "content-type": "application/json; charset=utf-8"
        })
        expect(yield* getToken(mock)).not.toBe(body.Token)
      })
    ))

  it.effect("matches paths case-insensitively and accepts the lower-case spelling", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        for (const path of ["/api/server/token", "/API/SERVER/TOKEN", "/api/Server/Token"]) {
          expect((yield* mock.handle(post(path, { ApplicationId: APP }))).status).toBe(200)
        }
        expect((yield* mock.counters).tokenRequests).toBe(3)
      })
    ))

  it.effect("answers 405 to anything but POST, and 404 to unknown paths", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        for (const method of ["GET", "PUT", "DELETE"] as const) {
          expect((yield* mock.handle({ method, url: `${BASE}/api/Server/Token`, headers: {} })).status).toBe(405)
        }
        expect((yield* mock.handle(post("/api/other", {}))).status).toBe(404)
      })
    ))

  it.effect("refuses unknown or malformed ApplicationIds with 401 and bad JSON with 400", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        const statuses = yield* Effect.all([
          mock.handle(post("/api/Server/Token", { ApplicationId: "00000000-0000-0000-0000-000000000000" })),
          mock.handle(post("/api/Server/Token", { ApplicationId: "not-a-guid" })),
          mock.handle(post("/api/Server/Token", {})),
          mock.handle(post("/api/Server/Token", "{not json")),
          mock.handle(post("/api/Server/Token", { ApplicationId: APP.toUpperCase() }))
        ])
        expect(statuses.map((r) => r.status)).toEqual([401, 401, 401, 400, 200])
        expect((yield* mock.counters).tokensIssued).toBe(1)
      })
    ))

  it.effect("accepts configured ApplicationIds and a configured token lifetime", () =>
    withMock(
      (mock) =>
        Effect.gen(function*() {
          const other = "11111111-2222-3333-4444-555555555555"
          const response = yield* mock.handle(post("/api/Server/Token", { ApplicationId: other }))
          expect(response.headers.token_expires).toBe(HttpDate.format(5 * 60_000))
          yield* mock.setTokenLifetime("2 minutes")
          const second = yield* mock.handle(post("/api/Server/Token", { ApplicationId: other }))
          expect(second.headers.token_expires).toBe(HttpDate.format(2 * 60_000))
          expect((yield* mock.handle(tokenRequest)).status).toBe(401)
        }),
      { applicationIds: ["11111111-2222-3333-4444-555555555555"], tokenLifetime: "5 minutes" }
    ))

  it.effect("a server clock offset moves Date and TOKEN_EXPIRES together", () =>
    withMock(
      (mock) =>
        Effect.gen(function*() {
          const response = yield* mock.handle(tokenRequest)
          expect(response.headers.date).toBe(HttpDate.format(3_600_000))
          expect(response.headers.token_expires).toBe(HttpDate.format(7_200_000))
        }),
      { clockOffsetMillis: 3_600_000 }
    ))
})

describe("MockClinicalServer medications", () => {
  it.effect("answers the envelope with the person's medications", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        const token = yield* getToken(mock)
        const response = yield* mock.handle(medicationRequest(token))
        expect(response.status).toBe(200)
        expect(json(response)).toEqual({
          Medications: ELEANOR!.medications,
          Success: true,
          ErrorMessage: null,
          ErrorType: null
        })
        const spelled = yield* mock.handle(medicationRequest(token, { PersonUid: MARCUS!.personUid }))
        expect(json(spelled).Medications).toEqual(MARCUS!.medications)
      })
    ))

  it.effect("filters by start date with StartDate and EndDate", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        const token = yield* getToken(mock)
        const names = (body: object) =>
          Effect.map(
            mock.handle(medicationRequest(token, { personuid: ELEANOR!.personUid, ...body })),
            (r) => json(r).Medications.map((m: { Name: string }) => m.Name)
          )
        expect(yield* names({ StartDate: "2021-01-01" })).toEqual(["Atorvastatin Calcium", "Aspirin", "Amoxicillin"])
        expect(yield* names({ EndDate: "2020-01-15" })).toEqual(["Lisinopril", "Metformin Hydrochloride"])
        expect(yield* names({ StartDate: "2021-06-30", EndDate: "2021-06-30T12:00:00" })).toEqual([
          "Atorvastatin Calcium",
          "Aspirin"
        ])
        const bad = yield* mock.handle(medicationRequest(token, { personuid: ELEANOR!.personUid, StartDate: "soon" }))
        expect(bad.status).toBe(400)
      })
    ))

  it.effect("401 for a missing or unknown token or a mismatched ApplicationId, 419 for an expired token", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        const token = yield* getToken(mock)
        const noAuth = post("/api/clinical/medication/get", { personuid: ELEANOR!.personUid }, { ApplicationId: APP })
        const noApp = post("/api/clinical/medication/get", { personuid: ELEANOR!.personUid }, {
          Authorization: `Bearer ${token}`
        })
        const statuses = yield* Effect.all([
          mock.handle(noAuth),
          mock.handle(medicationRequest("unknown-token")),
          mock.handle(noApp),
          mock.handle(medicationRequest(token, undefined, "11111111-2222-3333-4444-555555555555"))
        ])
        expect(statuses.map((r) => r.status)).toEqual([401, 401, 401, 401])
        yield* TestClock.adjust("1 hour")
        expect((yield* mock.handle(medicationRequest(token))).status).toBe(419)
      })
    ))

  it.effect("400 for a missing personuid and 400 with the envelope for an unknown person", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        const token = yield* getToken(mock)
        const missing = yield* mock.handle(medicationRequest(token, {}))
        expect(missing.status).toBe(400)
        expect(json(missing)).toMatchObject({ Success: false, ErrorType: "MissingData" })
        const unknown = yield* mock.handle(medicationRequest(token, { personuid: "nobody" }))
        expect(unknown.status).toBe(400)
        expect(json(unknown)).toEqual({
          Medications: null,
          Success: false,
          ErrorMessage: "The person could not be found.",
          ErrorType: "PersonNotFound"
        })
        expect((yield* mock.handle(medicationRequest(token, "{{"))).status).toBe(400)
      })
    ))

  it.effect("revoking all tokens makes every issued token unknown", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        const token = yield* getToken(mock)
        yield* mock.revokeAllTokens
        expect((yield* mock.handle(medicationRequest(token))).status).toBe(401)
      })
    ))

  it.effect("authenticates a person by PassCode and date of birth", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        const token = yield* getToken(mock)
        const headers = { Authorization: `Bearer ${token}`, ApplicationId: APP }
        const ok = yield* mock.handle(
          post("/api/server/authenticate", {
            ApplicationId: APP,
            PassCode: MARCUS!.passCode,
            DateOfBirth: MARCUS!.dateOfBirth
          }, headers)
        )
        expect(json(ok).PersonUid).toBe(MARCUS!.personUid)
        const wrong = yield* mock.handle(
          post("/api/server/authenticate", { ApplicationId: APP, PassCode: "x", DateOfBirth: "01/01/1945" }, headers)
        )
        expect(wrong.status).toBe(400)
        expect(json(wrong)).toMatchObject({ Success: false, ErrorType: "AuthenticationFailed", PersonUid: null })
      })
    ))

  it.effect("answers every person-data operation with the person's invented items, in the envelope", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        const token = yield* getToken(mock)
        const headers = { Authorization: `Bearer ${token}`, ApplicationId: APP }
        const ask = (operation: keyof typeof MockClinicalServer.paths, personUid: string) =>
          Effect.map(mock.handle(post(MockClinicalServer.paths[operation], { PersonUid: personUid }, headers)), json)
        expect(yield* ask("ethnicities", MARCUS!.personUid)).toEqual({
          Ethnicities: [{ Name: "Hispanic or Latino", Code: "2135-2" }],
          Success: true,
          ErrorMessage: null,
          ErrorType: null
        })
        expect((yield* ask("detailedEthnicities", MARCUS!.personUid)).Ethnicities).toEqual([
          { Name: "Mexican", Code: "2148-5" }
        ])
        expect((yield* ask("uniqueDeviceIdentifiers", ELEANOR!.personUid)).UniqueDeviceIdentifier).toEqual(
          ELEANOR!.uniqueDeviceIdentifiers
        )
        expect(yield* ask("uniqueDeviceIdentifiers", MockClinicalServer.fixturePersons[2]!.personUid))
          .toMatchObject({ UniqueDeviceIdentifier: [], Success: true })
        expect(yield* ask("ethnicities", "nobody")).toMatchObject({
          Ethnicities: null,
          Success: false,
          ErrorType: "PersonNotFound"
        })
        const counters = yield* mock.counters
        expect(counters.requestsByOperation).toEqual({
          token: 1,
          authenticate: 0,
          medications: 0,
          ethnicities: 2,
          detailedEthnicities: 1,
          uniqueDeviceIdentifiers: 2
        })
        expect(counters.dataRequests).toBe(5)
      })
    ))

  it.effect("a person supplied without ethnicities or devices has none", () =>
    withMock(
      (mock) =>
        Effect.gen(function*() {
          const token = yield* getToken(mock)
          const response = yield* mock.handle(
            post(MockClinicalServer.paths.ethnicities, { PersonUid: "p1" }, {
              Authorization: `Bearer ${token}`,
              ApplicationId: APP
            })
          )
          expect(json(response)).toMatchObject({ Ethnicities: [], Success: true })
        }),
      {
        persons: [{
          personUid: "p1",
          passCode: "P-1",
          dateOfBirth: "01/01/1980",
          displayName: "Test",
          medications: []
        }]
      }
    ))

  it.effect("serves persons the caller supplies", () =>
    withMock(
      (mock) =>
        Effect.gen(function*() {
          const token = yield* getToken(mock)
          const response = yield* mock.handle(medicationRequest(token, { personuid: "custom-uid" }))
          expect(json(response).Medications).toEqual([{ ...ELEANOR!.medications[0]!, Name: "Custom" }])
        }),
      {
        persons: [{
          personUid: "custom-uid",
          passCode: "P",
          dateOfBirth: "01/01/1950",
          displayName: "Custom",
          medications: [{ ...ELEANOR!.medications[0]!, Name: "Custom" }]
        }]
      }
    ))
})
