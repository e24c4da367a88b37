/**
 * The mock served without a hand-managed scope (layerServed, the Promise `start` and its `close`),
 * and the generated persons of `mock-server --persons N`.
 */
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { ClinicalClient, ClinicalError, MedicationService } from "effect-clinical"
import { MockClinicalServer } from "effect-clinical/testing"
import { execFile } from "node:child_process"
import * as Path from "node:path"
import { APP, ELEANOR, getToken, json, medicationRequest, post, withMock } from "./support/mockServerFixtures.js"

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
