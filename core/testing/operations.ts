/**
 * The mock's operations, each a handler a reader can find by name (the token, authenticate, and
 * the person-data operations), answering as the service's public help pages describe. They read
 * and change the server's state; the server's time is passed in. Each line hands them the request as
 * it went on the wire (its secrets revealed: this is the server's side).
 */
import * as HttpDate from "../httpDate.js"
import { field, isRecord, parse } from "../json.js"
import type { Received } from "../transport/message.js"
import { isGuid } from "../validate.js"
import type { MockDevice, MockMedication, MockPerson } from "./fixture.js"

/** Paths of the operations the mock serves (matched case-insensitively). */
export const paths = {
  token: "/api/Server/Token",
  authenticate: "/api/Server/Authenticate",
  medications: "/api/clinical/medication/get",
  ethnicities: "/api/Demographics/ethnicity/get",
  detailedEthnicities: "/api/Demographics/detailedethnicity/get",
  uniqueDeviceIdentifiers: "/api/Clinical/UniqueDeviceIdentifier/Get"
} as const

/** One request as the mock receives it: as it went on the wire, header names as sent. */
export interface MockRequest {
  readonly method: string
  /** Absolute. */
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
}

/** A header of the request by case-insensitive name. */
const headerOf = (request: MockRequest, name: string): string | undefined => {
  const value = field(request.headers, name)
  return typeof value === "string" ? value : undefined
}

/** An operation of the mock. */
export type Operation = keyof typeof paths

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

const DAY = /^(\d{4}-\d{2}-\d{2})/

/** Every operation the mock serves. */
export const OPERATIONS = Object.keys(paths) as ReadonlyArray<Operation>

const byLowerCasePath = new Map(OPERATIONS.map((operation) => [paths[operation].toLowerCase(), operation]))

/** The operation at a path, matched case-insensitively. */
export const operationOf = (path: string): Operation | undefined => byLowerCasePath.get(path.toLowerCase())

const parseJson = (body: string | undefined): unknown => parse(body)?.value

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

/** A token the mock issued. */
export interface IssuedToken {
  readonly applicationId: string
  readonly expiresAt: number
}

/**
 * How the mock answers the points the service's documentation leaves open (each can be set both
 * ways, so that a client, or `effect-clinical probe`, can be tested against either answer).
 */
export interface Behaviour {
  /** The form of `TOKEN_EXPIRES`. Default `imf-fixdate` (the documented sample's). */
  readonly tokenExpiresForm: "imf-fixdate" | "rfc850" | "asctime"
  /** Whether issuing a token revokes the ones issued before it for the same ApplicationId. Default false. */
  readonly revokeOnIssue: boolean
  /** The status of the `Success: false` answer for an unknown person. Default 400. */
  readonly unknownPersonStatus: number
  /** The status of a request with another method than POST. Default 405 (documented). */
  readonly wrongMethodStatus: number
  /** Whether body field names bind in any letter case (`personuid`) or only as documented (`PersonUid`). Default `any-case`. */
  readonly fieldNames: "any-case" | "exact"
}

export const defaultBehaviour: Behaviour = {
  tokenExpiresForm: "imf-fixdate",
  revokeOnIssue: false,
  unknownPersonStatus: 400,
  wrongMethodStatus: 405,
  fieldNames: "any-case"
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
const DAYS = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
const LONG_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]

/** An HTTP date in one of the three forms RFC 9110 names. */
export const formatDate = (millis: number, form: Behaviour["tokenExpiresForm"]): string => {
  if (form === "imf-fixdate") return HttpDate.format(millis)
  const d = new Date(millis)
  const two = (n: number) => String(n).padStart(2, "0")
  const time = `${two(d.getUTCHours())}:${two(d.getUTCMinutes())}:${two(d.getUTCSeconds())}`
  return form === "rfc850"
    ? `${LONG_DAYS[d.getUTCDay()]}, ${two(d.getUTCDate())}-${MONTHS[d.getUTCMonth()]}-${
      two(d.getUTCFullYear() % 100)
    } ${time} GMT`
    : `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${
      String(d.getUTCDate()).padStart(2, " ")
    } ${time} ${d.getUTCFullYear()}`
}

/** The state the operations read and change. Every change happens in one synchronous step. */
export interface ServerState {
  readonly behaviour: Behaviour
  readonly accepted: ReadonlySet<string>
  readonly persons: ReadonlyArray<MockPerson>
  readonly byUid: ReadonlyMap<string, MockPerson>
  readonly random: () => number
  lifetimeMillis: number
  tokens: Map<string, IssuedToken>
  tokensIssued: number
}

