/**
 * The call machine (core/call/callMachine.ts) driven directly: events in, actions out, with the
 * core's own load control and gate, a clock that moves only when told, and no Effect, no fiber.
 */
import { describe, expect, it } from "vitest"
import { type Action, CallMachine, type Client } from "../core/call/callMachine.js"
import { HeadersByToken } from "../core/call/dataHeaders.js"
import * as Gate from "../core/call/gate.js"
import { LoadControl, type Settings } from "../core/call/loadControl.js"
import { PerClient } from "../core/call/perClient.js"
import type { ClinicalError, TransportError } from "../core/errors.js"

interface Token {
  readonly name: string
}

/** A clock the test sets: wall ms, and the monotonic ns the load control reads. */
class FakeClock {
  millis = 1_000_000
  nanos = (): bigint => BigInt(this.millis) * 1_000_000n
}

const OFF: Settings = { limit: undefined, latency: undefined, initialLimit: 8, budget: undefined, breaker: undefined }

const policy = { maxRetries: 2, baseDelayMillis: 100, maxDelayMillis: 1000, retryRateLimited: true }

/** A client of the machine: its cache's fresh token is `cached.token`, the errors stay plain data. */
const clientOf = (settings: Partial<Settings> = {}, withReader = true) => {
  const clock = new FakeClock()
  const gate = Gate.make(8)
  const cached: { token: Token | undefined } = { token: { name: "t1" } }
  const client: Client<Token, ClinicalError, FakeClock> = {
    resendable: { ...policy, resendable: true },
    singleUse: { ...policy, resendable: false },
    deadlineMillis: 5000,
    requestTimeoutMillis: 2000,
    deadlineText: "5s",
    load: new LoadControl<FakeClock>({ ...OFF, ...settings }, gate, () => {}, (c) => c.nanos()),
    fresh: withReader ? () => cached.token : undefined,
    wrap: (error) => error
  }
  const call = (resendable = true) =>
    new CallMachine(client, "medications", "https://api.test/medications", resendable, clock)
  return { clock, cached, client, call }
}

const serverError = (status = 503): ClinicalError => ({ _tag: "ServerError", operation: "medications", status })
const network = (requestSent?: boolean): TransportError => ({
  _tag: "TransportError",
  operation: "medications",
  reason: "Network",
  method: "POST",
  url: "https://api.test/medications",
  detail: "connection reset",
  ...(requestSent === undefined ? {} : { requestSent })
})

/** A breaker that one failure opens, for half a second. */
const BREAKER = { failureThreshold: 1, cooldownMillis: 500, maxCooldownMillis: 5000, probeTimeoutMillis: 2000 }

/** One call whose request failed on the wire (which opens {@link BREAKER}). */
const failedOnWire = (m: CallMachine<Token, ClinicalError, FakeClock>, now: number) => {
  m.start(now)
  m.turnGiven(now)
  m.sendFailed(network())
  return m
}

/** One attempt sent and answered with a status whose error is `error` (the runner's reading). */
const answeredWith = (
  m: CallMachine<Token, ClinicalError, FakeClock>,
  status: number,
  error: ClinicalError,
  now: number
) => {
  expect(m.turnGiven(now)).toBe("Send")
  m.replied(status)
  return m.answeredWith(status, error, now, 0.5)
}

