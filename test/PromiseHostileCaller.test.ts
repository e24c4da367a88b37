/**
 * What a JavaScript caller of effect-clinical/promise can get wrong never hangs, crashes or leaks
 * (issue 22): loggers that throw or reject, getters that throw, close() twice or during calls,
 * environment values that are not strings, AbortSignal look-alikes.
 */
import { Effect, Exit, Metric, Scope } from "effect"
import {
  ClientClosed,
  createClinicalClient,
  createClinicalClientFromEnv,
  InvalidConfig,
  InvalidRequest,
  isClinicalError,
  isRequestError,
  ServerError
} from "effect-clinical/promise"
import { MockClinicalServer } from "effect-clinical/testing"
import { describe, expect, it } from "vitest"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as Hostile from "./support/HostileServer.js"
import { clientFor, closeStartedAfterEach, rejection, started, startMock } from "./support/promiseFixtures.js"

closeStartedAfterEach()

describe("what a JavaScript caller can get wrong never hangs, crashes or leaks (issue 22)", () => {
  const { Fault } = MockClinicalServer

  /** Collects unhandled rejections while `run` runs. */
  const unhandledDuring = async (run: () => Promise<void>): Promise<ReadonlyArray<unknown>> => {
    const seen: Array<unknown> = []
    const listener = (reason: unknown) => seen.push(reason)
    process.on("unhandledRejection", listener)
    try {
      await run()
      // Rejections are reported after a turn of the event loop.
      await new Promise((resolve) => setTimeout(resolve, 50))
    } finally {
      process.off("unhandledRejection", listener)
    }
    return seen
  }

  it("a logger that throws changes no call's outcome: the line is dropped and counted", async () => {
    const mock = await startMock()
    const person = mock.persons[0]!
    const droppedBefore = Effect.runSync(Metric.value(Telemetry.logLinesDropped)).count
    const unhandled = await unhandledDuring(async () => {
      for (const logLevel of ["info", "debug"] as const) {
        await mock.injectFaults("medications", [Fault.status(500), Fault.status(500), Fault.status(500)])
        const clinical = clientFor(mock.url, mock.applicationId, {
          maxRetries: 2,
          retryBaseDelay: "5 millis",
          deadline: "5 seconds",
          logLevel,
          logger: () => {
            throw new Error("the log sink is down")
          }
        })
        // Every attempt fails, each retry logs: the last error is the answer, not a Deadline.
        const error = await rejection(clinical.medications(person.personUid))
        expect(error, logLevel).toBeInstanceOf(ServerError)
        // And a call that logs nothing of its own still succeeds.
        expect((await clinical.medications(person.personUid)).medications).toEqual(person.medications)
      }
    })
    expect(unhandled).toEqual([])
    expect(Effect.runSync(Metric.value(Telemetry.logLinesDropped)).count).toBeGreaterThan(droppedBefore)
  })

  it("an async logger that rejects changes nothing either, and raises no unhandled rejection (from review)", async () => {
    const mock = await startMock()
    const person = mock.persons[0]!
    const unhandled = await unhandledDuring(async () => {
      const clinical = clientFor(mock.url, mock.applicationId, {
        logLevel: "debug",
        logger: async () => {
          throw new Error("the log sink is down, later")
        }
      })
      expect((await clinical.medications(person.personUid)).medications).toEqual(person.medications)
    })
    expect(unhandled).toEqual([])
  })

  it("options whose getters throw, or a signal whose methods throw, are InvalidRequest, never a throw (from review)", async () => {
    const mock = await startMock()
    const clinical = clientFor(mock.url, mock.applicationId)
    const fakeSignal = (throwing: "addEventListener" | "aborted") => {
      const signal = {
        [Symbol.toStringTag]: "AbortSignal",
        aborted: false,
        addEventListener: () => {},
        removeEventListener: () => {}
      }
      Object.defineProperty(signal, throwing, {
        get: () => {
          throw new Error("from a getter")
        }
      })
      return signal
    }
    const options: ReadonlyArray<unknown> = [
      { signal: fakeSignal("addEventListener") },
      { signal: fakeSignal("aborted") },
      Object.defineProperty({}, "signal", {
        get: () => {
          throw new Error("from a getter")
        }
      })
    ]
    for (const option of options) {
      let returned: Promise<unknown> | undefined
      expect(() => (returned = clinical.medications(mock.persons[0]!.personUid, option as never))).not.toThrow()
      const error = await rejection(returned!)
      expect(error).toBeInstanceOf(InvalidRequest)
      expect(error).toMatchObject({
        operation: "client",
        field: "signal",
        reason: "could not be read as an AbortSignal"
      })
    }
  })

  it("close() called twice: both resolve once everything is released (from review)", async () => {
    const mock = await startMock()
    const clinical = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
    await clinical.token()
    const order: Array<string> = []
    await Promise.all([
      clinical.close().then(() => order.push("first")),
      clinical.close().then(() => order.push("second"))
    ])
    expect(order).toEqual(["first", "second"])
    expect(clinical.close()).toBe(clinical.close())
  })

  it("close() during calls ends them at once, each rejecting with ClientClosed, and leaves no connection open", async () => {
    const server = await Effect.runPromise(Effect.gen(function*() {
      const scope = yield* Scope.make()
      const state = yield* Scope.extend(
        // Token answered; every data request held unanswered.
        Hostile.serve(Hostile.withToken(() => undefined)),
        scope
      )
      return { state, close: Scope.close(scope, Exit.void) }
    }))
    started.push({ close: () => Effect.runPromise(server.close) })
    const clinical = createClinicalClient({ baseUrl: server.state.url, applicationId: Hostile.APPLICATION_ID })
    // Four in flight (the adaptive limit's first four; the server answers none, so it stays there),
    // the fifth waiting for a turn.
    const calls = Array.from({ length: 5 }, () => rejection(clinical.medications(Hostile.PERSON_UID)))
    while (server.state.received.filter((received) => !Hostile.isToken(received)).length < 4) {
      await new Promise((resolve) => setTimeout(resolve, 10))
    }
    const started_ = Date.now()
    await clinical.close()
    const errors = await Promise.all(calls)
    // At once: nothing waits for the request timeout (30 s by default).
    expect(Date.now() - started_).toBeLessThan(5_000)
    for (const error of errors) {
      expect(error).toBeInstanceOf(ClientClosed)
      expect(error).toMatchObject({ _tag: "ClientClosed", operation: "medications" })
      expect((error as Error).message).toBe("medications call ended: the client was closed while it ran")
      expect(isClinicalError(error)).toBe(true)
      expect(isRequestError(error)).toBe(false)
    }
    await Effect.runPromise(server.state.drained)
    expect(server.state.abandoned()).toBe(0)
  })

  it("a call after close() rejects with ClientClosed, before anything is sent", async () => {
    const mock = await startMock()
    const clinical = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
    await clinical.close()
    const error = await rejection(clinical.token())
    expect(error).toBeInstanceOf(ClientClosed)
    expect((error as Error).message).toBe("token call refused: the client is closed")
    expect((await mock.counters()).tokenRequests).toBe(0)
  })

  it("environment values that are not strings are InvalidConfig naming the variable, never a TypeError", () => {
    for (const value of [3, true, new URL("https://openapitest.intelichart.com"), { value: "x" }, null]) {
      let thrown: unknown
      try {
        createClinicalClientFromEnv({
          CLINICAL_BASE_URL: "https://openapitest.intelichart.com",
          CLINICAL_APPLICATION_ID: MockClinicalServer.demoApplicationId,
          CLINICAL_MAX_RETRIES: value as never
        })
      } catch (error) {
        thrown = error
      }
      expect(thrown, String(value)).toBeInstanceOf(InvalidConfig)
      expect(thrown).toMatchObject({
        setting: "CLINICAL_MAX_RETRIES",
        reason: "must be a string, as an environment variable is"
      })
    }
  })

  it("an object that only looks like an AbortSignal is InvalidRequest, and nothing is left unsettled", async () => {
    const mock = await startMock()
    const clinical = clientFor(mock.url, mock.applicationId)
    const unhandled = await unhandledDuring(async () => {
      for (const signal of [{ aborted: false, addEventListener() {} }, { aborted: false }, "abort", 1]) {
        const error = await rejection(clinical.medications(mock.persons[0]!.personUid, { signal: signal as never }))
        expect(error, JSON.stringify(signal)).toBeInstanceOf(InvalidRequest)
        expect(error).toMatchObject({ field: "signal" })
      }
    })
    expect(unhandled).toEqual([])
    expect((await mock.counters()).dataRequests).toBe(0)
  })
})
