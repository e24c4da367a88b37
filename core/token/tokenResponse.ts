/**
 * One token request as it goes over the wire, and the reading of its answer (the body's `Token` /
 * `TokenType`, the `TOKEN_EXPIRES` and `Date` headers), for either Effect line. The token is a
 * secret: it is sealed (`seal`, the line's `Redacted`) as soon as it is read.
 */
import { Failed, readJson } from "../call/response.js"
import type { HttpError } from "../errors.js"
import * as HttpDate from "../httpDate.js"
import { field, isRecord } from "../json.js"
import type { Received } from "../transport/message.js"
import { MAX_TOKEN_LENGTH, visibleAscii } from "../validate.js"

/** What a token request is made of: where it goes, the ApplicationId, and its bounds. */
export interface TokenTerms {
  readonly authUrl: string
  readonly tokenPath: string
  readonly applicationId: string
  readonly maxResponseBytes: number
  readonly tokenTimeoutMillis: number
}

/** Where token requests go. */
export const tokenUrlOf = (terms: Pick<TokenTerms, "authUrl" | "tokenPath">): string =>
  `${terms.authUrl}${terms.tokenPath}`

/**
 * The token request as it goes to a line's transport: JSON in, an answer the client can read
 * without decompressing, and the ApplicationId in the body (sealed: `seal` is the line's `Redacted`).
 */
export const tokenRequestOf = <S>(terms: TokenTerms, seal: (text: string) => S) => ({
  method: "POST" as const,
  url: tokenUrlOf(terms),
  headers: { "Content-Type": "application/json", "Accept-Encoding": "identity" },
  body: seal(JSON.stringify({ ApplicationId: terms.applicationId })),
  maxResponseBytes: terms.maxResponseBytes,
  timeoutMillis: terms.tokenTimeoutMillis
})

/** A token as the service issued it, with its expiry already moved onto the local clock. */
export interface Issued<S> {
  readonly token: S
  /** Local time (epoch ms) the request was sent. */
  readonly sentAt: number
  /** `TOKEN_EXPIRES - Date`, both from the server's clock (so clock skew cancels out), at most the cap. */
  readonly lifetimeMillis: number
  /** The lifetime the server gave, before the cap; larger than `lifetimeMillis` when it was cut. */
  readonly serverLifetimeMillis: number
  /** Server `Date` minus the local time the response arrived; `undefined` without a `Date` header. */
  readonly serverClockSkewMillis: number | undefined
}

/** What the caller knows about the token exchange being read. */
export interface TokenExchange {
  readonly url: string
  /** The ApplicationId, revealed only to be scrubbed from server text. */
  readonly applicationId: () => string | undefined
  /** Local times (epoch ms) the request was sent and its answer arrived. */
  readonly sentAt: number
  readonly receivedAt: number
  readonly maxRetryAfterMillis: number
  readonly maxTokenLifetimeMillis: number
}

/** Why a field of the token body is refused, in the words a Schema decode says it (first field first). */
const refusedField = (name: string, value: unknown, allowed: (text: string) => boolean): string | undefined => {
  if (typeof value !== "string") return `body.${name} has the wrong type`
  return allowed(value) ? undefined : `body.${name} has a value that is not allowed`
}

/** Reads a token response into an {@link Issued} token, or the {@link Failed} it stands for. */
export const readTokenResponse = <S>(
  response: Received,
  exchange: TokenExchange,
  seal: (token: string) => S
): Issued<S> | Failed => {
  const decodeError = (reason: string) =>
    new Failed(
      {
        _tag: "ResponseDecodeError",
        operation: "token",
        method: "POST",
        url: exchange.url,
        status: response.status,
        reason
      } satisfies HttpError
    )
  const json = readJson({
    operation: "token",
    method: "POST",
    url: exchange.url,
    secrets: () => [exchange.applicationId()],
    now: exchange.receivedAt,
    maxRetryAfterMillis: exchange.maxRetryAfterMillis
  }, response)
  if (json instanceof Failed) return json
  if (!isRecord(json)) return decodeError("the body is not a JSON object")
  const token = field(json, "Token")
  const refused = refusedField("Token", token, (text) => visibleAscii(text, MAX_TOKEN_LENGTH).ok) ??
    refusedField("TokenType", field(json, "TokenType"), (type) => type.toLowerCase() === "bearer")
  if (refused !== undefined) return decodeError(refused)
  const expiresHeader = response.headers["token_expires"] ?? response.headers["token-expires"]
  if (expiresHeader === undefined) return decodeError("the TOKEN_EXPIRES header is missing")
  const expires = HttpDate.parseMillis(expiresHeader, { now: exchange.receivedAt })
  if (expires === undefined) return decodeError("the TOKEN_EXPIRES header is not an HTTP date")
  const date = response.headers["date"]
  // Stryker disable next-line ConditionalExpression: equivalent, HttpDate reads no text as no date
  const serverDate = date === undefined ? undefined : HttpDate.parseMillis(date, { now: exchange.receivedAt })
  // With the server's Date, the lifetime is measured on the server's clock alone; without it,
  // TOKEN_EXPIRES can only be compared with the local clock.
  const serverLifetimeMillis = serverDate !== undefined ? expires - serverDate : expires - exchange.sentAt
  if (!(serverLifetimeMillis > 0)) {
    return decodeError("the token's lifetime is not positive (TOKEN_EXPIRES is not later)")
  }
  return {
    token: seal(token as string),
    sentAt: exchange.sentAt,
    lifetimeMillis: Math.min(serverLifetimeMillis, exchange.maxTokenLifetimeMillis),
    serverLifetimeMillis,
    serverClockSkewMillis: serverDate !== undefined ? serverDate - exchange.receivedAt : undefined
  }
}
