/**
 * A faithful stand-in for the service, for development and tests, served in memory (as an
 * `HttpTransport`, no sockets) or over real HTTP on 127.0.0.1.
 *
 * It behaves as the service's public help pages (https://openapi.intelichart.com/Help) describe it:
 * POST only (else 405), paths matched
 * case-insensitively, tokens shaped like the real ones with `TOKEN_EXPIRES` / `Date` headers, 401
 * for an unknown token or a mismatched `ApplicationId`, 419 for an expired token, 400 for missing
 * data, the `{ Success, ErrorType, ErrorMessage, ... }` envelope. All of its time comes from
 * Effect's `Clock` (so `TestClock` drives it) plus a configurable server clock offset.
 *
 * Its medication records are invented (see `fixturePersons`): the real fields are not published.
 */
import * as NodeHttpServer from "@effect/platform-node/NodeHttpServer"
import * as NodeHttpServerRequest from "@effect/platform-node/NodeHttpServerRequest"
import type * as HttpServerError from "@effect/platform/HttpServerError"
import * as HttpServerRequest from "@effect/platform/HttpServerRequest"
import * as HttpServerResponse from "@effect/platform/HttpServerResponse"
import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Context from "effect/Context"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Http from "node:http"
import { InvalidConfig, type TransportError } from "./ClinicalError.js"
import * as HttpDate from "./HttpDate.js"
import * as HttpTransport from "./HttpTransport.js"
import { field, isRecord, parse } from "./internal/json.js"
import {
  DEMO_APPLICATION_ID,
  FIXTURE_PERSONS,
  type MockDevice,
  type MockEthnicity,
  type MockMedication,
  type MockPerson
} from "./internal/mockFixture.js"

export type { MockDevice, MockEthnicity, MockMedication, MockPerson }

/** The ApplicationId the mock accepts by default (a made-up GUID). */
export const demoApplicationId: string = DEMO_APPLICATION_ID

/** The built-in persons: three, with two to six invented medications each, ethnicities and devices. */
export const fixturePersons: ReadonlyArray<MockPerson> = FIXTURE_PERSONS

/** Paths of the operations the mock serves (matched case-insensitively). */
export const paths = {
  token: "/api/Server/Token",
  authenticate: "/api/Server/Authenticate",
  medications: "/api/clinical/medication/get",
  ethnicities: "/api/Demographics/ethnicity/get",
  detailedEthnicities: "/api/Demographics/detailedethnicity/get",
  uniqueDeviceIdentifiers: "/api/Clinical/UniqueDeviceIdentifier/Get"
} as const

/** An operation of the mock, or `any` for fault targets. */
export type Operation = keyof typeof paths

/** What a fault applies to. */
export type Target = Operation | "any"

/** A fault the mock can inject in place of (or before) its normal answer. */
export type Fault =
  | { readonly _tag: "Status"; readonly status: number; readonly body: string; readonly retryAfter?: string }
  | { readonly _tag: "Delay"; readonly millis: number }
  | { readonly _tag: "Drop" }
  | { readonly _tag: "NotJson" }
  | { readonly _tag: "MissingTokenExpires" }
  | { readonly _tag: "MalformedTokenExpires" }

/** Constructors of faults. */
export const Fault = {
  /** Answer with `status`, an optional body (JSON-encoded unless a string) and `Retry-After`. */
  status: (
    status: number,
    options?: { readonly body?: unknown; readonly retryAfter?: string | number | undefined }
  ): Fault => ({
    _tag: "Status",
    status,
    body: options?.body === undefined
      ? JSON.stringify({ Message: `Injected fault: HTTP ${status}.` })
      : typeof options.body === "string"
      ? options.body
      : JSON.stringify(options.body),
    ...(options?.retryAfter === undefined ? {} : { retryAfter: String(options.retryAfter) })
  }),
  /** Wait this long (on the mock's clock), then answer normally. */
  delay: (duration: Duration.DurationInput): Fault => ({
    _tag: "Delay",
    // Not a duration: NaN, which injectFaults refuses.
    millis: Option.match(Duration.decodeUnknown(duration), { onNone: () => Number.NaN, onSome: Duration.toMillis })
  }),
  /** Drop the connection without an answer. */
  drop: { _tag: "Drop" } as Fault,
  /** Answer 200 with an HTML page instead of JSON. */
  notJson: { _tag: "NotJson" } as Fault,
  /** Answer a token request normally, but without `TOKEN_EXPIRES`. */
  missingTokenExpires: { _tag: "MissingTokenExpires" } as Fault,
  /** Answer a token request normally, with a `TOKEN_EXPIRES` that is not an HTTP date. */
  malformedTokenExpires: { _tag: "MalformedTokenExpires" } as Fault
} as const

