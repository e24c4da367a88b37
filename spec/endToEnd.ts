/**
 * The client end to end, for any Effect line: the mock service (core/testing: its state, faults and
 * node:http server, no Effect in them) served on 127.0.0.1, and the line's client driven at its URL
 * through each of the line's transports and call paths (see `Networked`). Each test pins what the
 * mock saw over the wire, what came back, how many requests were made, and which typed error a
 * failure is; every flow's log lines and failure texts are checked for every secret (the
 * ApplicationId, the tokens issued, each person's PersonUid, pass code and date of birth) in any
 * form. Runner- and Effect-free: `node:assert` checks.
 */
import * as assert from "node:assert/strict"
import { field, isRecord, parse } from "../core/json.js"
import { faultsOf } from "../core/testing/faults.js"
import { DEMO_APPLICATION_ID, FIXTURE_PERSONS, type MockPerson } from "../core/testing/fixture.js"
import { listen, type Listening } from "../core/testing/mockHttp.js"
import { type Arrival, makeState, MockState, type Options } from "../core/testing/mockState.js"
import type { MockRequest } from "../core/testing/operations.js"
import {
  AUTHENTICATED,
  type CallPath,
  type Driver,
  type Failure,
  type NetworkSettings,
  type NetworkStep,
  type ObservedAt,
  type Outcome,
  type PersonRef,
  type Runner,
  type TokenFacts,
  type Transport
} from "./driver.js"
import type { KnownGaps } from "./hostile.js"
import { until } from "./hostileServer.js"
import { leakIn } from "./secretForms.js"

/** The mock's faults, a delay in milliseconds. */
const Fault = faultsOf<number>((millis) => millis)

const persons = FIXTURE_PERSONS
const person = (index: number): MockPerson => persons[index]!

/** A mock served on 127.0.0.1 for one test. */
interface Mock {
  readonly url: string
  readonly state: MockState<number>
  /** Stops it: answers still delayed are dropped, every connection closed. */
  readonly stop: () => Promise<void>
  /** Serves it again, on the same port, with the same state. */
  readonly restart: () => Promise<void>
}

/** How a test's mock is set up. */
interface MockSetup {
  readonly options?: Options<number>
  /** What a proxy between client and mock makes of each request (default: nothing). */
  readonly alter?: (request: MockRequest) => MockRequest
  /** Called as each request arrives, counted, before it is answered. */
  readonly onArrival?: (arrival: Arrival, state: MockState<number>) => void
  /** What an arrived request's answer waits for, if anything (a test's own signal, say). */
  readonly holdUntil?: (arrival: Arrival) => Promise<void> | undefined
}

/** Sleeps on the live clock; rejects (the request is dropped) when the mock stops first. */
const sleep = (millis: number, signal: AbortSignal): Promise<void> =>
  new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error("the mock stopped"))
    const stop = () => {
      clearTimeout(timer)
      reject(new Error("the mock stopped"))
    }
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", stop)
      resolve()
    }, millis)
    signal.addEventListener("abort", stop, { once: true })
  })

const startMock = async (setup: MockSetup, stopped: Array<() => Promise<void>>): Promise<Mock> => {
  const state = makeState<number>(setup.options ?? {}, (millis) => millis)
  if (!(state instanceof MockState)) throw new Error(`the mock refused ${state.setting}: ${state.reason}`)
  const serve = (port: number) =>
    listen(async (request, signal) => {
      const arrival = state.receive(setup.alter === undefined ? request : setup.alter(request))
      setup.onArrival?.(arrival, state)
      if (arrival.delayMillis !== undefined) await sleep(arrival.delayMillis, signal)
      await setup.holdUntil?.(arrival)
      return state.answer(arrival, Date.now())
    }, { port })
  let listening: Listening | undefined = await serve(0)
  const url = listening.url
  const stop = async () => {
    const running = listening
    listening = undefined
    await running?.close()
  }
  stopped.push(stop)
  return {
    url,
    state,
    stop,
    restart: async () => {
      listening = await serve(Number(new URL(url).port))
    }
  }
}

/** Every secret a flow against `mock` could leak: the ApplicationId, each person's, and every token it issued. */
const secretsOf = (mock: Mock): ReadonlyArray<string> => {
  const tokens = mock.state.requestLog().flatMap(({ headers }) => {
    const bearer = /^Bearer (.+)$/.exec(String(field(headers, "authorization") ?? ""))?.[1]
    return bearer === undefined ? [] : [bearer]
  })
  return [
    DEMO_APPLICATION_ID,
    ...persons.flatMap((p) => [p.personUid, p.passCode, p.dateOfBirth]),
    ...new Set(tokens)
  ]
}

