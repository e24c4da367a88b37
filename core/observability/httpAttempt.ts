/**
 * One HTTP attempt as OpenTelemetry's HTTP client conventions name it, once for both lines: the
 * server a URL points at, the attempt span's attributes, its `error.type`, and the W3C
 * `traceparent` a span passes on. Each line's span and histogram are made over these.
 *
 * Our URLs carry no patient data (a PersonUid travels in the body), so `url.full` is safe to
 * record; keep it so. No header, body or query is recorded.
 */

/** Where a URL points, as the conventions name it. */
export interface Server {
  readonly address: string
  readonly port: number
}

/** The server of `url` (a URL the client built from its checked settings). */
export const serverOfUrl = (url: string): Server => {
  const parsed = new URL(url)
  return {
    address: parsed.hostname,
    port: parsed.port === "" ? (parsed.protocol === "https:" ? 443 : 80) : Number(parsed.port)
  }
}

/** The attempt span's attributes; `resendCount`: how many times the call's request went before. */
export const attributesOf = (
  method: string,
  url: string,
  server: Server,
  resendCount: number
): Record<string, unknown> => {
  const attributes: Record<string, unknown> = {
    "http.request.method": method,
    "server.address": server.address,
    "server.port": server.port,
    "url.full": url
  }
  if (resendCount > 0) attributes["http.request.resend_count"] = resendCount
  return attributes
}

/** `error.type` of an attempt that got a response: its status from 400 on. */
export const errorTypeOfStatus = (status: number): string | undefined => status >= 400 ? String(status) : undefined

const TRACE_ID = /^(?!0{32})[0-9a-f]{32}$/
const SPAN_ID = /^(?!0{16})[0-9a-f]{16}$/

/** What a span passes on: its W3C ids and whether it is sampled. */
export interface SpanIds {
  readonly traceId: string
  readonly spanId: string
  readonly sampled: boolean
}

/**
 * The W3C `traceparent` header of a span, or `undefined` when its ids are not W3C ids: Effect's
 * no-op span (tracing off for the fiber; "noop"), all zeros (OpenTelemetry's API without an SDK),
 * anything not lower-case hex. A header made of them would be malformed.
 */
export const traceparentOf = (span: SpanIds): string | undefined =>
  TRACE_ID.test(span.traceId) && SPAN_ID.test(span.spanId)
    ? `00-${span.traceId}-${span.spanId}-${span.sampled ? "01" : "00"}`
    : undefined

/** A server, with its duration histogram (`M`: the line's metric) by method, then by status or error type. */
export interface MeteredServer<M> extends Server {
  readonly durations: Map<string, Map<number | string, M>>
}

/**
 * The servers a client calls and their duration histograms, each made once (`make`: the line's
 * histogram tagged with these attributes). Bounded: a client calls a handful of fixed URLs, and
 * whatever a server answers, a few statuses and error types; anything past that is made anew.
 */
export class MeteredServers<M> {
  private readonly servers = new Map<string, MeteredServer<M>>()

  constructor(private readonly make: (attributes: Readonly<Record<string, string>>) => M) {}

  /** The server of `url`. */
  of(url: string): MeteredServer<M> {
    let server = this.servers.get(url)
    if (server === undefined) {
      server = { ...serverOfUrl(url), durations: new Map() }
      if (this.servers.size < 256) this.servers.set(url, server)
    }
    return server
  }

  /** The duration histogram of `server` for `method` and an outcome (a status, else an error type). */
  durationOf(server: MeteredServer<M>, method: string, status: number | undefined, error: string | undefined): M {
    let byOutcome = server.durations.get(method)
    if (byOutcome === undefined) server.durations.set(method, byOutcome = new Map())
    const key = status ?? error ?? ""
    let metric = byOutcome.get(key)
    if (metric === undefined) {
      const attributes: Record<string, string> = {
        "http.request.method": method,
        "server.address": server.address,
        "server.port": String(server.port)
      }
      if (status !== undefined) attributes["http.response.status_code"] = String(status)
      if (error !== undefined) attributes["error.type"] = error
      metric = this.make(attributes)
      if (byOutcome.size < 128) byOutcome.set(key, metric)
    }
    return metric
  }
}