const FAULT_TAGS: ReadonlySet<string> = new Set([
  "Status",
  "Delay",
  "Drop",
  "NotJson",
  "MissingTokenExpires",
  "MalformedTokenExpires"
])

/** A fault built by {@link Fault}: a known kind, with a real status or delay. */
const isFault = (u: unknown): u is Fault =>
  isRecord(u) && typeof u._tag === "string" && FAULT_TAGS.has(u._tag) &&
  (u._tag !== "Status" || (Number.isInteger(u.status) && (u.status as number) >= 100 && (u.status as number) <= 599)) &&
  (u._tag !== "Delay" || (typeof u.millis === "number" && Number.isFinite(u.millis) && u.millis >= 0))

/** Faults drawn by chance, from a seeded generator (so a run can be repeated exactly). */
export interface RandomFaults {
  readonly seed: number
  /** Each fault with its probability per request; the probabilities must not add up to more than 1. */
  readonly faults: ReadonlyArray<{ readonly probability: number; readonly fault: Fault }>
}

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

/** What the mock did with one request: answered it, or dropped the connection. */
export type Outcome =
  | { readonly _tag: "Response"; readonly response: HttpTransport.TransportResponse }
  | { readonly _tag: "Drop" }

/** Settings of a mock. */
export interface Options {
  /** ApplicationIds accepted at the token endpoint. Default: `[demoApplicationId]`. */
  readonly applicationIds?: ReadonlyArray<string> | undefined
  /** The persons it knows. Default: `fixturePersons`. */
  readonly persons?: ReadonlyArray<MockPerson> | undefined
  /** Lifetime of the tokens it issues. Default one hour. */
  readonly tokenLifetime?: Duration.DurationInput | undefined
  /** Server clock minus the local (Effect) clock, in milliseconds; may be negative. Default 0. */
  readonly clockOffsetMillis?: number | undefined
  /** Seed of the generator behind its tokens. Default 1. */
  readonly seed?: number | undefined
  /** Requests kept in the request log (the oldest are dropped). Default 10,000. */
  readonly requestLogLimit?: number | undefined
}

/** A running mock: its answers and its controls. */
export interface Service {
  /** The accepted ApplicationIds. */
  readonly applicationIds: ReadonlyArray<string>
  /** The persons it knows. */
  readonly persons: ReadonlyArray<MockPerson>
  /** Answers one request (for adapters: the in-memory transport and the HTTP server use this). */
  readonly respond: (request: HttpTransport.TransportRequest) => Effect.Effect<Outcome>
  /** Answers one request as an in-memory transport would: a dropped connection is a `TransportError`. */
  readonly handle: (
    request: HttpTransport.TransportRequest
  ) => Effect.Effect<HttpTransport.TransportResponse, TransportError>
  /** Forgets every issued token, as a server that revoked them would. */
  readonly revokeAllTokens: Effect.Effect<void>
  /** Sets the lifetime of tokens issued from now on. */
  readonly setTokenLifetime: (lifetime: Duration.DurationInput) => Effect.Effect<void, InvalidConfig>
  /** Sets the server clock offset (server minus local, ms; may be negative). */
  readonly setClockOffset: (millis: number) => Effect.Effect<void, InvalidConfig>
  /** Queues faults for the next requests to `target`, one fault per request, in order. Anything else fails with `InvalidConfig`. */
  readonly injectFaults: (target: Target, faults: ReadonlyArray<Fault>) => Effect.Effect<void, InvalidConfig>
  /** Draws faults by chance for requests to `target` (after any queued ones); `undefined` stops it. */
  readonly setRandomFaults: (target: Target, faults: RandomFaults | undefined) => Effect.Effect<void>
  /** Removes queued and random faults. */
  readonly clearFaults: Effect.Effect<void>
  /** Running totals since start (or the last `resetCounters`). */
  readonly counters: Effect.Effect<Counters>
  /** The most recent requests, oldest first. */
  readonly requestLog: Effect.Effect<ReadonlyArray<LoggedRequest>>
  /** Zeroes the counters and empties the request log. */
  readonly resetCounters: Effect.Effect<void>
}

