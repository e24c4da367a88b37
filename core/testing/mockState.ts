/**
 * The mock service's state, once for both lines: its options checked (a refusal as plain data),
 * its tokens and persons, its counters and request log, its faults, its clock offset and token
 * lifetime in milliseconds. Each line's `make` is a shell over it: it reads its clock, sleeps for a
 * Delay fault, and turns a refusal into its `InvalidConfig`.
 *
 * Plain mutable state: each step is synchronous, and a line runs one step at a time, so no update
 * can interleave with another.
 */
import type { SettingRefusal } from "../errors.js"
import { isRecord } from "../json.js"
import type { Received } from "../transport/message.js"
import { pathOf } from "../url.js"
import { applyFault, type Fault, isFault, type Outcome, type RandomFaults, schedule, type Target } from "./faults.js"
import { DEMO_APPLICATION_ID, FIXTURE_PERSONS, type MockPerson } from "./fixture.js"
import {
  answer as answerRequest,
  type Behaviour,
  defaultBehaviour,
  type MockRequest,
  type Operation,
  operationOf,
  OPERATIONS,
  type ServerState
} from "./operations.js"
import { seededRandom } from "./seeded.js"

/** One request as the mock received it, and how it answered. Holds secrets: it is the server's log. */
export interface LoggedRequest {
  /** Server time (epoch ms). */
  readonly at: number
  readonly method: string
  readonly path: string
  readonly operation: Operation | undefined
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
  readonly status: number | "dropped"
}

/** Running totals. */
export interface Counters {
  readonly tokenRequests: number
  readonly tokensIssued: number
  readonly medicationRequests: number
  readonly authenticateRequests: number
  /** Requests by operation (token and authenticate included). */
  readonly requestsByOperation: Readonly<Record<Operation, number>>
  /** Every request but token requests: authenticate and the person-data operations. */
  readonly dataRequests: number
  readonly dropped: number
  /** Responses by status code. */
  readonly byStatus: Readonly<Record<number, number>>
}

/** Settings of a mock; `D` is the line's duration input (of `tokenLifetime`). */
export interface Options<D> {
  /** ApplicationIds accepted at the token endpoint. Default: `[demoApplicationId]`. */
  readonly applicationIds?: ReadonlyArray<string> | undefined
  /** The persons it knows. Default: `fixturePersons`. */
  readonly persons?: ReadonlyArray<MockPerson> | undefined
  /** Lifetime of the tokens it issues. Default one hour. */
  readonly tokenLifetime?: D | undefined
  /** Server clock minus the local (Effect) clock, in milliseconds; may be negative. Default 0. */
  readonly clockOffsetMillis?: number | undefined
  /** Seed of the generator behind its tokens. Default 1. */
  readonly seed?: number | undefined
  /** Requests kept in the request log (the oldest are dropped). Default 10,000. */
  readonly requestLogLimit?: number | undefined
  /** The form of `TOKEN_EXPIRES`: `imf-fixdate` (default, as documented), `rfc850` or `asctime`. */
  readonly tokenExpiresForm?: Behaviour["tokenExpiresForm"] | undefined
  /** Whether issuing a token revokes the earlier ones of its ApplicationId (unknown of the real service). Default false. */
  readonly revokeOnIssue?: boolean | undefined
  /** Status of the `Success: false` answer for an unknown person: 400 (default) or 200 (both plausible). */
  readonly unknownPersonStatus?: number | undefined
  /** Status for a method other than POST. Default 405, as documented. */
  readonly wrongMethodStatus?: number | undefined
  /** `any-case` (default: `personuid` binds, as ASP.NET does) or `exact` (only `PersonUid` binds). */
  readonly fieldNames?: Behaviour["fieldNames"] | undefined
}

const HOUR = 60 * 60 * 1000
const HUNDRED_YEARS = 100 * 365 * 24 * HOUR

const refuse = (setting: string, reason: string): SettingRefusal => ({ setting, reason })

/** A lifetime in milliseconds (`undefined`: not a duration); zero or negative is allowed, to test a client against bad tokens. */
const refusedLifetime = (millis: number | undefined): SettingRefusal | undefined =>
  millis === undefined
    ? refuse("tokenLifetime", "must be a duration")
    : millis <= HUNDRED_YEARS
    ? undefined
    : refuse("tokenLifetime", "must be at most 100 years")

/** A clock offset: finite and within 100 years either way (an HTTP date must still exist). */
const refusedOffset = (millis: number): SettingRefusal | undefined =>
  Number.isFinite(millis) && Math.abs(millis) <= HUNDRED_YEARS
    ? undefined
    : refuse("clockOffsetMillis", "must be a finite number of milliseconds within 100 years")

