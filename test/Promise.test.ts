/**
 * effect-clinical/promise, used as a backend that is not written in Effect uses it: plain
 * promises, `instanceof` on errors, an AbortSignal per call, `close()`.
 */
import { Effect, Exit, Metric, Schema, Scope } from "effect"
import {
  ApiError,
  BadRequest,
  ClientClosed,
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
import { execFile } from "node:child_process"
import { getEventListeners } from "node:events"
import * as Path from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import * as Telemetry from "../src/internal/observability/telemetry.js"
import * as Hostile from "./support/HostileServer.js"

const started: Array<{ close: () => Promise<void> }> = []
afterEach(async () => {
  for (const resource of started.splice(0)) await resource.close()
})

const startMock = async (options?: MockClinicalServer.Options) => {
  const mock = await MockClinicalServer.start(options)
  started.push(mock)
  return mock
}

const clientFor = (url: string, applicationId: string, extra: object = {}) => {
  const client = createClinicalClient({ baseUrl: url, applicationId, maxRetries: 0, ...extra })
  started.push(client)
  return client
}

/** The rejection of a promise that must reject. */
const rejection = async (promise: Promise<unknown>): Promise<unknown> => {
  try {
    await promise
  } catch (error) {
    return error
  }
  throw new Error("expected a rejection")
}

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

describe("logging", () => {
  it("the library's lines go to the application's logger, at the level asked for, without secrets", async () => {
    const mock = await startMock()
    const person = mock.persons[0]!
    const entries: Array<{ level: string; message: string; annotations: Readonly<Record<string, unknown>> }> = []
    const refused = clientFor(mock.url, "00000000-0000-4000-8000-000000000000", {
      logger: (entry: never) => entries.push(entry)
    })
    await rejection(refused.medications(person.personUid))
    expect(entries).toEqual([
      expect.objectContaining({
        level: "warn",
        message: "token refresh failed",
        annotations: expect.objectContaining({ error: "Unauthorized" })
      })
    ])
    entries.length = 0
    const debug = clientFor(mock.url, mock.applicationId, {
      logLevel: "debug",
      logger: (entry: never) => entries.push(entry)
    })
    await mock.injectFaults("medications", [MockClinicalServer.Fault.status(401)])
    await debug.medications(person.personUid)
    // Each at its own level: a debug line is delivered as "debug", not as "info" (issue 24's audit).
    expect(entries.map((entry) => [entry.level, entry.message])).toEqual([
      ["debug", "token issued"],
      ["debug", "token rejected; refreshing it and retrying once"],
      ["debug", "token issued"]
    ])
    expect(JSON.stringify(entries)).not.toContain(person.personUid)
    expect(JSON.stringify(entries)).not.toContain(mock.applicationId)
    entries.length = 0
    const silent = clientFor(mock.url, "00000000-0000-4000-8000-000000000000", {
      logLevel: "none",
      logger: (entry: never) => entries.push(entry)
    })
    await rejection(silent.medications(person.personUid))
    expect(entries).toEqual([])
  })

  /** Runs an ES module over the built package in a child process: its exit code and both outputs, as captured. */
  const runChild = (program: string, env: Record<string, string>) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const child = execFile(process.execPath, ["--input-type=module", "-e", program], {
        env: { ...process.env, ...env },
        timeout: 20_000
      }, (_, stdout, stderr) => resolve({ code: child.exitCode, stdout, stderr }))
    })

  it(
    "by default nothing is logged: a call retried and failed leaves stdout and stderr empty; logLevel alone logs to stderr (issue 23)",
    async () => {
      const mock = await startMock()
      const program = `
      import { createClinicalClient } from ${
        JSON.stringify(Path.resolve(import.meta.dirname, "../dist/src/promise.js"))
      }
      const outcomes = []
      // A call retried until it fails, and one whose ApplicationId is refused (a warning of the library's).
      for (const applicationId of [process.env.APPLICATION_ID, "00000000-0000-4000-8000-000000000000"]) {
        const clinical = createClinicalClient({
          baseUrl: process.env.URL,
          applicationId,
          retryBaseDelay: "1ms",
          ...(process.env.LEVEL === undefined ? {} : { logLevel: process.env.LEVEL })
        })
        outcomes.push(await clinical.medications(process.env.PERSON_UID).then(() => "resolved", (error) => error._tag))
        await clinical.close()
      }
      process.exitCode = outcomes.join() === "ServerError,Unauthorized" ? 0 : 1
    `
      const env = { URL: mock.url, APPLICATION_ID: mock.applicationId, PERSON_UID: mock.persons[0]!.personUid }
      const fourFailures = () =>
        mock.injectFaults("medications", Array.from({ length: 4 }, () => MockClinicalServer.Fault.status(500)))
      await fourFailures()
      const silent = await runChild(program, env)
      expect(silent).toEqual({ code: 0, stdout: "", stderr: "" })
      await fourFailures()
      const asked = await runChild(program, { ...env, LEVEL: "debug" })
      expect(asked.code).toBe(0)
      expect(asked.stdout).toBe("")
      // Every retry's line, on stderr, in logfmt.
      expect(asked.stderr.match(/^timestamp=\S+ level=DEBUG .*retry/gm)).toHaveLength(3)
      expect(asked.stderr).toMatch(/^timestamp=\S+ level=WARN .*message="token refresh failed"/m)
      expect(asked.stderr).not.toContain(mock.persons[0]!.personUid)
    },
    45_000
  )

  it("a logLevel or logger that is not one is InvalidConfig", () => {
    for (const [options, setting] of [[{ logLevel: "loud" }, "logLevel"], [{ logger: "console" }, "logger"]] as const) {
      expect(() =>
        createClinicalClient(
          { baseUrl: "https://x.org", applicationId: MockClinicalServer.demoApplicationId, ...options } as never
        )
      )
        .toThrow(expect.objectContaining({ _tag: "InvalidConfig", setting }))
    }
  })
})