/** The tag of a mock in context. */
export class MockClinicalServer
  extends Context.Tag("effect-clinical/MockClinicalServer")<MockClinicalServer, Service>()
{}

/** mulberry32: small, fast, seeded; enough for repeatable fault draws and token bytes. */
const seededRandom = (seed: number): () => number => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const randomBytes = (random: () => number, length: number): Uint8Array => {
  const bytes = new Uint8Array(length)
  for (let i = 0; i < length; i++) bytes[i] = Math.floor(random() * 256)
  return bytes
}

const base64 = (bytes: Uint8Array): string => Buffer.from(bytes).toString("base64")

/**
 * A token shaped like the real ones: two base64 pieces joined, 112 characters. The first piece
 * starts with bytes that encode to `+/+/`, so `/`, `+` and `=` always occur.
 */
const makeToken = (random: () => number): string =>
  base64(new Uint8Array([0xfb, 0xff, 0xbf, ...randomBytes(random, 58)])) + base64(randomBytes(random, 20))

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
const DAY = /^(\d{4}-\d{2}-\d{2})/

const OPERATIONS = Object.keys(paths) as ReadonlyArray<Operation>

const byLowerCasePath = new Map(OPERATIONS.map((operation) => [paths[operation].toLowerCase(), operation]))

const operationOf = (path: string): Operation | undefined => byLowerCasePath.get(path.toLowerCase())

