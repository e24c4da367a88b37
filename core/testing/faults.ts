/**
 * The mock's faults: what can be injected, the queue and the seeded draws that pick one for each
 * request, and how a fault turns the normal answer into another. A delay's duration is read by the
 * line (each has its own `Duration`), through the function it hands to {@link faultsOf}.
 */
import * as HttpDate from "../httpDate.js"
import { isRecord } from "../json.js"
import type { Received } from "../transport/message.js"
import { json, type Operation } from "./operations.js"
import { seededRandom } from "./seeded.js"

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

/**
 * Constructors of faults, a delay's duration read by `millisOf` (`undefined`: not a duration, a
 * delay that `injectFaults` refuses).
 */
export const faultsOf = <D>(millisOf: (duration: D) => number | undefined) => ({
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
  delay: (duration: D): Fault => ({
    _tag: "Delay",
    // Not a duration: NaN, which injectFaults refuses.
    millis: millisOf(duration) ?? Number.NaN
  }),
  /** Drop the connection without an answer. */
  drop: { _tag: "Drop" } as Fault,
  /** Answer 200 with an HTML page instead of JSON. */
  notJson: { _tag: "NotJson" } as Fault,
  /** Answer a token request normally, but without `TOKEN_EXPIRES`. */
  missingTokenExpires: { _tag: "MissingTokenExpires" } as Fault,
  /** Answer a token request normally, with a `TOKEN_EXPIRES` that is not an HTTP date. */
  malformedTokenExpires: { _tag: "MalformedTokenExpires" } as Fault
} as const)

const FAULT_TAGS: ReadonlySet<string> = new Set([
  "Status",
  "Delay",
  "Drop",
  "NotJson",
  "MissingTokenExpires",
  "MalformedTokenExpires"
])

/** A fault built by {@link Fault}: a known kind, with a real status or delay. */
export const isFault = (u: unknown): u is Fault =>
  isRecord(u) && typeof u._tag === "string" && FAULT_TAGS.has(u._tag) &&
  (u._tag !== "Status" || (Number.isInteger(u.status) && (u.status as number) >= 100 && (u.status as number) <= 599)) &&
  (u._tag !== "Delay" || (typeof u.millis === "number" && Number.isFinite(u.millis) && u.millis >= 0))

/** Faults drawn by chance, from a seeded generator (so a run can be repeated exactly). */
export interface RandomFaults {
  readonly seed: number
  /** Each fault with its probability per request; the probabilities must not add up to more than 1. */
  readonly faults: ReadonlyArray<{ readonly probability: number; readonly fault: Fault }>
}

/** What the mock did with one request: answered it, or dropped the connection. */
export type Outcome =
  | { readonly _tag: "Response"; readonly response: Received }
  | { readonly _tag: "Drop" }

/** The faults waiting for each target: queued ones first, then seeded draws. */
export const schedule = () => {
  const queued = new Map<Target, Array<Fault>>()
  const randomFaults = new Map<Target, { readonly draw: () => number; readonly config: RandomFaults }>()
  const next = (operation: Operation | undefined): Fault | undefined => {
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
  return {
    inject: (target: Target, faults: ReadonlyArray<Fault>): void => {
      queued.set(target, [...(queued.get(target) ?? []), ...faults])
    },
    setRandom: (target: Target, config: RandomFaults | undefined): void => {
      if (config === undefined) randomFaults.delete(target)
      else randomFaults.set(target, { draw: seededRandom(config.seed), config })
    },
    clear: (): void => {
      queued.clear()
      randomFaults.clear()
    },
    /** The fault for the next request to `operation`, if any. */
    next
  }
}

/**
 * The answer a request gets under `fault`: the fault's own answer (a status, HTML, a dropped
 * connection), or the normal answer, altered for a token fault.
 */
export const applyFault = (
  fault: Fault | undefined,
  operation: Operation | undefined,
  now: number,
  answer: () => Received
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
  const response = answer()
  if (operation === "token" && response.status === 200 && fault !== undefined) {
    const { token_expires: _dropped, ...headers } = response.headers
    if (fault._tag === "MissingTokenExpires") return { _tag: "Response", response: { ...response, headers } }
    if (fault._tag === "MalformedTokenExpires") {
      return { _tag: "Response", response: { ...response, headers: { ...headers, token_expires: "in one hour" } } }
    }
  }
  return { _tag: "Response", response }
}
