/**
 * effect-clinical/promise's calls, each observed (issue 24's mutation run): medicationsAs with the
 * caller's Schema, every call after close(), the undici options, one signal for many calls, what
 * reaches stderr, and a logger's return value.
 */
import { Effect, Exit, Metric, Schema, Scope } from "effect"
import { createClinicalClient, PersonData } from "effect-clinical/promise"
import { getEventListeners } from "node:events"
import { describe, expect, it } from "vitest"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as Hostile from "./support/HostileServer.js"
import { clientFor, closeStartedAfterEach, rejection, started, startMock } from "./support/promiseFixtures.js"

closeStartedAfterEach()

describe("the Promise client's calls, each observed (issue 24's mutation run)", () => {
  /** What `run` writes to stderr, in this process. */
  const stderrDuring = async (run: () => Promise<void>): Promise<string> => {
    const written: Array<string> = []
    const [write, error] = [process.stderr.write, console.error]
    process.stderr.write = ((chunk: string | Uint8Array) => {
      written.push(String(chunk))
      return true
    }) as typeof process.stderr.write
    // Effect's console logger writes through console.error, which vitest would take for its own.
    console.error = (...args: Array<unknown>) => void written.push(`${args.join(" ")}\n`)
    try {
      await run()
    } finally {
      process.stderr.write = write
      console.error = error
    }
    return written.join("")
  }
  const REFUSED_ID = "00000000-0000-4000-8000-000000000000"

  it("medicationsAs decodes with the caller's Schema; a Schema that throws rejects with what it threw", async () => {
    const mock = await startMock()
    const person = mock.persons[0]!
    const clinical = clientFor(mock.url, mock.applicationId)
    const Named = Schema.Struct({ Name: Schema.String })
    const { medications } = await clinical.medicationsAs(Named, person.personUid)
    expect(medications).toEqual(person.medications.map(({ Name }) => ({ Name })))
    // A defect of the caller's own code, as it is: not wrapped, not undefined.
    const boom = new Error("boom")
    const Throwing = Schema.transform(Schema.Unknown, Schema.Unknown, {
      decode: () => {
        throw boom
      },
      encode: (value) => value
    })
    expect(await rejection(clinical.medicationsAs(Throwing, person.personUid))).toBe(boom)
  })

  it("after close(), every kind of call rejects with ClientClosed naming its operation", async () => {
    const mock = await startMock()
    const clinical = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
    await clinical.close()
    const person = mock.persons[0]!.personUid
    const calls: ReadonlyArray<readonly [string, () => Promise<unknown>]> = [
      ["medications", () => clinical.medications(person)],
      ["medications", () => clinical.medicationsAs(Schema.Unknown, person)],
      ["authenticate", () => clinical.authenticate({ passCode: "ABCD1234", dateOfBirth: "1980-01-01" } as never)],
      ["uniqueDeviceIdentifiers", () => clinical.get(PersonData.uniqueDeviceIdentifiers, person)],
      ["ethnicities", () => clinical.getAs(PersonData.ethnicities, Schema.Unknown, person)],
      ["token", () => clinical.token()]
    ]
    for (const [operation, call] of calls) {
      expect(await rejection(call())).toMatchObject({ _tag: "ClientClosed", operation, whileRunning: false })
    }
  })

  it("the undici Agent's options, as an object, are taken", async () => {
    const mock = await startMock()
    const clinical = clientFor(mock.url, mock.applicationId, { agentOptions: { connections: 1, pipelining: 1 } })
    expect((await clinical.medications(mock.persons[0]!.personUid)).medications).toEqual(mock.persons[0]!.medications)
  })

  it("one signal for many calls: no listener is left on it once they settle", async () => {
    const mock = await startMock()
    const clinical = clientFor(mock.url, mock.applicationId)
    const controller = new AbortController()
    for (let i = 0; i < 5; i++) await clinical.medications(mock.persons[0]!.personUid, { signal: controller.signal })
    expect(getEventListeners(controller.signal, "abort")).toHaveLength(0)
  })

  it("a signal look-alike whose aborted getter throws once the call runs: the call settles with its own outcome", async () => {
    const mock = await startMock()
    const clinical = clientFor(mock.url, mock.applicationId)
    let reads = 0
    const lookAlike = {
      [Symbol.toStringTag]: "AbortSignal",
      get aborted() {
        // Read twice before the call starts (recognised, then checked): the third read is after it ran.
        if (++reads > 2) throw new Error("aborted getter, late")
        return false
      },
      addEventListener: () => {},
      removeEventListener: () => {}
    }
    const { medications } = await clinical.medications(mock.persons[0]!.personUid, { signal: lookAlike as never })
    expect(medications).toEqual(mock.persons[0]!.medications)
    expect(reads).toBeGreaterThan(2)
  })

  it("a call aborted by its caller while the client closes rejects with the signal's reason", async () => {
    const scope = Effect.runSync(Scope.make())
    started.push({ close: () => Effect.runPromise(Scope.close(scope, Exit.void)) })
    const server = await Effect.runPromise(Scope.extend(Hostile.serve(Hostile.withToken(() => {})), scope))
    const clinical = createClinicalClient({ baseUrl: server.url, applicationId: Hostile.APPLICATION_ID })
    const controller = new AbortController()
    const call = rejection(clinical.medications(Hostile.PERSON_UID, { signal: controller.signal }))
    while (server.received.length < 2) await new Promise((resolve) => setTimeout(resolve, 5))
    const reason = new Error("the user went away")
    controller.abort(reason)
    const closed = clinical.close()
    expect(await call).toBe(reason)
    await closed
  })

  it("without a logger or logLevel nothing reaches stderr; with a logLevel alone, Effect's logfmt lines do", async () => {
    const mock = await startMock()
    const person = mock.persons[0]!.personUid
    const silent = await stderrDuring(async () => {
      await rejection(clientFor(mock.url, REFUSED_ID).medications(person))
    })
    expect(silent).toBe("")
    const asked = await stderrDuring(async () => {
      await rejection(clientFor(mock.url, REFUSED_ID, { logLevel: "warn" }).medications(person))
    })
    expect(asked).toMatch(/^timestamp=\S+ level=WARN .*message="token refresh failed"/m)
    expect(asked).not.toContain(REFUSED_ID)
  })

  it("a logger's return value: a thenable is watched for its rejection, anything else is left alone", async () => {
    const mock = await startMock()
    const person = mock.persons[0]!.personUid
    const dropped = () => Effect.runSync(Metric.value(Telemetry.logLinesDropped)).count
    for (const returned of [undefined, null, 0, "text", {}, { then: 1 }, () => {}]) {
      const before = dropped()
      const clinical = clientFor(mock.url, REFUSED_ID, { logger: () => returned })
      await rejection(clinical.medications(person))
      expect(dropped() - before, String(returned)).toBe(0)
    }
    // A thenable that is not a Promise, rejecting: its line is dropped, and counted.
    const before = dropped()
    const rejecting = { then: (_: unknown, onRejected: (error: unknown) => void) => onRejected(new Error("later")) }
    await rejection(clientFor(mock.url, REFUSED_ID, { logger: () => rejecting }).medications(person))
    expect(dropped() - before).toBe(1)
  })
})