const pathOf = (url: string): string => {
  const start = url.indexOf("/", url.indexOf("//") + 2)
  if (start < 0) return "/"
  const end = url.search(/[?#]/)
  return end < 0 ? url.slice(start) : url.slice(start, end)
}

const parseJson = (body: string | undefined): unknown => Option.getOrUndefined(parse(body))

/** The operations that answer a person's data. */
type PersonDataOperation = Exclude<Operation, "token" | "authenticate">

/**
 * Each person-data operation: the collection it answers with, the person's items, and the day by
 * which the date range selects an item (none: the item is always selected).
 */
const PERSON_DATA: {
  readonly [K in PersonDataOperation]: {
    readonly collection: string
    readonly itemsOf: (person: MockPerson) => ReadonlyArray<object>
    readonly dateOf: (item: object) => string | undefined
  }
} = {
  medications: {
    collection: "Medications",
    itemsOf: (person) => person.medications,
    dateOf: (item) => (item as MockMedication).StartDate
  },
  ethnicities: { collection: "Ethnicities", itemsOf: (person) => person.ethnicities ?? [], dateOf: () => undefined },
  detailedEthnicities: {
    collection: "Ethnicities",
    itemsOf: (person) => person.detailedEthnicities ?? [],
    dateOf: () => undefined
  },
  uniqueDeviceIdentifiers: {
    collection: "UniqueDeviceIdentifier",
    itemsOf: (person) => person.uniqueDeviceIdentifiers ?? [],
    dateOf: (item) => (item as MockDevice).ImplantDate
  }
}

interface IssuedToken {
  readonly applicationId: string
  readonly expiresAt: number
}

interface Totals {
  tokensIssued: number
  byOperation: Record<Operation, number>
  dropped: number
  byStatus: Record<number, number>
}

const zeroTotals = (): Totals => ({
  tokensIssued: 0,
  byOperation: Object.fromEntries(OPERATIONS.map((operation) => [operation, 0])) as Record<Operation, number>,
  dropped: 0,
  byStatus: {}
})

const HUNDRED_YEARS = 100 * 365 * 24 * 60 * 60 * 1000

/** A lifetime in milliseconds; zero or negative is allowed (to test a client against bad tokens). */
const lifetimeOf = (lifetime: Duration.DurationInput): Effect.Effect<number, InvalidConfig> =>
  Option.match(Duration.decodeUnknown(lifetime), {
    onNone: () => Effect.fail(new InvalidConfig({ setting: "tokenLifetime", reason: "must be a duration" })),
    onSome: (duration) =>
      Duration.toMillis(duration) <= HUNDRED_YEARS
        ? Effect.succeed(Duration.toMillis(duration))
        : Effect.fail(new InvalidConfig({ setting: "tokenLifetime", reason: "must be at most 100 years" }))
  })

/** A clock offset: finite and within 100 years either way (an HTTP date must still exist). */
const offsetOf = (millis: number): Effect.Effect<number, InvalidConfig> =>
  Number.isFinite(millis) && Math.abs(millis) <= HUNDRED_YEARS
    ? Effect.succeed(millis)
    : Effect.fail(
      new InvalidConfig({
        setting: "clockOffsetMillis",
        reason: "must be a finite number of milliseconds within 100 years"
      })
    )

/** The option that a JavaScript caller (or a JSON file) got wrong, and why; `undefined` when all are fine. */
const refusedOption = (options: unknown): InvalidConfig | undefined => {
  const refuse = (setting: string, reason: string) => new InvalidConfig({ setting, reason })
  if (typeof options !== "object" || options === null) return refuse("options", "must be an object")
  const { applicationIds, persons, requestLogLimit, seed } = options as Options
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
  return undefined
}

/** Builds a mock. Its state lives as long as the returned service. Bad options fail with `InvalidConfig`. */
export const make = (options: Options = {}): Effect.Effect<Service, InvalidConfig> => {
  const refused = refusedOption(options)
  if (refused !== undefined) return Effect.fail(refused)
  return Effect.all([lifetimeOf(options.tokenLifetime ?? Duration.hours(1)), offsetOf(options.clockOffsetMillis ?? 0)])
    .pipe(Effect.map(([initialLifetime, initialOffset]) => build(options, initialLifetime, initialOffset)))
}

const build = (options: Options, initialLifetime: number, initialOffset: number): Service => {
  const applicationIds = options.applicationIds ?? [DEMO_APPLICATION_ID]
  const accepted = new Set(applicationIds.map((id) => id.toLowerCase()))
  const persons = options.persons ?? FIXTURE_PERSONS
  const byUid = new Map(persons.map((person) => [person.personUid, person]))
  const logLimit = options.requestLogLimit ?? 10_000
  const random = seededRandom(options.seed ?? 1)
  // Plain mutable state: every read and write happens inside one synchronous Effect step, and
  // JavaScript runs one step at a time, so no update can interleave with another.
  let lifetimeMillis = initialLifetime
  let clockOffset = initialOffset
  let tokens = new Map<string, IssuedToken>()
  let totals = zeroTotals()
  let log: Array<LoggedRequest> = []
  const queued = new Map<Target, Array<Fault>>()
  const randomFaults = new Map<Target, { readonly draw: () => number; readonly config: RandomFaults }>()

  const serverNow = Effect.map(Clock.currentTimeMillis, (now) => now + clockOffset)

  const json = (
    status: number,
    body: unknown,
    now: number,
    extra: Record<string, string> = {}
  ): HttpTransport.TransportResponse => ({
    status,
    headers: {
      "content-type": "application/json; charset=utf-8",
      "cache-control": "no-cache",
      pragma: "no-cache",
      expires: "-1",
      date: HttpDate.format(now),
      ...extra
    },
    body: typeof body === "string" ? body : JSON.stringify(body)
  })

  const envelope = (status: number, now: number, errorType: string, errorMessage: string, payload: object) =>
    json(status, { ...payload, Success: false, ErrorMessage: errorMessage, ErrorType: errorType }, now)

  const denied = (now: number) => json(401, { Message: "Authorization has been denied for this request." }, now)

  const issueToken = (request: HttpTransport.TransportRequest, now: number) => {
    const body = parseJson(HttpTransport.wireBody(request))
    if (!isRecord(body)) return json(400, { Message: "The request is invalid." }, now)
    const applicationId = field(body, "ApplicationId")
    if (
      typeof applicationId !== "string" || !GUID.test(applicationId) || !accepted.has(applicationId.toLowerCase())
    ) {
      return denied(now)
    }
    const token = makeToken(random)
    const expiresAt = now + lifetimeMillis
    tokens.set(token, { applicationId: applicationId.toLowerCase(), expiresAt })
    totals.tokensIssued++
    return json(200, { Token: token, TokenType: "Bearer" }, now, { token_expires: HttpDate.format(expiresAt) })
  }

  /** The checks every data request passes first: a known, unexpired token and its own ApplicationId. */
  const authorize = (request: HttpTransport.TransportRequest, now: number) => {
    const authorization = HttpTransport.wireHeader(request, "authorization") ?? ""
    const issued = authorization.startsWith("Bearer ") ? tokens.get(authorization.slice(7)) : undefined
    if (issued === undefined) return denied(now)
    if (now >= issued.expiresAt) return json(419, { Message: "The token has exceeded its lifetime." }, now)
    const applicationId = HttpTransport.wireHeader(request, "applicationid")
    if (applicationId === undefined || applicationId.toLowerCase() !== issued.applicationId) return denied(now)
    return undefined
  }

  /** A person-data operation: the BaseRequest body (PersonUid, StartDate, EndDate), the envelope with the collection. */
  const personData = (operation: PersonDataOperation) => (request: HttpTransport.TransportRequest, now: number) => {
    const refused = authorize(request, now)
    if (refused !== undefined) return refused
    const body = parseJson(HttpTransport.wireBody(request))
    if (!isRecord(body)) return json(400, { Message: "The request is invalid." }, now)
    const { collection, dateOf, itemsOf } = PERSON_DATA[operation]
    const none = { [collection]: null }
    const personUid = field(body, "PersonUid")
    if (typeof personUid !== "string" || personUid.length === 0) {
      return envelope(400, now, "MissingData", "PersonUid is required.", none)
    }
    const person = byUid.get(personUid)
    if (person === undefined) return envelope(400, now, "PersonNotFound", "The person could not be found.", none)
    const bounds: Array<string | undefined> = []
    for (const name of ["StartDate", "EndDate"]) {
      const value = field(body, name)
      if (value === undefined || value === null) bounds.push(undefined)
      else {
        const day = typeof value === "string" ? DAY.exec(value)?.[1] : undefined
        if (day === undefined) return envelope(400, now, "InvalidData", `${name} is not a date.`, none)
        bounds.push(day)
      }
    }
    const [from, to] = bounds
    const selected = itemsOf(person).filter((item) => {
      const day = dateOf(item)
      return day === undefined || ((from === undefined || day >= from) && (to === undefined || day <= to))
    })
    return json(200, { [collection]: selected, Success: true, ErrorMessage: null, ErrorType: null }, now)
  }

  const authenticate = (request: HttpTransport.TransportRequest, now: number) => {
    const refused = authorize(request, now)
    if (refused !== undefined) return refused
    const body = parseJson(HttpTransport.wireBody(request))
    if (!isRecord(body)) return json(400, { Message: "The request is invalid." }, now)
    const passCode = field(body, "PassCode")
    const dateOfBirth = field(body, "DateOfBirth")
    if (typeof passCode !== "string" || typeof dateOfBirth !== "string") {
      return envelope(400, now, "MissingData", "PassCode and DateOfBirth are required.", { PersonUid: null })
    }
    const person = persons.find((p) => p.passCode === passCode && p.dateOfBirth === dateOfBirth)
    if (person === undefined) {
      return envelope(400, now, "AuthenticationFailed", "The pass code or date of birth is not correct.", {
        PersonUid: null
      })
    }
    return json(200, { PersonUid: person.personUid, Success: true, ErrorMessage: null, ErrorType: null }, now)
  }

  const answer = (request: HttpTransport.TransportRequest, operation: Operation | undefined, now: number) => {
    if (request.method !== "POST") {
      return json(405, { Message: `The requested resource does not support http method '${request.method}'.` }, now)
    }
    switch (operation) {
      case "token":
        return issueToken(request, now)
      case "authenticate":
        return authenticate(request, now)
      case undefined:
        return json(404, { Message: "No HTTP resource was found that matches the request URI." }, now)
      default:
        return personData(operation)(request, now)
    }
  }

  const nextFault = (operation: Operation | undefined): Fault | undefined => {
    for (const target of [operation, "any"] as const) {
      if (target === undefined) continue
      const queue = queued.get(target)
      if (queue !== undefined && queue.length > 0) return queue.shift()
    }
    for (const target of [operation, "any"] as const) {
      if (target === undefined) continue
      const chance = randomFaults.get(target)
      if (chance === undefined) continue
      let roll = chance.draw()
      for (const { fault, probability } of chance.config.faults) {
        if (roll < probability) return fault
        roll -= probability
      }
    }
    return undefined
  }

  const record = (
    request: HttpTransport.TransportRequest,
    path: string,
    operation: Operation | undefined,
    at: number,
    status: number | "dropped"
  ) => {
    if (status === "dropped") totals.dropped++
    else totals.byStatus[status] = (totals.byStatus[status] ?? 0) + 1
    log.push({
      at,
      method: request.method,
      path,
      operation,
      headers: HttpTransport.wireHeaders(request),
      body: HttpTransport.wireBody(request),
      status
    })
    if (log.length > logLimit) log = log.slice(log.length - logLimit)
  }

  const withFault = (
    request: HttpTransport.TransportRequest,
    operation: Operation | undefined,
    fault: Fault | undefined,
    now: number
  ): Outcome => {
    if (fault?._tag === "Drop") return { _tag: "Drop" }
    if (fault?._tag === "Status") {
      const retryAfter = fault.retryAfter === undefined ? {} : { "retry-after": fault.retryAfter }
      return { _tag: "Response", response: json(fault.status, fault.body, now, retryAfter) }
    }
    if (fault?._tag === "NotJson") {
      const page = "<html><head><title>Service Unavailable</title></head><body>Service Unavailable</body></html>"
      return {
        _tag: "Response",
        response: { ...json(200, page, now), headers: { "content-type": "text/html", date: HttpDate.format(now) } }
      }
    }
    const response = answer(request, operation, now)
    if (operation === "token" && response.status === 200 && fault !== undefined) {
      const { token_expires: _dropped, ...headers } = response.headers
      if (fault._tag === "MissingTokenExpires") return { _tag: "Response", response: { ...response, headers } }
      if (fault._tag === "MalformedTokenExpires") {
        return { _tag: "Response", response: { ...response, headers: { ...headers, token_expires: "in one hour" } } }
      }
    }
    return { _tag: "Response", response }
  }

  const respond = (request: HttpTransport.TransportRequest): Effect.Effect<Outcome> =>
    Effect.gen(function*() {
      const path = pathOf(request.url)
      const operation = operationOf(path)
      if (operation !== undefined) totals.byOperation[operation]++
      let fault = nextFault(operation)
      if (fault?._tag === "Delay") {
        yield* Effect.sleep(Duration.millis(fault.millis))
        fault = undefined
      }
      const now = yield* serverNow
      const outcome = withFault(request, operation, fault, now)
      record(request, path, operation, now, outcome._tag === "Drop" ? "dropped" : outcome.response.status)
      return outcome
    })

  const handle = (request: HttpTransport.TransportRequest) =>
    Effect.flatMap(respond(request), (outcome) =>
      outcome._tag === "Drop"
        ? Effect.fail(HttpTransport.transportError(request, "Network", "the mock dropped the connection"))
        : Effect.succeed(outcome.response))

  return MockClinicalServer.of({
    applicationIds,
    persons,
    respond,
    handle,
    revokeAllTokens: Effect.sync(() => {
      tokens = new Map()
    }),
    setTokenLifetime: (lifetime) =>
      Effect.map(lifetimeOf(lifetime), (millis) => {
        lifetimeMillis = millis
      }),
    setClockOffset: (millis) =>
      Effect.map(offsetOf(millis), (valid) => {
        clockOffset = valid
      }),
    injectFaults: (target, faults) =>
      Array.isArray(faults) && faults.every(isFault)
        ? Effect.sync(() => {
          queued.set(target, [...(queued.get(target) ?? []), ...faults])
        })
        : Effect.fail(
          new InvalidConfig({ setting: "faults", reason: "must be an array of MockClinicalServer.Fault values" })
        ),
    setRandomFaults: (target, config) =>
      Effect.sync(() => {
        if (config === undefined) randomFaults.delete(target)
        else randomFaults.set(target, { draw: seededRandom(config.seed), config })
      }),
    clearFaults: Effect.sync(() => {
      queued.clear()
      randomFaults.clear()
    }),
    counters: Effect.sync(() => ({
      tokenRequests: totals.byOperation.token,
      tokensIssued: totals.tokensIssued,
      medicationRequests: totals.byOperation.medications,
      authenticateRequests: totals.byOperation.authenticate,
      requestsByOperation: { ...totals.byOperation },
      dataRequests: OPERATIONS.reduce(
        (sum, operation) => sum + (operation === "token" ? 0 : totals.byOperation[operation]),
        0
      ),
      dropped: totals.dropped,
      byStatus: { ...totals.byStatus }
    })),
    requestLog: Effect.sync(() => [...log]),
    resetCounters: Effect.sync(() => {
      totals = zeroTotals()
      log = []
    })
  })
}

/** A mock in context. */
export const layer = (options?: Options): Layer.Layer<MockClinicalServer, InvalidConfig> =>
  Layer.effect(MockClinicalServer, make(options))

/** An `HttpTransport` that sends every request to `mock`, in memory. */
export const transport = (mock: Service): HttpTransport.Service => HttpTransport.memory(mock.handle)

/**
 * A new mock served in memory as the `HttpTransport`, with the mock itself in context for its
 * controls. No sockets, and `TestClock` drives it.
 */
export const layerTransport = (
  options?: Options
): Layer.Layer<MockClinicalServer | HttpTransport.HttpTransport, InvalidConfig> =>
  Layer.effect(HttpTransport.HttpTransport, Effect.map(MockClinicalServer, transport)).pipe(
    Layer.provideMerge(layer(options))
  )

/** Where {@link serve} listens. */
export interface ServeOptions {
  /** Default 0: any free port. */
  readonly port?: number | undefined
}

/**
 * Serves `mock` over real HTTP on 127.0.0.1 until the scope closes, and returns its base URL
 * (`http://127.0.0.1:<port>`). Closing the scope closes every open connection at once.
 */
export const serve = (
  mock: Service,
  options: ServeOptions = {}
): Effect.Effect<string, HttpServerError.ServeError, Scope.Scope> =>
  Effect.gen(function*() {
    const nodeServer = Http.createServer()
    const server = yield* NodeHttpServer.make(() => nodeServer, { port: options.port ?? 0, host: "127.0.0.1" })
    // Registered after the server, so it runs first on close: the server stops now, mid-request too.
    yield* Effect.addFinalizer(() => Effect.sync(() => nodeServer.closeAllConnections()))
    yield* server.serve(
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const body = yield* Effect.orElseSucceed(request.text, () => "")
        const outcome = yield* mock.respond({
          method: request.method,
          url: `http://127.0.0.1${request.url}`,
          headers: request.headers,
          body
        })
        if (outcome._tag === "Drop") {
          NodeHttpServerRequest.toIncomingMessage(request).socket.destroy()
          return HttpServerResponse.empty({ status: 500 })
        }
        const { "content-type": contentType, ...headers } = outcome.response.headers
        return HttpServerResponse.text(outcome.response.body, {
          status: outcome.response.status,
          headers,
          ...(contentType === undefined ? {} : { contentType })
        })
      })
    )
    const address = server.address
    return address._tag === "TcpAddress" ? `http://127.0.0.1:${address.port}` : `http://127.0.0.1`
  })

