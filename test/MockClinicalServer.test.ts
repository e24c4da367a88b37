import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { ClinicalClient, ClinicalError, HttpDate, HttpTransport, MedicationService } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import { execFile } from "node:child_process"
import * as Path from "node:path"

const APP = MockClinicalServer.demoApplicationId
const [ELEANOR, MARCUS] = MockClinicalServer.fixturePersons
const BASE = "http://127.0.0.1:1"

const post = (path: string, body: unknown, headers: Record<string, string> = {}): HttpTransport.TransportRequest => ({
  method: "POST",
  url: `${BASE}${path}`,
  headers: { "Content-Type": "application/json", ...headers },
  body: typeof body === "string" ? body : JSON.stringify(body)
})

const tokenRequest = post("/api/Server/Token", { ApplicationId: APP })

const withMock = <A, E>(
  body: (mock: MockClinicalServer.Service) => Effect.Effect<A, E>,
  options?: MockClinicalServer.Options
) => Effect.flatMap(MockClinicalServer.make(options), body)

const json = (response: HttpTransport.TransportResponse) => JSON.parse(response.body)

const getToken = (mock: MockClinicalServer.Service) =>
  Effect.map(mock.handle(tokenRequest), (response) => json(response).Token as string)

const medicationRequest = (token: string, body: unknown = { personuid: ELEANOR!.personUid }, app = APP) =>
  post("/api/clinical/medication/get", body, { Authorization: `Bearer ${token}`, ApplicationId: app })

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

describe("MockClinicalServer faults", () => {
  it.effect("scripted faults answer the next requests to their target, in order", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        yield* mock.injectFaults("token", [
          MockClinicalServer.Fault.status(503, { retryAfter: 2 }),
          MockClinicalServer.Fault.status(429, { body: "slow down", retryAfter: "Sun, 22 Nov 2026 08:00:00 GMT" }),
          MockClinicalServer.Fault.notJson,
          MockClinicalServer.Fault.missingTokenExpires,
          MockClinicalServer.Fault.malformedTokenExpires
        ])
        const a = yield* mock.handle(tokenRequest)
        expect([a.status, a.headers["retry-after"]]).toEqual([503, "2"])
        const b = yield* mock.handle(tokenRequest)
        expect([b.status, b.body, b.headers["retry-after"]]).toEqual([
          429,
          "slow down",
          "Sun, 22 Nov 2026 08:00:00 GMT"
        ])
        const c = yield* mock.handle(tokenRequest)
        expect([c.status, c.headers["content-type"]]).toEqual([200, "text/html"])
        expect(() => JSON.parse(c.body)).toThrow()
        const d = yield* mock.handle(tokenRequest)
        expect([d.status, d.headers.token_expires]).toEqual([200, undefined])
        const e = yield* mock.handle(tokenRequest)
        expect([e.status, e.headers.token_expires]).toEqual([200, "in one hour"])
        expect((yield* mock.handle(tokenRequest)).headers.token_expires).toBeDefined()
      })
    ))

  it.effect("a dropped connection is a TransportError in memory; a delay waits on the mock's clock", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        yield* mock.injectFaults("any", [MockClinicalServer.Fault.drop, MockClinicalServer.Fault.delay("3 seconds")])
        const dropped = yield* Effect.flip(mock.handle(tokenRequest))
        expect(dropped).toMatchObject({ _tag: "TransportError", reason: "Network" })
        const fiber = yield* Effect.fork(mock.handle(tokenRequest))
        yield* TestClock.adjust("2 seconds")
        expect(fiber.unsafePoll()).toBeNull()
        yield* TestClock.adjust("1 second")
        const response = yield* fiber
        expect(response.status).toBe(200)
        expect(response.headers.date).toBe(HttpDate.format(3000))
        const counters = yield* mock.counters
        expect(counters.dropped).toBe(1)
        expect(counters.byStatus).toEqual({ 200: 1 })
      })
    ))

  it.effect("random faults follow their probabilities and repeat exactly for a seed", () =>
    Effect.gen(function*() {
      const run = Effect.flatMap(MockClinicalServer.make(), (mock) =>
        Effect.gen(function*() {
          yield* mock.setRandomFaults("token", {
            seed: 42,
            faults: [
              { probability: 0.2, fault: MockClinicalServer.Fault.status(500) },
              { probability: 0.1, fault: MockClinicalServer.Fault.drop }
            ]
          })
          const outcomes: Array<number | string> = []
          for (let i = 0; i < 2000; i++) {
            const outcome = yield* mock.respond(tokenRequest)
            outcomes.push(outcome._tag === "Drop" ? "drop" : outcome.response.status)
          }
          return { outcomes, counters: yield* mock.counters }
        }))
      const first = yield* run
      const second = yield* run
      expect(second.outcomes).toEqual(first.outcomes)
      const share = (value: number | string) => first.outcomes.filter((o) => o === value).length / 2000
      expect(share(500)).toBeGreaterThan(0.17)
      expect(share(500)).toBeLessThan(0.23)
      expect(share("drop")).toBeGreaterThan(0.08)
      expect(share("drop")).toBeLessThan(0.12)
      expect(first.counters.dropped + first.counters.byStatus[500]! + first.counters.byStatus[200]!).toBe(2000)
    }))

  it.effect("clearFaults stops scripted and random faults; resetCounters empties the log", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        yield* mock.injectFaults("token", [MockClinicalServer.Fault.status(500)])
        yield* mock.setRandomFaults("any", {
          seed: 1,
          faults: [{ probability: 1, fault: MockClinicalServer.Fault.drop }]
        })
        yield* mock.clearFaults
        expect((yield* mock.handle(tokenRequest)).status).toBe(200)
        expect((yield* mock.requestLog).map((r) => [r.operation, r.status])).toEqual([["token", 200]])
        yield* mock.resetCounters
        expect(yield* mock.requestLog).toEqual([])
        expect((yield* mock.counters).tokenRequests).toBe(0)
      })
    ))

  it.effect("the request log keeps what arrived, within its limit", () =>
    withMock(
      (mock) =>
        Effect.gen(function*() {
          for (let i = 0; i < 5; i++) yield* mock.handle(tokenRequest)
          const log = yield* mock.requestLog
          expect(log).toHaveLength(3)
          expect(log[0]).toMatchObject({
            method: "POST",
            path: "/api/Server/Token",
            body: JSON.stringify({ ApplicationId: APP }),
            status: 200
          })
          expect((yield* mock.counters).tokenRequests).toBe(5)
        }),
      { requestLogLimit: 3 }
    ))
})

