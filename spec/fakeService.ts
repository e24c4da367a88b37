/**
 * A small scripted stand-in for the service, for the specification both lines are held to: it
 * issues tokens shaped like the real ones, checks them on data requests (401 unknown, 419 expired)
 * and records every request as it went on the wire. Tests queue exact replies with `scriptToken` /
 * `scriptData`. Effect-free: each line's driver serves it through its in-memory transport, on its
 * own test clock (the `now` it hands over).
 */
import { format } from "../core/httpDate.js"
import { jsonResponse, type Received } from "../core/transport/message.js"

export const APPLICATION_ID = "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
export const PERSON_UID = "Pz8/K2VuY3J5cHRlZC1wZXJzb24tdWlkKys9PQ=="
export const TOKEN_PATH = "/api/Server/Token"
export const MEDICATION_PATH = "/api/clinical/medication/get"
export const BASE_URL = "https://openapitest.intelichart.com"

/** Tokens shaped like the real ones: two base64 pieces, with `/`, `+` and `=`. */
export const tokenValue = (n: number): string =>
  `${Buffer.from(`secret-access-token-${n}-`.repeat(3)).toString("base64")}.${
    Buffer.from(`+/${n}`).toString("base64")
  }/+=`

/** One request as it went on the wire: its secrets revealed (this is the server's view). */
export interface WireRequest {
  readonly method: string
  readonly url: string
  readonly headers: Readonly<Record<string, string>>
  readonly body: string | undefined
}

/** What the fake does with a request: answers, fails it as a transport would, or never answers. */
export type Reply =
  /** The answer, `afterMillis` after the request arrived (on the driver's clock; at once when absent). */
  | { readonly _tag: "Respond"; readonly response: Received; readonly afterMillis?: number }
  | { readonly _tag: "Fail"; readonly reason: "Network" | "Timeout"; readonly detail: string }
  | { readonly _tag: "Hang" }

export type Responder = (request: WireRequest) => Reply

/** A standing rule for one kind of request: its reply to `request` arriving at `now`, or `undefined` to pass it on. */
export type Rule = (request: WireRequest, now: number) => Reply | undefined

/** A JSON answer. */
export const respond = (status: number, body: unknown, headers: Record<string, string> = {}): Responder => () => ({
  _tag: "Respond",
  response: jsonResponse(status, body, headers)
})

/** A transport failure with `detail`. */
export const failWith = (detail: string, reason: "Network" | "Timeout" = "Network"): Reply => ({
  _tag: "Fail",
  reason,
  detail
})

/** A request's header by case-insensitive name. */
export const headerOf = (request: WireRequest, name: string): string | undefined => {
  for (const key in request.headers) if (key.toLowerCase() === name) return request.headers[key]
  return undefined
}

/** The fake's answer to a medications request with a good token. */
export const MEDICATIONS_ANSWER = jsonResponse(200, {
  Medications: [
    { Name: "Lisinopril", Strength: "10 mg", Instructions: "1 tablet daily", StartDate: "2024-01-05", Code: "314076" },
    { Name: "Metformin", Strength: "500 mg", Instructions: "twice daily with meals", StartDate: "2023-06-12" }
  ],
  Success: true,
  ErrorMessage: null,
  ErrorType: null
})

const HOUR = 60 * 60 * 1000

const isTokenRequest = (request: WireRequest): boolean =>
  new URL(request.url).pathname.toLowerCase().endsWith(TOKEN_PATH.toLowerCase())

/** The fake service: tokens of an hour, data requests checked against them, scripts served first. */
export class FakeService {
  readonly requests: Array<WireRequest & { readonly at: number }> = []
  private readonly tokens = new Map<string, number>()
  private issued = 0
  private readonly tokenScript: Array<Responder> = []
  private readonly dataScript: Array<Responder> = []
  private tokenRule: Rule | undefined = undefined
  private dataRule: Rule | undefined = undefined
  /** When the delayed answers still to come are due (the driver's clock). */
  private readonly due: Array<number> = []

  /** Queue replies for the next token requests, in order. */
  scriptToken(...responders: ReadonlyArray<Responder>): void {
    this.tokenScript.push(...responders)
  }

  /** Queue replies for the next data requests, in order. */
  scriptData(...responders: ReadonlyArray<Responder>): void {
    this.dataScript.push(...responders)
  }

  /**
   * A rule asked first for every token request (`"token"`) or data request (`"data"`) from now on,
   * before the scripts: a service whose answers depend on the time, say.
   */
  rule(kind: "token" | "data", rule: Rule): void {
    if (kind === "token") this.tokenRule = rule
    else this.dataRule = rule
  }

  /** Token requests so far. */
  tokenRequests(): number {
    return this.requests.filter((request) => isTokenRequest(request)).length
  }

  /** Data requests so far. */
  dataRequests(): number {
    return this.requests.length - this.tokenRequests()
  }

  /** Forget every issued token (as a server that revoked them would). */
  revokeAll(): void {
    this.tokens.clear()
  }

  /** Answers `request` arriving at `now` (the driver's clock, epoch ms). */
  handle(request: WireRequest, now: number): Reply {
    const reply = this.reply(request, now)
    if (reply._tag === "Respond" && reply.afterMillis !== undefined) this.due.push(now + reply.afterMillis)
    return reply
  }

  /**
   * How far a test clock at `now` moves next so that no delayed answer is passed over: to the next
   * one due, at most `maxMillis`, at least 1 ms (a service of 15 ms answers, on a clock moving
   * 100 ms at a time, would answer in 100).
   */
  clockStepMillis(now: number, maxMillis: number): number {
    let next = now + maxMillis
    for (let i = this.due.length - 1; i >= 0; i--) {
      const at = this.due[i]!
      if (at <= now) this.due.splice(i, 1)
      else if (at < next) next = at
    }
    return Math.max(1, next - now)
  }

  private reply(request: WireRequest, now: number): Reply {
    this.requests.push({ ...request, at: now })
    const isToken = isTokenRequest(request)
    const ruled = (isToken ? this.tokenRule : this.dataRule)?.(request, now)
    if (ruled !== undefined) return ruled
    const scripted = (isToken ? this.tokenScript : this.dataScript).shift()
    if (scripted !== undefined) return scripted(request)
    return { _tag: "Respond", response: this.ownAnswer(request, now) }
  }

  /** What the fake itself answers `request` at `now` (a token issued, or the medications checked against it): for a rule to delay. */
  ownAnswer(request: WireRequest, now: number): Received {
    return isTokenRequest(request) ? this.issueToken(now) : this.medications(request, now)
  }

  private issueToken(now: number): Received {
    const token = tokenValue(++this.issued)
    this.tokens.set(token, now + HOUR)
    return jsonResponse(200, { Token: token, TokenType: "Bearer" }, {
      TOKEN_EXPIRES: format(now + HOUR),
      Date: format(now),
      "Cache-Control": "no-cache"
    })
  }

  private medications(request: WireRequest, now: number): Received {
    const expiry = this.tokens.get((headerOf(request, "authorization") ?? "").replace(/^Bearer /, ""))
    if (expiry === undefined) return jsonResponse(401, { Message: "Authorization has been denied." })
    if (now >= expiry) return jsonResponse(419, { Message: "Token expired." })
    return MEDICATIONS_ANSWER
  }
}