/** A JSON answer with the headers the service sends. */
export const json = (
  status: number,
  body: unknown,
  now: number,
  extra: Record<string, string> = {}
): Received => ({
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

/** The token operation: a token for an accepted ApplicationId, with TOKEN_EXPIRES and Date. */
const issueToken = (state: ServerState, request: MockRequest, now: number) => {
  const body = parseJson(request.body)
  if (!isRecord(body)) return json(400, { Message: "The request is invalid." }, now)
  const applicationId = field(body, "ApplicationId")
  if (
    typeof applicationId !== "string" || !isGuid(applicationId) || !state.accepted.has(applicationId.toLowerCase())
  ) {
    return denied(now)
  }
  const token = makeToken(state.random)
  const expiresAt = now + state.lifetimeMillis
  if (state.behaviour.revokeOnIssue) {
    for (const [issued, { applicationId: owner }] of state.tokens) {
      if (owner === applicationId.toLowerCase()) state.tokens.delete(issued)
    }
  }
  state.tokens.set(token, { applicationId: applicationId.toLowerCase(), expiresAt })
  state.tokensIssued++
  return json(200, { Token: token, TokenType: "Bearer" }, now, {
    token_expires: formatDate(expiresAt, state.behaviour.tokenExpiresForm)
  })
}

/** The checks every data request passes first: a known, unexpired token and its own ApplicationId. */
const authorize = (state: ServerState, request: MockRequest, now: number) => {
  const authorization = headerOf(request, "authorization") ?? ""
  const issued = authorization.startsWith("Bearer ") ? state.tokens.get(authorization.slice(7)) : undefined
  if (issued === undefined) return denied(now)
  if (now >= issued.expiresAt) return json(419, { Message: "The token has exceeded its lifetime." }, now)
  const applicationId = headerOf(request, "applicationid")
  if (applicationId === undefined || applicationId.toLowerCase() !== issued.applicationId) return denied(now)
  return undefined
}

/** A person-data operation: the BaseRequest body (PersonUid, StartDate, EndDate), the envelope with the collection. */
const personData = (
  state: ServerState,
  operation: PersonDataOperation,
  request: MockRequest,
  now: number
) => {
  const refused = authorize(state, request, now)
  if (refused !== undefined) return refused
  const body = parseJson(request.body)
  if (!isRecord(body)) return json(400, { Message: "The request is invalid." }, now)
  const { collection, dateOf, itemsOf } = PERSON_DATA[operation]
  const none = { [collection]: null }
  const personUid = state.behaviour.fieldNames === "exact" ? body.PersonUid : field(body, "PersonUid")
  if (typeof personUid !== "string" || personUid.length === 0) {
    return envelope(400, now, "MissingData", "PersonUid is required.", none)
  }
  const person = state.byUid.get(personUid)
  if (person === undefined) {
    return envelope(state.behaviour.unknownPersonStatus, now, "PersonNotFound", "The person could not be found.", none)
  }
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

/** Authenticate: a person's PersonUid for their pass code and date of birth. */
const authenticate = (state: ServerState, request: MockRequest, now: number) => {
  const refused = authorize(state, request, now)
  if (refused !== undefined) return refused
  const body = parseJson(request.body)
  if (!isRecord(body)) return json(400, { Message: "The request is invalid." }, now)
  const passCode = field(body, "PassCode")
  const dateOfBirth = field(body, "DateOfBirth")
  if (typeof passCode !== "string" || typeof dateOfBirth !== "string") {
    return envelope(400, now, "MissingData", "PassCode and DateOfBirth are required.", { PersonUid: null })
  }
  const person = state.persons.find((p) => p.passCode === passCode && p.dateOfBirth === dateOfBirth)
  if (person === undefined) {
    return envelope(400, now, "AuthenticationFailed", "The pass code or date of birth is not correct.", {
      PersonUid: null
    })
  }
  return json(200, { PersonUid: person.personUid, Success: true, ErrorMessage: null, ErrorType: null }, now)
}

/** The answer of the operation at `request`'s path (or 404, or 405 for anything but POST). */
export const answer = (
  state: ServerState,
  request: MockRequest,
  operation: Operation | undefined,
  now: number
): Received => {
  if (request.method !== "POST") {
    return json(state.behaviour.wrongMethodStatus, {
      Message: `The requested resource does not support http method '${request.method}'.`
    }, now)
  }
  switch (operation) {
    case "token":
      return issueToken(state, request, now)
    case "authenticate":
      return authenticate(state, request, now)
    case undefined:
      return json(404, { Message: "No HTTP resource was found that matches the request URI." }, now)
    default:
      return personData(state, operation, request, now)
  }
}