/** The base URL (`http://127.0.0.1:<port>`) of the mock a {@link layerServed} serves. */
export class BaseUrl extends Context.Tag("effect-clinical/MockClinicalServer/BaseUrl")<BaseUrl, string>() {}

/**
 * A new mock served over loopback HTTP for as long as the layer lives: its controls
 * (`MockClinicalServer`) and its base URL (`BaseUrl`). No scope to manage by hand.
 */
export const layerServed = (
  options?: Options,
  serveOptions?: ServeOptions
): Layer.Layer<MockClinicalServer | BaseUrl, InvalidConfig | HttpServerError.ServeError> =>
  Layer.scopedContext(
    Effect.gen(function*() {
      const mock = yield* make(options)
      const url = yield* serve(mock, serveOptions)
      return Context.make(MockClinicalServer, mock).pipe(Context.add(BaseUrl, url))
    })
  )

/** A mock served over loopback HTTP, driven with Promises: for tests written without Effect. */
export interface Started {
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
  readonly setTokenLifetime: (lifetime: Duration.DurationInput) => Promise<void>
  readonly setClockOffset: (millis: number) => Promise<void>
  readonly resetCounters: () => Promise<void>
  /** Stops it, closing every open connection. */
  readonly close: () => Promise<void>
  readonly [Symbol.asyncDispose]: () => Promise<void>
}

