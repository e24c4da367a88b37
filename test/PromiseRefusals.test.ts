/**
 * What effect-clinical/promise refuses from JavaScript callers, each by its reason: a signal or
 * options that are not one, a token store option, client and call options that cannot be used
 * (InvalidConfig, InvalidRequest, sending nothing).
 */
import {
  createClinicalClient,
  createClinicalClientFromEnv,
  InvalidConfig,
  InvalidRequest,
  PersonData
} from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { describe, expect, it } from "vitest"
import { clientFor, closeStartedAfterEach, rejection, startMock } from "./support/promiseFixtures.js"

closeStartedAfterEach()

describe("bad arguments from JavaScript callers (from review)", () => {
  it("a signal that is not an AbortSignal, or options that are not an object, reject with InvalidRequest, sending nothing", async () => {
    const mock = await startMock()
    const clinical = clientFor(mock.url, mock.applicationId)
    const person = mock.persons[0]!.personUid
    const calls: ReadonlyArray<readonly [() => Promise<unknown>, string]> = [
      [() => clinical.medications(person, { signal: {} } as never), "signal"],
      [() => clinical.medications(person, { signal: 5 } as never), "signal"],
      [() => clinical.token({ signal: "x" } as never), "signal"],
      [() => clinical.token(5 as never), "options"],
      [() => clinical.get(PersonData.medications, person, { signal: null } as never), "signal"],
      [() => clinical.authenticate({ passCode: "x", dateOfBirth: "01/01/1945" }, "now" as never), "options"]
    ]
    for (const [call, field] of calls) {
      const error = await rejection(call())
      expect(error).toBeInstanceOf(InvalidRequest)
      expect(error).toMatchObject({ _tag: "InvalidRequest", field })
    }
    const counters = await mock.counters()
    expect(counters.tokenRequests + counters.dataRequests).toBe(0)
  })

  it("createClinicalClientFromEnv(null) and options that are not an object throw InvalidConfig", () => {
    for (
      const [make, setting] of [
        [() => createClinicalClientFromEnv(null as never), "env"],
        [() => createClinicalClientFromEnv("CLINICAL_BASE_URL=x" as never), "env"],
        [() =>
          createClinicalClientFromEnv({
            CLINICAL_BASE_URL: "https://x.org",
            CLINICAL_APPLICATION_ID: MockClinicalServer.demoApplicationId
          }, null as never), "options"]
      ] as const
    ) {
      expect(make).toThrow(expect.objectContaining({ _tag: "InvalidConfig", setting }))
    }
  })
})

describe("tokenStore", () => {
  it("a refused token store option throws InvalidConfig at once, naming it", () => {
    const options = { baseUrl: "https://x.org", applicationId: MockClinicalServer.demoApplicationId }
    for (
      const [tokenStore, setting] of [
        [{}, "tokenStore.redis"],
        [{ redis: { send: async () => null, script: async () => null }, timeout: "forever" }, "tokenStore.timeout"]
      ] as const
    ) {
      let thrown: unknown
      try {
        createClinicalClient({ ...options, tokenStore: tokenStore as never })
      } catch (error) {
        thrown = error
      }
      expect(thrown).toBeInstanceOf(InvalidConfig)
      expect(thrown).toMatchObject({ setting })
    }
  })
})

describe("the Promise client's refusals, each by its reason (issue 24's mutation run)", () => {
  const settings = { baseUrl: "https://clinical.test", applicationId: MockClinicalServer.demoApplicationId }
  const thrown = (build: () => unknown): unknown => {
    try {
      build()
    } catch (error) {
      return error
    }
    throw new Error("expected a throw")
  }

  it("client options that cannot be used throw InvalidConfig naming the setting and why", () => {
    const cases: ReadonlyArray<readonly [() => unknown, string, string]> = [
      [
        () => createClinicalClient({ ...settings, logLevel: "loud" as never }),
        "logLevel",
        "must be one of debug, info, warn, error, none"
      ],
      [
        () => createClinicalClient({ ...settings, logger: 5 as never }),
        "logger",
        "must be a function that takes a log entry"
      ],
      [
        () => createClinicalClient({ ...settings, agentOptions: null as never }),
        "agentOptions",
        "must be an object of undici Agent options"
      ],
      [
        () => createClinicalClient({ ...settings, agentOptions: "x" as never }),
        "agentOptions",
        "must be an object of undici Agent options"
      ],
      [() => createClinicalClientFromEnv(null as never), "env", "must be an object of environment variables"],
      [
        () => createClinicalClientFromEnv("CLINICAL_BASE_URL=x" as never),
        "env",
        "must be an object of environment variables"
      ],
      [
        () =>
          createClinicalClientFromEnv({
            CLINICAL_BASE_URL: 5 as never,
            CLINICAL_APPLICATION_ID: settings.applicationId
          }),
        "CLINICAL_BASE_URL",
        "must be a string, as an environment variable is"
      ],
      [
        () =>
          createClinicalClientFromEnv({
            CLINICAL_BASE_URL: settings.baseUrl,
            CLINICAL_APPLICATION_ID: settings.applicationId
          }, "x" as never),
        "options",
        "must be an object of client options"
      ]
    ]
    for (const [build, setting, reason] of cases) {
      expect(thrown(build), setting).toMatchObject({ _tag: "InvalidConfig", setting, reason })
    }
  })

  it("an environment may hold anything that is not a setting of ours, and a setting left undefined", async () => {
    const client = createClinicalClientFromEnv({
      CLINICAL_BASE_URL: settings.baseUrl,
      CLINICAL_APPLICATION_ID: settings.applicationId,
      CLINICAL_MAX_RETRIES: undefined,
      PATH: 5 as never
    })
    await client.close()
  })

  it("call options that cannot be used reject with InvalidRequest naming the field and why, sending nothing", async () => {
    const mock = await startMock()
    const client = clientFor(mock.url, mock.applicationId)
    const uid = mock.persons[0]!.personUid
    const lookalike = { aborted: false, addEventListener: () => undefined, removeEventListener: () => undefined }
    expect(await rejection(client.medications(uid, 5 as never))).toMatchObject({
      _tag: "InvalidRequest",
      operation: "client",
      field: "options",
      reason: "must be an object such as { signal }"
    })
    expect(await rejection(client.medications(uid, { signal: lookalike as never }))).toMatchObject({
      _tag: "InvalidRequest",
      operation: "client",
      field: "signal",
      reason: "must be an AbortSignal"
    })
    expect((await mock.counters()).medicationRequests).toBe(0)
    // No options at all, or null, are the defaults.
    expect((await client.medications(uid, null as never)).medications.length).toBeGreaterThan(0)
  })
})