describe("MockClinicalServer served without a hand-managed scope", () => {
  it.live("layerServed: a Layer with the mock's controls and its base URL, closed with the layer", () =>
    Effect.gen(function*() {
      const client = Layer.unwrapEffect(
        Effect.map(MockClinicalServer.BaseUrl, (baseUrl) => ClinicalClient.layerUndici({ baseUrl, applicationId: APP }))
      )
      const { medications, tokenRequests, url } = yield* Effect.gen(function*() {
        const { medications } = yield* MedicationService.get(ELEANOR!.personUid)
        const mock = yield* MockClinicalServer.MockClinicalServer
        return {
          medications,
          tokenRequests: (yield* mock.counters).tokenRequests,
          url: yield* MockClinicalServer.BaseUrl
        }
      }).pipe(Effect.provide(client.pipe(Layer.provideMerge(MockClinicalServer.layerServed()))))
      expect(medications).toEqual(ELEANOR!.medications)
      expect(tokenRequests).toBe(1)
      // The layer is gone: so is the server.
      const after = yield* Effect.tryPromise(() => fetch(`${url}/api/Server/Token`, { method: "POST" })).pipe(
        Effect.either
      )
      expect(after._tag).toBe("Left")
    }))

  it("start: a Promise API for tests without Effect; bad options reject with InvalidConfig", async () => {
    const mock = await MockClinicalServer.start()
    try {
      const response = await fetch(`${mock.url}/api/Server/Token`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ ApplicationId: mock.applicationId })
      })
      expect(response.status).toBe(200)
      await mock.injectFaults("token", [MockClinicalServer.Fault.status(503)])
      expect((await fetch(`${mock.url}/api/Server/Token`, { method: "POST" })).status).toBe(503)
      expect(await mock.counters()).toMatchObject({ tokenRequests: 2, tokensIssued: 1 })
    } finally {
      await mock.close()
    }
    const refused = await MockClinicalServer.start({ persons: "everyone" as never }).then(() => undefined, (e) => e)
    expect(refused).toBeInstanceOf(ClinicalError.InvalidConfig)
    expect(refused).toMatchObject({ setting: "persons" })
  })
})

