/**
 * effect-clinical/promise, used as a backend that is not written in Effect uses it: the client from
 * options or from the environment, its refusals of bad settings, one token for many calls, and a
 * failed call rejecting with the library's own error (`instanceof`, `_tag`, no secrets).
 */
import {
  ApiError,
  BadRequest,
  createClinicalClient,
  createClinicalClientFromEnv,
  InvalidConfig,
  InvalidRequest,
  isClinicalError,
  isRequestError,
  PersonData,
  RateLimited,
  ResponseDecodeError,
  reveal,
  ServerError,
  TokenExpired,
  TokenStoreError,
  TransportError,
  Unauthorized,
  UnexpectedStatus
} from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { describe, expect, it } from "vitest"
import { clientFor, closeStartedAfterEach, rejection, started, startMock } from "./support/promiseFixtures.js"

closeStartedAfterEach()

describe("createClinicalClient", () => {
  it("throws InvalidConfig at once for a bad setting, naming it, never echoing the ApplicationId", () => {
    const secret = "not-a-guid-secret"
    for (
      const [options, setting] of [
        [{ baseUrl: "ftp://x", applicationId: MockClinicalServer.demoApplicationId }, "baseUrl"],
        [{ baseUrl: "https://x.org", applicationId: secret }, "applicationId"],
        [undefined, "options"],
        [
          { baseUrl: "https://x.org", applicationId: MockClinicalServer.demoApplicationId, agentOptions: 5 },
          "agentOptions"
        ]
      ] as const
    ) {
      let thrown: unknown
      try {
        createClinicalClient(options as never)
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(InvalidConfig)
      expect(thrown).toMatchObject({ _tag: "InvalidConfig", setting })
      expect(String(thrown)).not.toContain(secret)
      // The README's error table lists it: one guard for every error the library throws (issue 23).
      expect(isClinicalError(thrown)).toBe(true)
      expect(isRequestError(thrown)).toBe(false)
    }
  })

  it("reveal() gives the PersonUid authenticate returns, to store it; JSON of the Redacted one is '<redacted>' (issue 23)", async () => {
    const mock = await startMock()
    const person = mock.persons[0]!
    const clinical = clientFor(mock.url, mock.applicationId)
    const personUid = await clinical.authenticate({ passCode: person.passCode, dateOfBirth: person.dateOfBirth })
    expect(JSON.stringify({ personUid })).toBe("{\"personUid\":\"<redacted>\"}")
    const stored = JSON.stringify({ personUid: reveal(personUid) })
    expect(JSON.parse(stored)).toEqual({ personUid: person.personUid })
    const { medications } = await clinical.medications(JSON.parse(stored).personUid)
    expect(medications).toHaveLength(person.medications.length)
  })

  it("from the environment: a variable that is not set is named", () => {
    let thrown: unknown
    try {
      createClinicalClientFromEnv({ CLINICAL_BASE_URL: "https://x.org" })
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(InvalidConfig)
    expect((thrown as InvalidConfig).message).toBe("invalid setting CLINICAL_APPLICATION_ID: is not set")
  })

  it("every missing or refused variable is named in one error, not one per run (issue 23)", () => {
    let thrown: unknown
    try {
      createClinicalClientFromEnv({ CLINICAL_REQUEST_TIMEOUT: "soon", CLINICAL_MAX_RETRIES: "-1" })
    } catch (error) {
      thrown = error
    }
    expect(thrown).toBeInstanceOf(InvalidConfig)
    expect(thrown).toMatchObject({ setting: "CLINICAL_BASE_URL", reason: "is not set" })
    expect((thrown as InvalidConfig).message).toBe(
      "invalid settings: CLINICAL_BASE_URL is not set; CLINICAL_APPLICATION_ID is not set; " +
        "CLINICAL_REQUEST_TIMEOUT must be a duration, e.g. \"30s\", \"2m\", \"1500ms\" or \"10 seconds\"; " +
        "CLINICAL_MAX_RETRIES must be a whole number from 0 to 100"
    )
  })

  it("a CLINICAL_* variable a few letters from a setting gets a warning naming it, with no value (issue 23)", async () => {
    const warnings: Array<Error & { code?: string }> = []
    const listen = (warning: Error & { code?: string }) => warnings.push(warning)
    process.on("warning", listen)
    try {
      started.push(createClinicalClientFromEnv({
        CLINICAL_BASE_URL: "https://x.org",
        CLINICAL_APPLICATION_ID: MockClinicalServer.demoApplicationId,
        CLINICAL_REQUEST_TIMOUT: "secret-looking-value",
        // An application's own variable, far from every setting, is its business.
        CLINICAL_PERSON_UID: "x"
      }))
      // process.emitWarning delivers on a later tick.
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off("warning", listen)
    }
    expect(warnings.map((warning) => [warning.code, warning.message])).toEqual([[
      "CLINICAL_UNKNOWN_SETTING",
      "CLINICAL_REQUEST_TIMOUT is not a setting of effect-clinical and is ignored: did you mean CLINICAL_REQUEST_TIMEOUT?"
    ]])
  })

  it("durations in the short form type-check as options, as the README writes them (issue 23)", async () => {
    const mock = await startMock()
    // The options object literal is checked against Options by tsc (npm test type-checks the tests).
    const typed = createClinicalClient({
      baseUrl: mock.url,
      applicationId: mock.applicationId,
      requestTimeout: "30s",
      tokenTimeout: "1500ms",
      deadline: "2m",
      maxTokenLifetime: "1d",
      softRefreshWindow: "5 minutes"
    })
    started.push(typed)
    expect((await typed.token()).generation).toBe(1)
  })

  it("one client is one token for many calls of every kind", async () => {
    const mock = await startMock()
    const env = { CLINICAL_BASE_URL: mock.url, CLINICAL_APPLICATION_ID: mock.applicationId }
    const clinical = createClinicalClientFromEnv(env)
    started.push(clinical)
    const [eleanor, marcus] = mock.persons
    const results = await Promise.all([
      clinical.medications(eleanor!.personUid),
      clinical.medications(marcus!.personUid, { startDate: "2020-01-01" }),
      clinical.get(PersonData.ethnicities, marcus!.personUid),
      clinical.getAs(PersonData.detailedEthnicities, PersonData.Ethnicity, marcus!.personUid),
      clinical.authenticate({ passCode: eleanor!.passCode, dateOfBirth: eleanor!.dateOfBirth })
    ])
    expect(results[0].medications).toEqual(eleanor!.medications)
    expect(results[1].medications.map((m) => m.Name)).toEqual(["Omeprazole"])
    expect(results[2].items).toEqual(marcus!.ethnicities)
    expect(results[3].items).toEqual([{ Name: "Mexican", Code: "2148-5" }])
    expect(String(results[4])).toBe("<redacted>")
    for (let i = 0; i < 20; i++) await clinical.medications(eleanor!.personUid)
    expect((await mock.counters()).tokenRequests).toBe(1)
    const token = await clinical.token()
    expect(token).toMatchObject({ generation: 1, lifetimeMillis: 3_600_000, serverLifetimeMillis: 3_600_000 })
    expect(Object.keys(token).sort()).toEqual(
      ["expiresAt", "generation", "issuedAt", "lifetimeMillis", "serverClockSkewMillis", "serverLifetimeMillis"]
    )
  })
})

describe("a failed call rejects with the library's own error", () => {
  it("for every kind of error: instanceof, _tag, isClinicalError, the same message, JSON without secrets", async () => {
    const mock = await startMock()
    const person = mock.persons[0]!
    const clinical = clientFor(mock.url, mock.applicationId)
    const refused = clientFor(mock.url, "00000000-0000-4000-8000-000000000000")
    // A shared token store that is down, with a client told to fail rather than go on alone.
    const down = () => Promise.reject(new Error(`connect ECONNREFUSED (${mock.applicationId})`))
    const storeDown = clientFor(mock.url, mock.applicationId, {
      tokenStore: { redis: { send: down, script: down }, onUnavailable: "fail" }
    })
    const { Fault } = MockClinicalServer
    const cases: ReadonlyArray<
      readonly [() => Promise<unknown>, abstract new(...args: never) => Error, string, Array<MockClinicalServer.Fault>?]
    > = [
      [() => clinical.medications("nobody"), ApiError, "ApiError"],
      [() => clinical.medications(person.personUid), BadRequest, "BadRequest", [Fault.status(400)]],
      [() => refused.medications(person.personUid), Unauthorized, "Unauthorized"],
      [() => clinical.medications(person.personUid), TokenExpired, "TokenExpired", [
        Fault.status(419),
        Fault.status(419)
      ]],
      [() => clinical.medications(person.personUid), RateLimited, "RateLimited", [
        Fault.status(429, { retryAfter: 1 })
      ]],
      [() => clinical.medications(person.personUid), ServerError, "ServerError", [Fault.status(500)]],
      [() => clinical.medications(person.personUid), UnexpectedStatus, "UnexpectedStatus", [Fault.status(405)]],
      [() => clinical.medications(person.personUid), ResponseDecodeError, "ResponseDecodeError", [Fault.notJson]],
      [() => clinical.medications(person.personUid), TransportError, "TransportError", [Fault.drop]],
      [() => clinical.medications(`${person.personUid}\r\n`), InvalidRequest, "InvalidRequest"],
      [() => storeDown.medications(person.personUid), TokenStoreError, "TokenStoreError"]
    ]
    for (const [call, type, tag, faults] of cases) {
      if (faults !== undefined) await mock.injectFaults("medications", faults)
      const error = await rejection(call())
      expect(error, tag).toBeInstanceOf(type)
      expect(error).toBeInstanceOf(Error)
      expect(isClinicalError(error)).toBe(true)
      expect((error as { _tag: string })._tag).toBe(tag)
      expect(String(error)).toContain((error as Error).message)
      for (const secret of [person.personUid, mock.applicationId]) {
        expect(JSON.stringify(error)).not.toContain(secret)
        expect((error as Error).message).not.toContain(secret)
      }
      await mock.clearFaults()
    }
  })
})