const expectNoSecret = (label: string, text: string, secrets: ReadonlyArray<string>) => {
  const leak = leakIn(text, secrets)
  if (leak !== undefined) assert.fail(`${label} leaks a secret (${leak}): ${text.slice(0, 2000)}`)
}

/** Throws unless `actual` has each field of `expected`, equal. */
const expectFields = (actual: unknown, expected: Readonly<Record<string, unknown>>, label = "") => {
  if (typeof actual !== "object" || actual === null) assert.fail(`${label}: expected an object, got ${String(actual)}`)
  const picked = Object.fromEntries(Object.keys(expected).map((key) => [key, (actual as Record<string, unknown>)[key]]))
  assert.deepStrictEqual(picked, expected, label)
}

/** A step's value (fails if it failed). */
const succeeded = (outcome: Outcome | undefined): unknown => {
  if (outcome?._tag !== "Success") assert.fail(`expected a success, got ${JSON.stringify(outcome)}`)
  return outcome.value
}

/** A step's failure (fails if it succeeded). */
const failed = (outcome: Outcome | undefined): Failure => {
  if (outcome?._tag !== "Failure") assert.fail(`expected a failure, got ${JSON.stringify(outcome)}`)
  return outcome.error
}

const medicationsOf = (outcome: Outcome | undefined): unknown =>
  (succeeded(outcome) as { readonly medications: unknown }).medications

const itemsOf = (outcome: Outcome | undefined): unknown => (succeeded(outcome) as { readonly items: unknown }).items

/** The outcomes a step of `All` or `JoinForked` came to. */
const outcomesOf = (outcome: Outcome | undefined): ReadonlyArray<Outcome> =>
  succeeded(outcome) as ReadonlyArray<Outcome>

const medications = (personUid: PersonRef): NetworkStep => ({ _tag: "Medications", personUid })

/** A step that does `what` to the mock (or waits on it) between the client's calls. */
const meanwhile = (what: () => unknown): NetworkStep => ({ _tag: "Await", what: async () => await what() })

/** The bodies of the requests the mock logged for `operation`, parsed. */
const bodiesOf = (mock: Mock, operation: string): ReadonlyArray<Readonly<Record<string, unknown>>> =>
  mock.state.requestLog().filter((logged) => logged.operation === operation).map(({ body }) => {
    const json = parse(body)?.value
    return isRecord(json) ? json : assert.fail(`a ${operation} body that is no JSON object: ${body}`)
  })

/** What a test gets: mocks stopped when it ends, and flows through its transport on its path. */
interface Context {
  readonly serve: (setup?: MockSetup) => Promise<Mock>
  /** A fresh client of `mock`, `steps` run through it; every log line and failure text checked for secrets. */
  readonly run: (
    mock: Mock,
    steps: ReadonlyArray<NetworkStep>,
    settings?: Omit<NetworkSettings, "applicationId">
  ) => Promise<ObservedAt>
}

interface Case {
  readonly name: string
  /** Only on the effect path: the test is about a cold client (no token yet). */
  readonly effectPathOnly?: boolean
  readonly timeoutMillis?: number
  readonly body: (context: Context) => Promise<void>
}

const cases: Array<Case> = []
const add = (test: Case) => void cases.push(test)

add({
  name: "authenticates each fixture person, then reads their medications and ethnicities with the PersonUid it got",
  body: async ({ run, serve }) => {
    const mock = await serve()
    const { outcomes } = await run(
      mock,
      persons.flatMap((p): ReadonlyArray<NetworkStep> => [
        { _tag: "Authenticate", passCode: p.passCode, dateOfBirth: p.dateOfBirth },
        medications(AUTHENTICATED),
        { _tag: "PersonData", operation: "ethnicities", personUid: AUTHENTICATED, as: "Ethnicity" }
      ])
    )
    persons.forEach((p, i) => {
      expectFields(succeeded(outcomes[3 * i]), { personUid: p.personUid }, `${p.displayName}'s PersonUid`)
      assert.deepStrictEqual(medicationsOf(outcomes[3 * i + 1]), p.medications)
      assert.deepStrictEqual(itemsOf(outcomes[3 * i + 2]), p.ethnicities)
    })
    assert.deepStrictEqual(mock.state.counters().requestsByOperation, {
      token: 1,
      authenticate: 3,
      medications: 3,
      ethnicities: 3,
      detailedEthnicities: 0,
      uniqueDeviceIdentifiers: 0
    })
    // Over the wire: each person's pass code, then their PersonUid, every data request with the one
    // token and the ApplicationId.
    const passCodes = bodiesOf(mock, "authenticate").map((body) => field(body, "PassCode"))
    assert.deepStrictEqual(passCodes, persons.map((p) => p.passCode))
    for (const operation of ["medications", "ethnicities"]) {
      const personUids = bodiesOf(mock, operation).map((body) => field(body, "PersonUid"))
      assert.deepStrictEqual(personUids, persons.map((p) => p.personUid))
    }
    const data = mock.state.requestLog().filter((logged) => logged.operation !== "token")
    assert.equal(new Set(data.map(({ headers }) => field(headers, "authorization"))).size, 1)
    for (const { headers } of data) assert.equal(field(headers, "applicationid"), DEMO_APPLICATION_ID)
  }
})