describe("MockClinicalServer.start().close() (issue 23)", () => {
  it(
    "drops the answers still delayed: a program that closes its mock exits at once, not when they are due",
    async () => {
      // The package as built, in a process of its own: it ends only when nothing of the mock is left.
      const program = `
      import { MockClinicalServer } from ${JSON.stringify(Path.resolve(import.meta.dirname, "../dist/src/testing.js"))}
      const mock = await MockClinicalServer.start()
      await mock.injectFaults("medications", [MockClinicalServer.Fault.delay("60 seconds")])
      const answer = fetch(mock.url + "/api/clinical/medication/get", { method: "POST", body: "{}" }).then(
        () => "answered",
        () => "dropped"
      )
      while ((await mock.counters()).medicationRequests === 0) await new Promise((r) => setTimeout(r, 10))
      await mock.close()
      console.log(await answer)
    `
      const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
        const child = execFile(
          process.execPath,
          ["--input-type=module", "-e", program],
          { timeout: 20_000 },
          (_, out) => resolve({ code: child.exitCode, stdout: out })
        )
      })
      // Killed at the timeout otherwise (exit code null), 60 s before the delayed answer was due.
      expect(code).toBe(0)
      expect(stdout.trim()).toBe("dropped")
    },
    30_000
  )
})

describe("MockClinicalServer.generatedPersons (mock-server --persons N)", () => {
  it("the same persons every time, each PersonUid and pass code unique, shaped as the client takes them", () => {
    const persons = MockClinicalServer.generatedPersons(100_000)
    expect(persons).toHaveLength(100_000)
    expect(MockClinicalServer.generatedPersons(3)).toEqual(persons.slice(0, 3))
    expect(new Set(persons.map((person) => person.personUid)).size).toBe(100_000)
    expect(new Set(persons.map((person) => person.passCode)).size).toBe(100_000)
    for (const person of [persons[0]!, persons[12_345]!, persons[99_999]!]) {
      expect(person.personUid).toMatch(/^[A-Za-z0-9+/]{43}=$/)
      expect(person.passCode).toMatch(/^[A-Z]{2}-\d{4}-[A-Z]{2}$/)
      const [month, day, year] = person.dateOfBirth.split("/").map(Number)
      expect(month).toBeGreaterThanOrEqual(1)
      expect(month).toBeLessThanOrEqual(12)
      expect(day).toBeGreaterThanOrEqual(1)
      expect(day).toBeLessThanOrEqual(28)
      expect(year).toBeGreaterThanOrEqual(1930)
      expect(year).toBeLessThan(2006)
      expect(person.medications.length).toBeGreaterThanOrEqual(1)
      expect(person.medications.length).toBeLessThanOrEqual(4)
    }
    // Not all alike: their records differ from one person to the next.
    expect(new Set(persons.slice(0, 100).map((person) => JSON.stringify(person.medications))).size).toBeGreaterThan(10)
  })

  it("a count out of 1 to 100,000 is a RangeError saying so", () => {
    for (const count of [0, -1, 1.5, 100_001, Number.NaN]) {
      expect(() => MockClinicalServer.generatedPersons(count)).toThrow(
        "the count of made-up persons must be a whole number from 1 to 100000"
      )
    }
  })

  it.effect("a mock of generated persons answers each of them: medications, and authenticate by pass code and birth date", () =>
    withMock((mock) =>
      Effect.gen(function*() {
        const person = MockClinicalServer.generatedPersons(500)[321]!
        const token = yield* getToken(mock)
        const medications = json(yield* mock.handle(medicationRequest(token, { personuid: person.personUid })))
        expect(medications.Medications).toEqual(person.medications)
        const authenticated = json(
          yield* mock.handle(
            post("/api/Server/Authenticate", { PassCode: person.passCode, DateOfBirth: person.dateOfBirth }, {
              Authorization: `Bearer ${token}`,
              ApplicationId: APP
            })
          )
        )
        expect(authenticated.PersonUid).toBe(person.personUid)
      }), { persons: MockClinicalServer.generatedPersons(500) }))
})