/** Runs an effect, rejecting with its own typed error rather than a wrapper. */
const promise = <A, E>(effect: Effect.Effect<A, E>): Promise<A> =>
  Effect.runPromiseExit(effect).then((exit) => {
    if (Exit.isSuccess(exit)) return exit.value
    throw Option.getOrElse(Cause.failureOption(exit.cause), () => Cause.squash(exit.cause))
  })

/**
 * Starts a mock over loopback HTTP and resolves once it listens. Bad options reject with
 * `InvalidConfig`. `await mock.close()` (or `await using`) stops it.
 */
export const start = async (options?: Options & ServeOptions): Promise<Started> => {
  const scope = Effect.runSync(Scope.make())
  const close = () => Effect.runPromise(Scope.close(scope, Exit.void))
  try {
    const mock = await promise(make(options))
    const url = await promise(Scope.extend(serve(mock, options), scope))
    return {
      url,
      applicationId: mock.applicationIds[0] ?? DEMO_APPLICATION_ID,
      persons: mock.persons,
      counters: () => promise(mock.counters),
      requestLog: () => promise(mock.requestLog),
      injectFaults: (target, faults) => promise(mock.injectFaults(target, faults)),
      setRandomFaults: (target, faults) => promise(mock.setRandomFaults(target, faults)),
      clearFaults: () => promise(mock.clearFaults),
      revokeAllTokens: () => promise(mock.revokeAllTokens),
      setTokenLifetime: (lifetime) => promise(mock.setTokenLifetime(lifetime)),
      setClockOffset: (millis) => promise(mock.setClockOffset(millis)),
      resetCounters: () => promise(mock.resetCounters),
      close,
      [Symbol.asyncDispose]: close
    }
  } catch (error) {
    await close()
    throw error
  }
}