describe("AbortSignal", () => {
  it("aborting mid-request rejects with the signal's reason and closes the socket", async () => {
    const scope = Effect.runSync(Scope.make())
    started.push({ close: () => Effect.runPromise(Scope.close(scope, Exit.void)) })
    const server = await Effect.runPromise(Scope.extend(Hostile.serve(Hostile.withToken(() => {})), scope))
    const clinical = clientFor(server.url, Hostile.APPLICATION_ID, { requestTimeout: "30 seconds" })
    const controller = new AbortController()
    const call = clinical.medications(Hostile.PERSON_UID, { signal: controller.signal })
    while (server.received.length < 2) await new Promise((resolve) => setTimeout(resolve, 5))
    expect(server.abandoned()).toBe(1)
    const reason = new Error("the user went away")
    controller.abort(reason)
    expect(await rejection(call)).toBe(reason)
    await Effect.runPromise(server.drained.pipe(Effect.timeout("2 seconds")))
  })

  it("an already aborted signal rejects at once and sends nothing", async () => {
    const mock = await startMock()
    const clinical = clientFor(mock.url, mock.applicationId)
    const controller = new AbortController()
    controller.abort()
    const error = await rejection(clinical.medications(mock.persons[0]!.personUid, { signal: controller.signal }))
    expect((error as Error).name).toBe("AbortError")
    expect((await mock.counters()).dataRequests).toBe(0)
  })
})

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

describe("close", () => {
  it("a program that closes its client exits by itself, with nothing left running", async () => {
    const mock = await startMock()
    // The package as built, in a process of its own: no process.exit, so it ends only when
    // nothing of the client (sockets, timers, fibers) is left holding the event loop.
    const program = `
      import { createClinicalClient } from ${
      JSON.stringify(Path.resolve(import.meta.dirname, "../dist/src/promise.js"))
    }
      const clinical = createClinicalClient({ baseUrl: process.env.URL, applicationId: process.env.APPLICATION_ID })
      const { medications } = await clinical.medications(process.env.PERSON_UID)
      console.log(medications.length)
      await clinical.close()
    `
    // A child that does not end by itself is killed at the timeout, and its exit code is then null.
    const { code, stdout } = await new Promise<{ code: number | null; stdout: string }>((resolve) => {
      const child = execFile(process.execPath, ["--input-type=module", "-e", program], {
        env: {
          ...process.env,
          URL: mock.url,
          APPLICATION_ID: mock.applicationId,
          PERSON_UID: mock.persons[0]!.personUid
        },
        timeout: 20_000
      }, (_, stdout) => resolve({ code: child.exitCode, stdout }))
    })
    expect(code).toBe(0)
    expect(stdout.trim()).toBe(String(mock.persons[0]!.medications.length))
    // A whole process start: 1 s alone, over 5 on a machine busy with other test files.
  }, 30_000)

  it("calls after close reject with ClientClosed; close twice is fine", async () => {
    const mock = await startMock()
    const clinical = createClinicalClient({ baseUrl: mock.url, applicationId: mock.applicationId })
    await clinical.medications(mock.persons[0]!.personUid)
    await clinical.close()
    await clinical[Symbol.asyncDispose]()
    const error = await rejection(clinical.medications(mock.persons[0]!.personUid))
    expect(error).toBeInstanceOf(ClientClosed)
    expect((error as Error).message).toContain("the client is closed")
  })
})

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