add({
  name: "reads the medications of every fixture person with one token request",
  body: async ({ run, serve }) => {
    const mock = await serve()
    const { outcomes } = await run(mock, persons.map((p) => medications(p.personUid)))
    assert.deepStrictEqual(outcomes.map(medicationsOf), persons.map((p) => p.medications))
    expectFields(mock.state.counters(), { tokenRequests: 1, medicationRequests: 3 })
  }
})

add({
  name: "reads each documented person-data operation, and sends a date range that selects the items",
  body: async ({ run, serve }) => {
    const mock = await serve()
    const p = person(0)
    const range = { startDate: "2021-01-01", endDate: "2023-12-31" }
    const { outcomes } = await run(mock, [
      { _tag: "PersonData", operation: "medications", personUid: p.personUid },
      { _tag: "PersonData", operation: "ethnicities", personUid: p.personUid },
      { _tag: "PersonData", operation: "detailedEthnicities", personUid: p.personUid },
      { _tag: "PersonData", operation: "uniqueDeviceIdentifiers", personUid: p.personUid },
      { _tag: "PersonData", operation: "medications", personUid: p.personUid, ...range }
    ])
    assert.deepStrictEqual(outcomes.slice(0, 4).map(itemsOf), [
      p.medications,
      p.ethnicities ?? [],
      p.detailedEthnicities ?? [],
      p.uniqueDeviceIdentifiers ?? []
    ])
    const inRange = p.medications.filter(({ StartDate }) => StartDate >= range.startDate && StartDate <= range.endDate)
    assert.ok(inRange.length > 0 && inRange.length < p.medications.length, "the range selects some, not all")
    assert.deepStrictEqual(itemsOf(outcomes[4]), inRange)
    const [whole = {}, ranged = {}] = bodiesOf(mock, "medications")
    assert.deepStrictEqual([field(whole, "StartDate"), field(whole, "EndDate")], [undefined, undefined])
    assert.deepStrictEqual([field(ranged, "StartDate"), field(ranged, "EndDate")], [range.startDate, range.endDate])
  }
})

add({
  name: "500 concurrent calls on a cold client make exactly one token request",
  effectPathOnly: true,
  // 500 real round trips through fetch: seconds on a busy 2-core machine, not 5.
  timeoutMillis: 60_000,
  body: async ({ run, serve }) => {
    const mock = await serve()
    const many = Array.from({ length: 500 }, (_, i) => person(i % 3))
    const { outcomes } = await run(mock, [{ _tag: "All", steps: many.map((p) => medications(p.personUid)) }])
    assert.deepStrictEqual(outcomesOf(outcomes[0]).map(medicationsOf), many.map((p) => p.medications))
    expectFields(mock.state.counters(), { tokenRequests: 1, medicationRequests: 500 })
  }
})

add({
  name: "tokens revoked mid-run give one refresh and no failed call",
  timeoutMillis: 60_000, // 300 real round trips, as above
  body: async ({ run, serve }) => {
    // The tokens are revoked as the 100th data request arrives, whatever the machine's load: that
    // request, and any sent beside it, carry the revoked token.
    let dataRequests = 0
    const mock = await serve({
      onArrival: ({ operation }, state) => {
        if (operation !== "token" && ++dataRequests === 100) state.revokeAllTokens()
      }
    })
    const p = person(0)
    const { outcomes } = await run(mock, [{
      _tag: "All",
      steps: Array.from({ length: 300 }, () => medications(p.personUid)),
      concurrency: 25
    }])
    for (const outcome of outcomesOf(outcomes[0])) assert.deepStrictEqual(medicationsOf(outcome), p.medications)
    const counters = mock.state.counters()
    assert.equal(counters.tokenRequests, 2)
    const refused = counters.byStatus[401] ?? 0
    assert.ok(refused >= 1, "at least one request carried the revoked token")
    assert.equal(counters.medicationRequests, 300 + refused)
  }
})

