/**
 * Turning an HTTP response into a JSON value or the failure it stands for, for either Effect line:
 * the one place where statuses, the service's envelope (`Success`, `ErrorType`, `ErrorMessage`),
 * redirects and `Retry-After` are read. Whatever the server sends, the answer is a value or a
 * failure as plain data (core/errors.ts), never a thrown exception; each line makes the failure
 * its error class.
 */
import type { HttpError, Operation } from "../errors.js"
import * as HttpDate from "../httpDate.js"
import * as Json from "../json.js"
import { MAX_SEARCHED, scrub, type Scrubber, scrubber } from "../redaction/redaction.js"
import type { Received } from "../transport/message.js"
import { isTokenRejected } from "./callPolicy.js"

/**
 * `Retry-After` as milliseconds from `now` (delta-seconds or an HTTP date), at most `max`: one
 * absurd value must not pause the client for years. `undefined` when absent or malformed.
 */
export const retryAfterMillis = (value: string | undefined, now: number, max: number): number | undefined => {
  if (value === undefined) return undefined
  const text = value.trim()
  let millis: number | undefined
  if (/^\d+$/.test(text)) millis = Number(text) * 1000
  else {
    const at = HttpDate.parseMillis(text, { now })
    millis = at === undefined ? undefined : Math.max(0, at - now)
  }
  return millis === undefined ? undefined : Math.min(millis, max)
}

/** What the caller knows about the exchange being read (`X`: a secret as the caller holds it). */
export interface Exchange<X = string | undefined> {
  readonly operation: Operation
  /** The request's method and URL: shown in every error, and the URL is what a `Location` resolves against. */
  readonly method: string
  readonly url: string
  /** Secrets the request carried; scrubbed out of any server text kept in an error. Asked for only then. */
  readonly secrets: () => Iterable<X>
  /** Local time (epoch ms) the response arrived, for an HTTP-date `Retry-After`. */
  readonly now: number
  /** Cap on a `Retry-After`, in milliseconds. */
  readonly maxRetryAfterMillis: number
}

/**
 * The failure a response stands for, as {@link readJson} returns it beside a JSON value (which is
 * never an instance of a class): no wrapper is made on the success path, every call's.
 */
export class Failed {
  constructor(readonly error: HttpError) {}
}

/** A body read: its JSON value, or the {@link Failed} the response stands for. */
export type Read = unknown

const failure = (error: HttpError): Failed => new Failed(error)

/** How a secret the caller holds is revealed, to be searched for in server text (`undefined`: none). */
export type Reveal<X> = (secret: X) => string | undefined

/** The exchange's secrets, revealed (asked for only when server text is kept). */
const secretsOf = <X>(exchange: Exchange<X>, reveal: Reveal<X>): Array<string | undefined> =>
  Array.from(exchange.secrets(), reveal)

/** A secret already revealed. */
const revealed: Reveal<string | undefined> = (secret) => secret

/** The origin (scheme, host, port) a `Location` points to, scrubbed; never its path or query. */
const redirectOrigin = <X>(
  exchange: Exchange<X>,
  reveal: Reveal<X>,
  location: string | undefined
): string | undefined => {
  if (location === undefined) return undefined
  try {
    return scrub(new URL(location, exchange.url).origin, secretsOf(exchange, reveal))
  } catch {
    return "an invalid Location"
  }
}

/** The fields every error of an exchange carries: the operation, and where the request went. */
const about = <X>({ method, operation, url }: Exchange<X>) => ({ operation, method, url })

/** The failure a response's status stands for (one not read as a success). */
export const statusError = <X>(
  exchange: Exchange<X>,
  response: Received,
  reveal: Reveal<X> = revealed as Reveal<X>
): HttpError => {
  const target = about(exchange)
  const status = response.status
  const retryAfter = () => retryAfterMillis(response.headers["retry-after"], exchange.now, exchange.maxRetryAfterMillis)
  switch (status) {
    case 400:
      return { _tag: "BadRequest", ...target, status }
    case 401:
      return { _tag: "Unauthorized", ...target, status }
    case 419:
      return { _tag: "TokenExpired", ...target, status }
    case 429: {
      const after = retryAfter()
      return { _tag: "RateLimited", ...target, status, ...(after === undefined ? {} : { retryAfterMillis: after }) }
    }
  }
  if (status >= 500 && status <= 599) {
    const after = retryAfter()
    return { _tag: "ServerError", ...target, status, ...(after === undefined ? {} : { retryAfterMillis: after }) }
  }
  const location = status >= 300 && status <= 399
    ? redirectOrigin(exchange, reveal, response.headers["location"])
    : undefined
  return { _tag: "UnexpectedStatus", ...target, status, ...(location === undefined ? {} : { location }) }
}

/** What the envelope's `Success` says. .NET services and proxies also write it as a string or a number. */
type Outcome = "success" | "failure" | "absent" | "invalid"