describe("the call machine", () => {
  it("a cached token and a reply that reads: turn, send, finish, one attempt, nothing else", () => {
    const { call, clock } = clientOf()
    const m = call()
    const actions: Array<Action> = [m.start(clock.millis), m.turnGiven(clock.millis)]
    expect(m.token).toEqual({ name: "t1" })
    expect(m.waitMillis).toBe(2000)
    m.replied(200)
    actions.push(m.answered(200, { ok: true }))
    expect(actions).toEqual(["Turn", "Send", "Finish"])
    expect([m.attempts, m.retried, m.status, m.json]).toEqual([1, 0, 200, { ok: true }])
  })

  it("no fresh token: asks for one within the deadline, then a turn", () => {
    const { call, cached, clock } = clientOf()
    cached.token = undefined
    const m = call()
    expect(m.start(clock.millis)).toBe("Token")
    expect(m.waitMillis).toBe(5000)
    clock.millis += 1200
    expect(m.tokenTaken({ name: "t2" }, clock.millis)).toBe("Turn")
    expect(m.turnGiven(clock.millis)).toBe("Send")
    expect(m.token).toEqual({ name: "t2" })
  })

  it("a turn that came later sends the cache's newer token; at the same instant, the one taken", () => {
    const { call, cached, clock } = clientOf()
    const m = call()
    m.start(clock.millis)
    cached.token = { name: "t2" }
    expect(m.turnGiven(clock.millis)).toBe("Send")
    expect(m.token).toEqual({ name: "t1" })
    const later = call()
    later.start(clock.millis)
    cached.token = { name: "t3" }
    clock.millis += 1
    later.turnGiven(clock.millis)
    expect(later.token).toEqual({ name: "t3" })
  })

  it("401 drops the token sent and tries again at once; a second 401 is the call's error", () => {
    const { call, cached, clock } = clientOf()
    const m = call()
    m.start(clock.millis)
    const unauthorized: ClinicalError = { _tag: "Unauthorized", operation: "medications", status: 401 }
    expect(answeredWith(m, 401, unauthorized, clock.millis)).toBe("Refresh")
    expect([m.token, m.status]).toEqual([{ name: "t1" }, 401])
    cached.token = undefined
    expect(m.refreshed(clock.millis)).toBe("Token")
    expect(m.tokenTaken({ name: "t2" }, clock.millis)).toBe("Turn")
    expect(answeredWith(m, 401, unauthorized, clock.millis)).toBe("Fail")
    expect(m.error).toBe(unauthorized)
    expect([m.attempts, m.retried, m.refusedBy]).toEqual([2, 0, undefined])
  })

  it("503 sleeps the backoff, then attempts again; retries stop at maxRetries with the last error", () => {
    const { call, clock } = clientOf()
    const m = call()
    m.start(clock.millis)
    const sleeps: Array<number> = []
    for (let retry = 1; retry <= 2; retry++) {
      expect(answeredWith(m, 503, serverError(), clock.millis)).toBe("Sleep")
      expect([m.retried, m.cause]).toEqual([retry, "503"])
      sleeps.push(m.waitMillis)
      clock.millis += m.waitMillis
      expect(m.woke(clock.millis)).toBe("Turn")
    }
    // Equal jitter with a draw of 0.5: three quarters of 100, then of 200.
    expect(sleeps).toEqual([75, 150])
    const last = serverError(502)
    expect(answeredWith(m, 502, last, clock.millis)).toBe("Fail")
    expect(m.error).toBe(last)
    expect(m.attempts).toBe(3)
  })

  it("a turn given after the deadline fails at once, unsent, saying the deadline", () => {
    const { call, clock } = clientOf()
    const m = call()
    m.start(clock.millis)
    clock.millis += 5000
    expect(m.turnGiven(clock.millis)).toBe("Fail")
    expect(m.error).toEqual({
      _tag: "TransportError",
      operation: "medications",
      reason: "Deadline",
      requestSent: false,
      method: "POST",
      url: "https://api.test/medications",
      detail: "the call's deadline of 5s passed"
    })
  })

  it("an attempt timeout cut to the deadline: its timeout is the deadline's (sent), not retried", () => {
    const { call, clock } = clientOf()
    const m = call()
    m.start(clock.millis)
    clock.millis += 4000
    expect(m.turnGiven(clock.millis)).toBe("Send")
    expect(m.waitMillis).toBe(1000)
    m.sendFailed({ ...network(), reason: "Timeout", detail: "timed out" })
    clock.millis += 1000
    expect(m.afterFailure(clock.millis, 0.5)).toBe("Fail")
    expect(m.error).toMatchObject({ reason: "Deadline", detail: "the call's deadline of 5s passed" })
    expect(m.error).not.toHaveProperty("requestSent")
  })

  it("a token that could not be had within the deadline is the call's deadline, unsent", () => {
    const { call, cached, clock } = clientOf()
    cached.token = undefined
    const m = call()
    m.start(clock.millis)
    const waited: ClinicalError = { ...network(), operation: "token", reason: "Deadline", detail: "x" }
    expect(m.tokenFailed(waited, clock.millis + 5000, 0.5)).toBe("Fail")
    expect(m.error).toMatchObject({ operation: "medications", reason: "Deadline", requestSent: false })
    expect(m.token).toBeUndefined()
  })

  it("a call that may not be resent is retried only where its request surely never went", () => {
    const { call, clock } = clientOf()
    const once = call(false)
    once.start(clock.millis)
    once.turnGiven(clock.millis)
    once.sendFailed(network())
    expect(once.afterFailure(clock.millis, 0.5)).toBe("Fail")
    const unsent = call(false)
    unsent.start(clock.millis)
    unsent.turnGiven(clock.millis)
    unsent.sendFailed(network(false))
    expect(unsent.afterFailure(clock.millis, 0.5)).toBe("Sleep")
  })

  it("the open circuit refuses a call before its first attempt, saying when it probes", () => {
    const { call, clock } = clientOf({ breaker: BREAKER })
    failedOnWire(call(), clock.millis)
    const second = call()
    expect(second.start(clock.millis)).toBe("Fail")
    expect(second.error).toEqual({ _tag: "CircuitOpen", operation: "medications", retryAfterMillis: 500 })
    expect([second.refusedBy, second.attempts]).toEqual(["circuit", 0])
  })

  it("the circuit that opened while a call waited for its turn refuses it then, its attempt uncounted", () => {
    const { call, clock } = clientOf({ breaker: BREAKER })
    const waiting = call()
    expect(waiting.start(clock.millis)).toBe("Turn")
    failedOnWire(call(), clock.millis)
    expect(waiting.turnGiven(clock.millis)).toBe("Fail")
    expect([waiting.error?._tag, waiting.refusedBy, waiting.attempts]).toEqual(["CircuitOpen", "circuit", 0])
  })

  it("an interrupted probe lets the next call probe at once; an interrupted ordinary call changes nothing", () => {
    const { call, clock } = clientOf({ breaker: BREAKER })
    expect(failedOnWire(call(), clock.millis).probing()).toBe(false)
    clock.millis += 500
    const probe = call()
    expect(probe.start(clock.millis)).toBe("Turn")
    expect(probe.probing()).toBe(true)
    // While the probe is out, others are refused.
    const refused = call()
    expect(refused.start(clock.millis)).toBe("Fail")
    probe.interrupted()
    const next = call()
    expect(next.start(clock.millis)).toBe("Turn")
    expect(next.probing()).toBe(true)
  })

  it("a retry the budget cannot pay for fails at once with the error that asked for it", () => {
    const budget = { ratio: 0, perSecond: 0.5, windowMillis: 2000 }
    const { call, clock } = clientOf({ budget })
    const m = call()
    m.start(clock.millis)
    expect(answeredWith(m, 503, serverError(), clock.millis)).toBe("Sleep")
    m.woke(clock.millis)
    const error = serverError()
    expect(answeredWith(m, 503, error, clock.millis)).toBe("Fail")
    expect([m.error, m.refusedBy]).toEqual([error, "budget"])
  })

  it("a token failure that says the service is down is retried unpaid by the budget when the breaker bounds it", () => {
    const budget = { ratio: 0, perSecond: 0.001, windowMillis: 2000 }
    const { call, cached, clock } = clientOf({ budget, breaker: { ...BREAKER, failureThreshold: 10 } })
    cached.token = undefined
    const m = call()
    m.start(clock.millis)
    const down: ClinicalError = { ...serverError(), operation: "token" }
    expect(m.tokenFailed(down, clock.millis, 0.5)).toBe("Sleep")
    const paid = clientOf({ budget })
    paid.cached.token = undefined
    const other = paid.call()
    other.start(clock.millis)
    expect(other.tokenFailed(down, clock.millis, 0.5)).toBe("Fail")
    expect(other.refusedBy).toBe("budget")
  })
})