add({
  name: "a call that waited for a turn sends the token refreshed while it waited, not the one it had",
  body: async ({ run, serve }) => {
    let release = () => {}
    const released = new Promise<void>((resolve) => (release = resolve))
    let data = 0
    // The first data request is held until the test lets it go, while the second waits for its turn.
    const mock = await serve({
      holdUntil: ({ operation }) => operation === "medications" && ++data === 1 ? released : undefined
    })
    const p = person(0)
    const { outcomes } = await run(mock, [
      { _tag: "Token" },
      { _tag: "Fork", count: 1, step: medications(p.personUid) },
      meanwhile(() => until("the first request arrived", () => mock.state.counters().medicationRequests >= 1)),
      { _tag: "Fork", count: 1, step: medications(p.personUid) },
      { _tag: "Sleep", millis: 100 },
      // While it waits, the token is replaced (as a 401 to another call, or a refresh ahead, would).
      { _tag: "InvalidateToken" },
      { _tag: "Token" },
      meanwhile(release),
      { _tag: "JoinForked" }
    ], { maxConcurrentRequests: 1 })
    for (const outcome of outcomesOf(outcomes[8])) assert.deepStrictEqual(medicationsOf(outcome), p.medications)
    const [held, waited] = mock.state.requestLog().filter((logged) => logged.operation === "medications").map((
      { headers }
    ) => field(headers, "authorization"))
    assert.notEqual(waited, held, "the waiting call sent the token it had before its turn came")
    expectFields(mock.state.counters(), { tokenRequests: 2, medicationRequests: 2 })
  }
})

add({
  name: "a token expired on the server (419) is renewed and the call succeeds",
  body: async ({ run, serve }) => {
    const mock = await serve()
    const { outcomes } = await run(mock, [
      { _tag: "Token" },
      // The server now sees every issued token as expired.
      meanwhile(() => mock.state.setClockOffset(2 * 3_600_000)),
      medications(person(1).personUid),
      { _tag: "Token" }
    ])
    const before = succeeded(outcomes[0]) as TokenFacts
    const after = succeeded(outcomes[3]) as TokenFacts
    assert.deepStrictEqual(medicationsOf(outcomes[2]), person(1).medications)
    assert.equal(after.generation, before.generation + 1)
    assert.equal(after.lifetimeMillis, 3_600_000)
    const counters = mock.state.counters()
    assert.equal(counters.byStatus[419], 1)
    assert.equal(counters.tokenRequests, 2)
  }
})

add({
  name: "a server clock one hour ahead changes nothing",
  body: async ({ run, serve }) => {
    const mock = await serve({ options: { clockOffsetMillis: 3_600_000 } })
    const { outcomes } = await run(mock, [...persons.map((p) => medications(p.personUid)), { _tag: "Token" }])
    assert.deepStrictEqual(outcomes.slice(0, 3).map(medicationsOf), persons.map((p) => p.medications))
    const token = succeeded(outcomes[3]) as TokenFacts
    assert.equal(token.lifetimeMillis, 3_600_000)
    const skew = token.serverClockSkewMillis
    assert.ok(skew !== undefined && Math.abs(skew - 3_600_000) < 5_000, `server clock skew: ${skew}`)
    expectFields(mock.state.counters(), { tokenRequests: 1, medicationRequests: 3 })
  }
})

add({
  name: "a data request that reaches the server as a GET gives UnexpectedStatus 405, not retried",
  body: async ({ run, serve }) => {
    // A proxy (think: a misconfigured one) that turns data requests into GETs.
    const mock = await serve({
      alter: (request) => /token$/i.test(request.url) ? request : { ...request, method: "GET" }
    })
    const { outcomes } = await run(mock, [medications(person(0).personUid)])
    expectFields(failed(outcomes[0]), { _tag: "UnexpectedStatus", status: 405, operation: "medications" })
    expectFields(mock.state.counters(), { tokenRequests: 1, medicationRequests: 1 })
  }
})