/** The statuses and forms an option may take; the first refused, or `undefined`. */
const refusedBehaviour = (options: Options<unknown>): SettingRefusal | undefined => {
  const { fieldNames, revokeOnIssue, tokenExpiresForm, unknownPersonStatus, wrongMethodStatus } = options
  if (tokenExpiresForm !== undefined && !["imf-fixdate", "rfc850", "asctime"].includes(tokenExpiresForm)) {
    return refuse("tokenExpiresForm", "must be imf-fixdate, rfc850 or asctime")
  }
  if (revokeOnIssue !== undefined && typeof revokeOnIssue !== "boolean") {
    return refuse("revokeOnIssue", "must be a boolean")
  }
  const statuses = [["unknownPersonStatus", unknownPersonStatus], ["wrongMethodStatus", wrongMethodStatus]] as const
  for (const [setting, status] of statuses) {
    if (status !== undefined && !(Number.isInteger(status) && status >= 200 && status <= 599)) {
      return refuse(setting, "must be an HTTP status from 200 to 599")
    }
  }
  if (fieldNames !== undefined && fieldNames !== "any-case" && fieldNames !== "exact") {
    return refuse("fieldNames", "must be any-case or exact")
  }
  return undefined
}

/** The option that a JavaScript caller (or a JSON file) got wrong, and why; `undefined` when all are fine. */
export const refusedOption = (options: unknown): SettingRefusal | undefined => {
  if (typeof options !== "object" || options === null) return refuse("options", "must be an object")
  const { applicationIds, persons, requestLogLimit, seed } = options as Options<unknown>
  if (
    applicationIds !== undefined &&
    !(Array.isArray(applicationIds) && applicationIds.every((id) => typeof id === "string"))
  ) {
    return refuse("applicationIds", "must be an array of strings")
  }
  if (
    persons !== undefined &&
    !(Array.isArray(persons) && persons.every((p) => isRecord(p) && typeof p.personUid === "string"))
  ) {
    return refuse("persons", "must be an array of persons, each with a personUid")
  }
  if (requestLogLimit !== undefined && !(Number.isInteger(requestLogLimit) && requestLogLimit >= 0)) {
    return refuse("requestLogLimit", "must be a whole number, 0 or more")
  }
  if (seed !== undefined && !Number.isFinite(seed)) return refuse("seed", "must be a finite number")
  return refusedBehaviour(options as Options<unknown>)
}

interface Totals {
  byOperation: Record<Operation, number>
  dropped: number
  byStatus: Record<number, number>
}

const zeroTotals = (): Totals => ({
  byOperation: Object.fromEntries(OPERATIONS.map((operation) => [operation, 0])) as Record<Operation, number>,
  dropped: 0,
  byStatus: {}
})

/** A request received and counted, its fault taken: what {@link MockState.answer} completes. */
export interface Arrival {
  readonly request: MockRequest
  readonly path: string
  readonly operation: Operation | undefined
  /** How long to wait (on the line's clock) before answering: a Delay fault's. */
  readonly delayMillis: number | undefined
  /** The fault that shapes the answer (never a Delay: that one is waited out, then answered normally). */
  readonly fault: Fault | undefined
}

/** A mock service's state and its steps; `D` is the line's duration input, read by `millisOf`. */
export class MockState<D> {
  readonly applicationIds: ReadonlyArray<string>
  readonly persons: ReadonlyArray<MockPerson>
  private readonly state: ServerState
  private readonly faults = schedule()
  private readonly logLimit: number
  private clockOffset: number
  private totals = zeroTotals()
  private log: Array<LoggedRequest> = []

  constructor(
    options: Options<D>,
    lifetimeMillis: number,
    clockOffset: number,
    private readonly millisOf: (duration: D) => number | undefined
  ) {
    this.applicationIds = options.applicationIds ?? [DEMO_APPLICATION_ID]
    this.persons = options.persons ?? FIXTURE_PERSONS
    this.logLimit = options.requestLogLimit ?? 10_000
    this.clockOffset = clockOffset
    this.state = {
      behaviour: {
        tokenExpiresForm: options.tokenExpiresForm ?? defaultBehaviour.tokenExpiresForm,
        revokeOnIssue: options.revokeOnIssue ?? defaultBehaviour.revokeOnIssue,
        unknownPersonStatus: options.unknownPersonStatus ?? defaultBehaviour.unknownPersonStatus,
        wrongMethodStatus: options.wrongMethodStatus ?? defaultBehaviour.wrongMethodStatus,
        fieldNames: options.fieldNames ?? defaultBehaviour.fieldNames
      },
      accepted: new Set(this.applicationIds.map((id) => id.toLowerCase())),
      persons: this.persons,
      byUid: new Map(this.persons.map((person) => [person.personUid, person])),
      random: seededRandom(options.seed ?? 1),
      lifetimeMillis,
      tokens: new Map(),
      tokensIssued: 0
    }
  }

  /** The first step of an answer: the request counted under its operation, its fault taken. */
  receive(request: MockRequest): Arrival {
    const path = pathOf(request.url)
    const operation = operationOf(path)
    if (operation !== undefined) this.totals.byOperation[operation]++
    const fault = this.faults.next(operation)
    return fault?._tag === "Delay"
      ? { request, path, operation, delayMillis: fault.millis, fault: undefined }
      : { request, path, operation, delayMillis: undefined, fault }
  }