describe("the call machine, at the edges", () => {
  it("a token failure other than the deadline is the call's as it is, and unsent: a single-use call retries it", () => {
    const { call, cached, clock } = clientOf()
    cached.token = undefined
    const tls = call()
    tls.start(clock.millis)
    const refused: ClinicalError = { ...network(), operation: "token", reason: "Tls", detail: "bad certificate" }
    expect(tls.tokenFailed(refused, clock.millis, 0.5)).toBe("Fail")
    expect(tls.error).toBe(refused)
    const once = call(false)
    once.start(clock.millis)
    expect(once.tokenFailed({ ...network(), operation: "token" }, clock.millis, 0.5)).toBe("Sleep")
  })

  it("an attempt timeout that is not the deadline's stays a timeout, retried; a failure cut by the deadline but not a timeout stays itself", () => {
    const { call, clock } = clientOf()
    const timeout = call()
    timeout.start(clock.millis)
    timeout.turnGiven(clock.millis)
    timeout.sendFailed({ ...network(), reason: "Timeout", detail: "timed out" })
    expect(timeout.afterFailure(clock.millis, 0.5)).toBe("Sleep")
    expect(timeout.cause).toBe("timeout")
    const late = call()
    late.start(clock.millis)
    clock.millis += 4000
    late.turnGiven(clock.millis)
    const reset = network()
    late.sendFailed(reset)
    expect(late.afterFailure(clock.millis, 0.5)).toBe("Sleep")
    clock.millis += late.waitMillis
    late.woke(clock.millis)
    expect(late.turnGiven(clock.millis)).toBe("Send")
    late.sendFailed(reset)
    expect(late.afterFailure(clock.millis, 0.5)).toBe("Sleep")
  })

  it("the status of the last answer stays through a failure that had none", () => {
    const { call, clock } = clientOf()
    const m = call()
    m.start(clock.millis)
    expect(answeredWith(m, 503, serverError(), clock.millis)).toBe("Sleep")
    m.woke(clock.millis)
    m.turnGiven(clock.millis)
    m.sendFailed(network())
    m.afterFailure(clock.millis, 0.5)
    expect(m.status).toBe(503)
  })

  it("with no reader of the cache, every attempt asks for its token and sends the one it got", () => {
    const { call, clock } = clientOf({}, false)
    const m = call()
    expect(m.start(clock.millis)).toBe("Token")
    m.tokenTaken({ name: "t9" }, clock.millis)
    clock.millis += 10
    expect(m.turnGiven(clock.millis)).toBe("Send")
    expect(m.token).toEqual({ name: "t9" })
  })

  it("the probe's turn sends it; its answer closes the circuit, and the next call is no probe", () => {
    const { call, clock } = clientOf({ breaker: BREAKER })
    failedOnWire(call(), clock.millis)
    clock.millis += 500
    const probe = call()
    probe.start(clock.millis)
    expect(probe.turnGiven(clock.millis)).toBe("Send")
    probe.replied(200)
    const next = call()
    expect(next.start(clock.millis)).toBe("Turn")
    expect(next.probing()).toBe(false)
  })

  it("a call whose circuit opened while it waited, its turn coming after the cool-down, goes as the probe", () => {
    const { call, clock } = clientOf({ breaker: BREAKER })
    const waiting = call()
    waiting.start(clock.millis)
    failedOnWire(call(), clock.millis)
    clock.millis += 500
    expect(waiting.turnGiven(clock.millis)).toBe("Send")
    expect(waiting.probing()).toBe(true)
  })

  it("first attempts pay into the retry budget, retries do not", () => {
    // A floor of 1 and a deposit of 1 per first attempt; no time passes, so nothing decays.
    const budget = { ratio: 1, perSecond: 0.5, windowMillis: 2000 }
    const { call, clock } = clientOf({ budget })
    const first = call()
    first.start(clock.millis)
    expect(answeredWith(first, 503, serverError(), clock.millis)).toBe("Sleep")
    first.woke(clock.millis)
    expect(answeredWith(first, 503, serverError(), clock.millis)).toBe("Sleep")
    first.woke(clock.millis)
    expect(answeredWith(first, 503, serverError(), clock.millis)).toBe("Fail")
    expect(first.refusedBy).toBeUndefined()
    const second = call()
    second.start(clock.millis)
    expect(answeredWith(second, 503, serverError(), clock.millis)).toBe("Sleep")
    second.woke(clock.millis)
    expect(answeredWith(second, 503, serverError(), clock.millis)).toBe("Fail")
    expect(second.refusedBy).toBe("budget")
  })

  it("a data request's failure is paid from the budget even when the breaker is on: only a token failure goes unpaid", () => {
    const budget = { ratio: 0, perSecond: 0.001, windowMillis: 2000 }
    const { call, clock } = clientOf({ budget, breaker: { ...BREAKER, failureThreshold: 10 } })
    const m = call()
    m.start(clock.millis)
    m.turnGiven(clock.millis)
    m.sendFailed(network())
    expect(m.afterFailure(clock.millis, 0.5)).toBe("Fail")
    expect(m.refusedBy).toBe("budget")
  })
})