const outcomeOf = (value: unknown): Outcome => {
  if (value === undefined) return "absent"
  if (value === true || value === 1) return "success"
  if (value === false || value === 0) return "failure"
  if (typeof value === "string") {
    const lower = value.toLowerCase()
    if (lower === "true") return "success"
    if (lower === "false") return "failure"
  }
  return "invalid"
}

/**
 * Server text for an error: scrubbed of every secret and of whatever has the shape of one, bounded,
 * whatever the value's shape. A value that is not a string is rendered past what the scrubber
 * searches, so that it makes the one cut; every string inside it is scrubbed before the rendering
 * escapes it, all of them within one search budget.
 */
export const serverText = (value: unknown, clean: Scrubber): string | null => {
  if (value === null || value === undefined) return null
  // One budget for the strings inside: a value of sixty strings of 64 KiB is searched 64 KiB in
  // all, not each (that held the event loop 16 s per answer).
  let left = MAX_SEARCHED
  const budgeted = (inner: string) => {
    const limit = left
    left = Math.max(0, left - inner.length)
    return clean(inner, limit)
  }
  return clean(Json.render(value, MAX_SEARCHED + 1, budgeted))
}

const decodeError = <X>(exchange: Exchange<X>, status: number, reason: string): Failed =>
  failure({ _tag: "ResponseDecodeError", ...about(exchange), status, reason })

/** Content codings a server might send: named in an error. Any other value is server text, and is not shown. */
const KNOWN_ENCODINGS = new Set(["gzip", "x-gzip", "deflate", "br", "compress", "x-compress", "zstd"])

/** Why a body is not JSON; a compressed one says so (the client asks for none: `Accept-Encoding: identity`). */
const notJson = (response: Received): string => {
  const encoding = response.headers["content-encoding"]?.trim().toLowerCase()
  if (encoding === undefined || encoding === "" || encoding === "identity") {
    return response.invalidUtf8 === true ? "the body is not valid UTF-8 (JSON must be)" : "the body is not JSON"
  }
  const named = KNOWN_ENCODINGS.has(encoding) ? `Content-Encoding: ${encoding}` : "a Content-Encoding"
  return `the body is not JSON (it came with ${named}, which the client did not ask for)`
}

/**
 * The JSON body of a successful response, or the failure the response stands for:
 * 401, 419 and 3xx (with its `Location` origin) by status; then the envelope's `Success: false`
 * (`ApiError`), whatever the status; then any other non-2xx by status; then a 2xx body that is not
 * JSON, whose `Success` is neither true nor false, or that nests deeper than {@link Json.MAX_DEPTH}.
 * `reveal` reads the exchange's secrets as the caller holds them (no copy of the exchange per call).
 */
export const readJson = <X>(
  exchange: Exchange<X>,
  response: Received,
  reveal: Reveal<X> = revealed as Reveal<X>
): Read => {
  const status = response.status
  // 401 and 419 drive the token refresh; a redirect is never followed: both whatever the body says.
  if (isTokenRejected(status) || (status >= 300 && status <= 399)) {
    return failure(statusError(exchange, response, reveal))
  }
  // Bytes that are not UTF-8 are corrupted text: read with replacement characters, a drug's name
  // would change. Such a body is no JSON at all.
  const json = response.invalidUtf8 === true ? undefined : Json.parse(response.body)
  const record = json !== undefined && Json.isRecord(json.value) ? json.value : undefined
  const outcome = record === undefined ? "absent" : outcomeOf(Json.field(record, "Success"))
  if (outcome === "failure") {
    const clean = scrubber(secretsOf(exchange, reveal))
    return failure({
      _tag: "ApiError",
      ...about(exchange),
      status,
      errorType: serverText(Json.field(record!, "ErrorType"), clean),
      errorMessage: serverText(Json.field(record!, "ErrorMessage"), clean)
    })
  }
  if (status < 200 || status > 299) return failure(statusError(exchange, response, reveal))
  if (json === undefined) return decodeError(exchange, status, notJson(response))
  if (outcome === "invalid") return decodeError(exchange, status, "the envelope's Success is neither true nor false")
  if (Json.deeperThan(json.value, Json.MAX_DEPTH)) {
    return decodeError(exchange, status, `the body nests deeper than ${Json.MAX_DEPTH} levels`)
  }
  return json.value
}

/**
 * A successful answer: its status, its JSON body, and every secret its request carried (the call's
 * own, the ApplicationId, the token sent), to scrub from text built from the body. `reveal` turns a
 * secret as the line holds it (`S`) into what its callers are handed (`R`), only when asked. A
 * class rather than an object literal, for the garbage collector's sake (docs/architecture.md,
 * "Objects made per call"); `secrets` is a closure, so that a caller may destructure it.
 */
export class Answer<S, R> {
  readonly secrets: () => ReadonlyArray<R>
  constructor(
    readonly status: number,
    readonly json: unknown,
    callSecrets: () => ReadonlyArray<R>,
    applicationId: S,
    token: S | undefined,
    reveal: (secret: S) => R
  ) {
    this.secrets = () => [...callSecrets(), reveal(applicationId), ...(token === undefined ? [] : [reveal(token)])]
  }
}