  /** The second step, at `localNow` (the line's clock, epoch ms): the answer or a drop, logged. */
  answer(arrival: Arrival, localNow: number): Outcome {
    const { fault, operation, request } = arrival
    const now = localNow + this.clockOffset
    const outcome = applyFault(
      fault,
      operation,
      now,
      (): Received => answerRequest(this.state, request, operation, now)
    )
    this.record(arrival, now, outcome._tag === "Drop" ? "dropped" : outcome.response.status)
    return outcome
  }

  private record({ operation, path, request }: Arrival, at: number, status: number | "dropped"): void {
    if (status === "dropped") this.totals.dropped++
    else this.totals.byStatus[status] = (this.totals.byStatus[status] ?? 0) + 1
    this.log.push({ at, method: request.method, path, operation, headers: request.headers, body: request.body, status })
    if (this.log.length > this.logLimit) this.log = this.log.slice(this.log.length - this.logLimit)
  }

  /** Forgets every issued token, as a server that revoked them would. */
  revokeAllTokens(): void {
    this.state.tokens = new Map()
  }

  /** Sets the lifetime of tokens issued from now on; a refusal changes nothing. */
  setTokenLifetime(lifetime: D): SettingRefusal | undefined {
    const millis = this.millisOf(lifetime)
    const refused = refusedLifetime(millis)
    if (refused === undefined) this.state.lifetimeMillis = millis!
    return refused
  }

  /** Sets the server clock offset (server minus local, ms; may be negative); a refusal changes nothing. */
  setClockOffset(millis: number): SettingRefusal | undefined {
    const refused = refusedOffset(millis)
    if (refused === undefined) this.clockOffset = millis
    return refused
  }

  /** Queues faults for the next requests to `target`, one per request, in order; anything but faults is refused. */
  injectFaults(target: Target, faults: unknown): SettingRefusal | undefined {
    if (!(Array.isArray(faults) && faults.every(isFault))) {
      return refuse("faults", "must be an array of MockClinicalServer.Fault values")
    }
    this.faults.inject(target, faults)
    return undefined
  }

  /** Draws faults by chance for requests to `target` (after any queued ones); `undefined` stops it. */
  setRandomFaults(target: Target, config: RandomFaults | undefined): void {
    this.faults.setRandom(target, config)
  }

  /** Removes queued and random faults. */
  clearFaults(): void {
    this.faults.clear()
  }

  /** Running totals since start (or the last `resetCounters`). */
  counters(): Counters {
    const { byOperation, byStatus, dropped } = this.totals
    return {
      tokenRequests: byOperation.token,
      tokensIssued: this.state.tokensIssued,
      medicationRequests: byOperation.medications,
      authenticateRequests: byOperation.authenticate,
      requestsByOperation: { ...byOperation },
      dataRequests: OPERATIONS.reduce(
        (sum, operation) => sum + (operation === "token" ? 0 : byOperation[operation]),
        0
      ),
      dropped,
      byStatus: { ...byStatus }
    }
  }

  /** The most recent requests, oldest first. */
  requestLog(): ReadonlyArray<LoggedRequest> {
    return [...this.log]
  }

  /** Zeroes the counters and empties the request log. */
  resetCounters(): void {
    this.totals = zeroTotals()
    this.state.tokensIssued = 0
    this.log = []
  }
}

/**
 * A mock served over loopback HTTP, driven with Promises (each line's `MockClinicalServer.start`):
 * for tests written without Effect. `D`: a duration as the line takes it.
 */
export interface Started<D> {
  /** Its base URL, `http://127.0.0.1:<port>`: the `baseUrl` of a client. */
  readonly url: string
  /** An ApplicationId it accepts. */
  readonly applicationId: string
  /** The persons it knows. */
  readonly persons: ReadonlyArray<MockPerson>
  readonly counters: () => Promise<Counters>
  readonly requestLog: () => Promise<ReadonlyArray<LoggedRequest>>
  readonly injectFaults: (target: Target, faults: ReadonlyArray<Fault>) => Promise<void>
  readonly setRandomFaults: (target: Target, faults: RandomFaults | undefined) => Promise<void>
  readonly clearFaults: () => Promise<void>
  readonly revokeAllTokens: () => Promise<void>
  readonly setTokenLifetime: (lifetime: D) => Promise<void>
  readonly setClockOffset: (millis: number) => Promise<void>
  readonly resetCounters: () => Promise<void>
  /** Stops it, closing every open connection. */
  readonly close: () => Promise<void>
  readonly [Symbol.asyncDispose]: () => Promise<void>
}

/**
 * A mock's state from options a JavaScript caller may have got wrong: the state, or the first
 * refused option. `millisOf` reads a duration of the line (`undefined`: not one).
 */
export const makeState = <D>(
  options: Options<D>,
  millisOf: (duration: D) => number | undefined
): MockState<D> | SettingRefusal => {
  const refused = refusedOption(options)
  if (refused !== undefined) return refused
  const lifetime = options.tokenLifetime === undefined ? HOUR : millisOf(options.tokenLifetime)
  const offset = options.clockOffsetMillis ?? 0
  const refusedSetting = refusedLifetime(lifetime) ?? refusedOffset(offset)
  return refusedSetting ?? new MockState(options, lifetime!, offset, millisOf)
}
