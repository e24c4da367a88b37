/**
 * The Effect 4 line's Promise client against its mock over loopback: what a caller without Effect
 * gets back, how each failure rejects (the library's own error, never a wrapper), its options
 * refused, aborting a call, the environment read, logging to the application's logger without a
 * secret, and closing.
 */
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import { leakIn } from "../../spec/secretForms.js"
import {
  ClientClosed,
  createClinicalClient,
  createClinicalClientFromEnv,
  InvalidConfig,
  InvalidRequest,
  type LogEntry,
  reveal,
  Unauthorized
} from "../src/promise.js"
import { Fault, start, type Started } from "../src/testing/MockClinicalServer.js"

let mock: Started
beforeAll(async () => {
  mock = await start()
})
afterAll(() => mock.close())

const person = () => mock.persons[0]!
const client = (options: Partial<Parameters<typeof createClinicalClient>[0]> = {}) =>
  createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId, ...options })

describe("the Promise client (Effect 4)", () => {
  it("medications of a person, over HTTP; one token for several calls", async () => {
    await mock.resetCounters()
    await using clinical = client()
    const first = await clinical.medications(person().personUid)
    const second = await clinical.medications(person().personUid)
    expect(first.medications.length).toBe(person().medications.length)
    expect(second.medications).toEqual(first.medications)
    const counters = await mock.counters()
    expect(counters.tokenRequests).toBe(1)
    expect(counters.medicationRequests).toBe(2)
  })

  it("authenticate gives the PersonUid Redacted; reveal gives its text", async () => {
    await using clinical = client()
    const uid = await clinical.authenticate({ passCode: person().passCode, dateOfBirth: person().dateOfBirth })
    expect(String(uid)).not.toContain(person().personUid)
    expect(reveal(uid)).toBe(person().personUid)
  })

  it("a failure rejects with the library's own error: instanceof, _tag, no secret in its JSON", async () => {
    await using clinical = createClinicalClient({
      baseUrl: mock.url,
      applicationId: "11111111-2222-3333-4444-555555555555"
    })
    const error = await clinical.medications(person().personUid).then(() => undefined, (e: unknown) => e)
    expect(error).toBeInstanceOf(Unauthorized)
    expect((error as Unauthorized)._tag).toBe("Unauthorized")
    expect(leakIn(JSON.stringify(error), ["11111111-2222-3333-4444-555555555555", person().personUid])).toBeUndefined()
  })

  it("bad settings throw InvalidConfig naming each; bad client options too", () => {
    expect(() => createClinicalClient({ baseUrl: "ftp://x", applicationId: "nope" })).toThrow(InvalidConfig)
    try {
      createClinicalClient({ baseUrl: "ftp://x", applicationId: mock.applicationId })
    } catch (error) {
      expect((error as InvalidConfig).setting).toBe("baseUrl")
    }
    expect(() => client({ logLevel: "loud" as never })).toThrow(/logLevel/)
    expect(() => client({ agentOptions: 5 as never })).toThrow(/agentOptions/)
  })

  it("a call's options that are not options reject InvalidRequest; nothing is sent", async () => {
    await mock.resetCounters()
    await using clinical = client()
    const refused = await clinical.medications(person().personUid, { signal: {} as AbortSignal }).catch((e) => e)
    expect(refused).toBeInstanceOf(InvalidRequest)
    expect(refused).toMatchObject({ field: "signal", reason: "must be an AbortSignal" })
    expect((await mock.counters()).dataRequests).toBe(0)
  })

  it("aborting a call rejects with the signal's reason; an aborted signal sends nothing", async () => {
    await mock.resetCounters()
    await using clinical = client()
    const reason = new Error("user went away")
    const aborted = AbortSignal.abort(reason)
    await expect(clinical.medications(person().personUid, { signal: aborted })).rejects.toBe(reason)
    expect((await mock.counters()).dataRequests).toBe(0)
    await clinical.token()
    await mock.injectFaults("medications", [Fault.delay("10 seconds")])
    const controller = new AbortController()
    const call = clinical.medications(person().personUid, { signal: controller.signal })
    setTimeout(() => controller.abort(reason), 50)
    await expect(call).rejects.toBe(reason)
    await mock.clearFaults()
  })

  it("closing ends running calls with ClientClosed and refuses later ones", async () => {
    const clinical = client()
    await clinical.token()
    await mock.injectFaults("medications", [Fault.delay("10 seconds")])
    // Its outcome taken at once: it rejects while close() runs.
    const running = clinical.medications(person().personUid).then(() => undefined, (error: unknown) => error)
    await new Promise((resolve) => setTimeout(resolve, 50))
    await clinical.close()
    expect(await running).toMatchObject({ _tag: "ClientClosed", whileRunning: true })
    await expect(clinical.medications(person().personUid)).rejects.toBeInstanceOf(ClientClosed)
    await mock.clearFaults()
  })

  it("from the environment: CLINICAL_* read as text; one of ours that is not text is refused by name", async () => {
    await using clinical = createClinicalClientFromEnv({
      CLINICAL_BASE_URL: mock.url,
      CLINICAL_APPLICATION_ID: mock.applicationId,
      PATH: "/usr/bin"
    })
    expect((await clinical.token()).generation).toBe(1)
    expect(() => createClinicalClientFromEnv({ CLINICAL_MAX_RETRIES: 3 as never })).toThrow(/CLINICAL_MAX_RETRIES/)
    expect(() => createClinicalClientFromEnv({ CLINICAL_BASE_URL: mock.url })).toThrow(InvalidConfig)
  })

  it("the token's metadata, never the token", async () => {
    await using clinical = client()
    const metadata = await clinical.token()
    expect(Object.keys(metadata).sort()).toEqual(
      ["expiresAt", "generation", "issuedAt", "lifetimeMillis", "serverClockSkewMillis", "serverLifetimeMillis"]
    )
    expect(metadata.expiresAt - metadata.issuedAt).toBe(metadata.lifetimeMillis)
  })

  it("logs go to the application's logger at the level asked, never with a secret; a throwing logger changes nothing", async () => {
    const entries: Array<LogEntry> = []
    await using clinical = client({ logLevel: "debug", logger: (entry) => void entries.push(entry) })
    await mock.injectFaults("medications", [Fault.status(503)])
    await clinical.medications(person().personUid)
    expect(entries.map((entry) => entry.message)).toContain("retrying")
    expect(entries.every((entry) => entry.level === "debug" || entry.level === "info" || entry.level === "warn")).toBe(
      true
    )
    for (const entry of entries) {
      expect(leakIn(JSON.stringify(entry), [mock.applicationId, person().personUid])).toBeUndefined()
    }
    await using throwing = client({
      logLevel: "debug",
      logger: () => {
        throw new Error("logger broke")
      }
    })
    await mock.injectFaults("medications", [Fault.status(503)])
    expect((await throwing.medications(person().personUid)).medications.length).toBeGreaterThan(0)
  })
})