add({
  name: "the server stopping mid-run gives TransportError, and the client works again once it is back",
  body: async ({ run, serve }) => {
    const mock = await serve()
    const p = person(0)
    // Retries off: with them, the call would back off and retry for seconds before failing.
    const { outcomes } = await run(mock, [
      medications(p.personUid),
      // Stopped while a request is in flight (the mock holds it for a second)...
      meanwhile(() => mock.state.injectFaults("medications", [Fault.delay(1_000)])),
      { _tag: "Fork", count: 1, step: medications(p.personUid) },
      meanwhile(async () => {
        await until("the second request arrived", () => mock.state.counters().medicationRequests >= 2)
        await mock.stop()
      }),
      { _tag: "JoinForked" },
      // ...and while it is down.
      medications(p.personUid),
      meanwhile(() => mock.restart()),
      medications(p.personUid)
    ], { maxRetries: 0 })
    assert.deepStrictEqual(medicationsOf(outcomes[0]), p.medications)
    const [inFlight] = outcomesOf(outcomes[4])
    expectFields(failed(inFlight), { _tag: "TransportError", reason: "Network", operation: "medications" })
    expectFields(failed(outcomes[5]), { _tag: "TransportError", reason: "Network", operation: "medications" })
    assert.deepStrictEqual(medicationsOf(outcomes[7]), p.medications)
    // The one sent while it was down never arrived.
    expectFields(mock.state.counters(), { medicationRequests: 3 })
  }
})

add({
  name: "a dropped connection is retried and the call succeeds; a non-JSON page is not retried",
  body: async ({ run, serve }) => {
    const mock = await serve()
    mock.state.injectFaults("medications", [Fault.notJson, Fault.drop])
    const p = person(0)
    const { outcomes } = await run(mock, [medications(p.personUid), medications(p.personUid)], {
      retryBaseDelay: "10 millis"
    })
    expectFields(failed(outcomes[0]), { _tag: "ResponseDecodeError", operation: "medications", status: 200 })
    assert.deepStrictEqual(medicationsOf(outcomes[1]), p.medications)
    expectFields(mock.state.counters(), { medicationRequests: 3, dropped: 1 })
  }
})

add({
  name: "with retries off, a dropped connection is a TransportError, and is not sent again",
  body: async ({ run, serve }) => {
    const mock = await serve()
    mock.state.injectFaults("medications", [Fault.drop])
    const { outcomes } = await run(mock, [medications(person(0).personUid)], { maxRetries: 0 })
    expectFields(failed(outcomes[0]), { _tag: "TransportError", reason: "Network", operation: "medications" })
    expectFields(mock.state.counters(), { medicationRequests: 1, dropped: 1 })
  }
})

/** The end-to-end specification, for `driver`'s line; `knownGaps` are tests it is known to fail (by name). */
export const endToEnd = ({ describe, it }: Runner, driver: Driver, knownGaps: KnownGaps = {}): void => {
  const names = new Set(cases.map((test) => test.name))
  for (const name of Object.keys(knownGaps)) {
    if (!names.has(name)) throw new Error(`a known gap that is no test of the specification: ${name}`)
  }
  const register = (test: Case, transport: Transport, path: CallPath) => {
    const body = async () => {
      const stops: Array<() => Promise<void>> = []
      try {
        await test.body({
          serve: (setup = {}) => startMock(setup, stops),
          run: async (mock, steps, settings = {}) => {
            const observed = await driver.networked.runAt(
              mock.url,
              transport,
              path,
              steps,
              { applicationId: DEMO_APPLICATION_ID, ...settings }
            )
            const secrets = secretsOf(mock)
            for (const line of observed.logLines) expectNoSecret("log line", line, secrets)
            for (const [label, text] of observed.failureTexts) expectNoSecret(label, text, secrets)
            return observed
          }
        })
      } finally {
        await Promise.all(stops.map((stop) => stop()))
      }
    }
    const gap = knownGaps[test.name]
    if (gap === undefined) return it(test.name, body, test.timeoutMillis)
    // A known gap: it must still fail, so that the list loses it the day it is closed.
    it(`KNOWN GAP (${gap}): ${test.name}`, async () => {
      const passed = await body().then(() => true, () => false)
      if (passed) throw new Error("this known gap is closed: take it off the line's KNOWN_GAPS")
    }, test.timeoutMillis)
  }
  for (const [transport, paths] of driver.networked.transports) {
    for (const path of paths) {
      describe(`end to end against the mock on loopback (${driver.line}), through ${transport}, on the ${path}`, () => {
        for (const test of cases) {
          if (test.effectPathOnly !== true || path === "effect path") register(test, transport, path)
        }
      })
    }
  }
}