describe("a call's parts in the core", () => {
  it("the data headers: JSON, no compression, the token and the ApplicationId as the line's secrets", () => {
    const headers = new HeadersByToken({ secret: "app" })
    const token = { authorization: { secret: "Bearer t1" } }
    const first = headers.of(token)
    expect(first).toEqual({
      "Content-Type": "application/json",
      "Accept-Encoding": "identity",
      Authorization: { secret: "Bearer t1" },
      ApplicationId: { secret: "app" }
    })
    // Made once per token: the same object until the token changes.
    expect(headers.of(token)).toBe(first)
    expect(headers.of({ authorization: { secret: "Bearer t2" } }).Authorization).toEqual({ secret: "Bearer t2" })
  })

  it("one call function per token cache, made again only for another config or transport", () => {
    const perClient = new PerClient<object, { readonly n: number }>()
    let made = 0
    const make = () => ({ n: ++made })
    const tokens = {}
    const config = {}
    const transport = {}
    const first = perClient.of(tokens, config, transport, make)
    expect(perClient.of(tokens, config, transport, make)).toBe(first)
    expect(perClient.of({}, config, transport, make).n).toBe(2)
    expect(perClient.of(tokens, config, {}, make).n).toBe(3)
    expect(perClient.of(tokens, {}, transport, make).n).toBe(4)
    // Another config alone, over the same token cache and transport.
    const again = {}
    const before = perClient.of(again, config, transport, make)
    expect(perClient.of(again, {}, transport, make)).not.toBe(before)
    expect(made).toBe(6)
  })
})
