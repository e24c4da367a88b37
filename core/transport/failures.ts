/**
 * What every transport decides alike about a request's bounds and a failed connection, whatever
 * the Effect line: whether a timeout bounds anything, whether a body is over its limit, the words of
 * a timeout and of an oversized body, whether a failure surely came before the request reached a
 * server, and how a thrown cause reads in a detail (each line scrubs that detail of its secrets).
 */

/** A request's bounds, as every transport's request carries them. */
export interface Bounds {
  /** Largest response body to read, in bytes. No limit when absent. */
  readonly maxResponseBytes?: number | undefined
  /** Longest wait for the whole response. No limit when absent. */
  readonly timeoutMillis?: number | undefined
}

/** Timers above this many milliseconds fire at once in Node; such a timeout is no limit at all. */
const MAX_TIMER_MILLIS = 2_147_483_647

/** True when the request's timeout bounds its wait (one Node can time). */
export const hasTimeout = <B extends Bounds>(bounds: B): bounds is B & { readonly timeoutMillis: number } =>
  bounds.timeoutMillis !== undefined && bounds.timeoutMillis <= MAX_TIMER_MILLIS

/** True when `bytes` of body are more than the request allows. */
export const exceedsLimit = (bounds: Bounds, bytes: number): boolean =>
  bounds.maxResponseBytes !== undefined && bytes > bounds.maxResponseBytes

/** The detail of a request that outlived its timeout. */
export const timedOut = (timeoutMillis: number | undefined): string => `no response within ${timeoutMillis} ms`

/** The detail of a response whose body is over the limit. */
export const tooLargeDetail = (limit: number): string => `the response body exceeds the limit of ${limit} bytes`

/** Error codes of a connection that was never made: whatever the request was, the server never saw it. */
const NEVER_CONNECTED = new Set([
  "ECONNREFUSED",
  "ENOTFOUND",
  "EAI_AGAIN",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "UND_ERR_CONNECT_TIMEOUT"
])

/**
 * True when a failure surely came before the request reached a server: no connection was made
 * (refused, no such host, connect timeout). The code is looked for down the cause chain (fetch
 * wraps it twice); an `AggregateError` (several addresses tried) counts when all of its errors do.
 */
export const neverConnected = (cause: unknown): boolean => {
  let current = cause
  for (let depth = 0; depth < 8 && typeof current === "object" && current !== null; depth++) {
    if (current instanceof AggregateError) {
      return current.errors.length > 0 && current.errors.every(neverConnected)
    }
    const code = (current as { readonly code?: unknown }).code
    if (typeof code === "string" && NEVER_CONNECTED.has(code)) return true
    current = (current as { readonly cause?: unknown }).cause
  }
  return false
}

/** A thrown cause in a detail: its code (or name) and message. */
export const describe = (cause: unknown): string => {
  if (cause instanceof Error) {
    const code = (cause as { readonly code?: unknown }).code
    return typeof code === "string" ? `${code}: ${cause.message}` : `${cause.name}: ${cause.message}`
  }
  return String(cause)
}

/**
 * A platform client's failure in a detail: its cause described, and what that wraps (fetch says
 * only "fetch failed"; the code that tells a refused connection from a reset is in its `cause`).
 */
export const describeWrapped = (cause: unknown): string => {
  const inner = cause instanceof Error ? (cause as { readonly cause?: unknown }).cause : undefined
  return inner instanceof Error ? `${describe(cause)} (${describe(inner)})` : describe(cause)
}
