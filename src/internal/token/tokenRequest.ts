/**
 * One token request: `POST {authUrl}{tokenPath}` with the ApplicationId, and the reading of its
 * answer (the body's `Token` / `TokenType`, the `TOKEN_EXPIRES` and `Date` headers).
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { field, isRecord } from "../../../core/json.js"
import type * as ClinicalConfig from "../../ClinicalConfig.js"
import { type HttpError, ResponseDecodeError } from "../../ClinicalError.js"
import * as HttpDate from "../../HttpDate.js"
import type * as HttpTransport from "../../HttpTransport.js"
import { send } from "../call/attempt.js"
import { describeParseError, readJson } from "../call/response.js"
import * as Telemetry from "../observability/telemetry.js"
import { MAX_TOKEN_LENGTH, visibleAscii } from "../validate.js"

/** The token body, as the service documents it. The token must be safe to put in a header. */
const TokenBody = Schema.Struct({
  Token: Schema.String.pipe(Schema.filter((token) => Either.isRight(visibleAscii(token, MAX_TOKEN_LENGTH)))),
  TokenType: Schema.String.pipe(Schema.filter((type) => type.toLowerCase() === "bearer"))
})

const decodeTokenBody = Schema.decodeUnknownEither(TokenBody)

/** A token as the service issued it, with its expiry already moved onto the local clock. */
export interface IssuedToken {
  readonly token: Redacted.Redacted<string>
  /** Local time (epoch ms) the request was sent. */
  readonly sentAt: number
  /** `TOKEN_EXPIRES - Date`, both from the server's clock (so clock skew cancels out), at most `maxTokenLifetime`. */
  readonly lifetimeMillis: number
  /** The lifetime the server gave, before the cap; larger than `lifetimeMillis` when it was cut. */
  readonly serverLifetimeMillis: number
  /** Server `Date` minus the local time the response arrived; `undefined` without a `Date` header. */
  readonly serverClockSkewMillis: number | undefined
  /** Where it came from: the token endpoint, or the shared token store (another instance asked for it). */
  readonly source: "server" | "store"
  /** Its generation in the token store; `undefined` when it was not published there. */
  readonly storeGeneration: number | undefined
}

/** Where token requests go. */
export const tokenUrl = (config: ClinicalConfig.Service): string => `${config.authUrl}${config.tokenPath}`

/** The token request as it goes to the transport. The body holds the ApplicationId, so it is redacted. */
export const tokenRequest = (config: ClinicalConfig.Service): HttpTransport.TransportRequest => ({
  method: "POST",
  url: tokenUrl(config),
  headers: { "Content-Type": "application/json", "Accept-Encoding": "identity" },
  body: Redacted.make(JSON.stringify({ ApplicationId: Redacted.value(config.applicationId) })),
  maxResponseBytes: config.maxResponseBytes,
  timeoutMillis: Duration.toMillis(config.tokenTimeout)
})

const decodeError = (config: ClinicalConfig.Service, status: number, reason: string) =>
  new ResponseDecodeError({ operation: "token", method: "POST", url: tokenUrl(config), status, reason })

/** Reads a token response into an `IssuedToken`, or the typed error it stands for. */
export const readTokenResponse = (
  response: HttpTransport.TransportResponse,
  sentAt: number,
  receivedAt: number,
  config: ClinicalConfig.Service
): Either.Either<IssuedToken, HttpError> =>
  Either.gen(function*() {
    const json = yield* readJson({
      operation: "token",
      method: "POST",
      url: tokenUrl(config),
      secrets: () => [config.applicationId],
      now: receivedAt,
      maxRetryAfterMillis: Duration.toMillis(config.maxRetryAfter)
    }, response)
    const status = response.status
    if (!isRecord(json)) return yield* Either.left(decodeError(config, status, "the body is not a JSON object"))
    const body = yield* Either.mapLeft(
      decodeTokenBody({ Token: field(json, "Token"), TokenType: field(json, "TokenType") }),
      (error) => decodeError(config, status, describeParseError(error, "body"))
    )
    const expiresHeader = response.headers["token_expires"] ?? response.headers["token-expires"]
    if (expiresHeader === undefined) {
      return yield* Either.left(decodeError(config, status, "the TOKEN_EXPIRES header is missing"))
    }
    const expires = HttpDate.parseMillis(expiresHeader, { now: receivedAt })
    if (Option.isNone(expires)) {
      return yield* Either.left(decodeError(config, status, "the TOKEN_EXPIRES header is not an HTTP date"))
    }
    const serverDate = Option.flatMap(
      Option.fromNullable(response.headers["date"]),
      (date) => HttpDate.parseMillis(date, { now: receivedAt })
    )
    // With the server's Date, the lifetime is measured on the server's clock alone; without it,
    // TOKEN_EXPIRES can only be compared with the local clock.
    const serverLifetimeMillis = Option.isSome(serverDate) ? expires.value - serverDate.value : expires.value - sentAt
    if (!(serverLifetimeMillis > 0)) {
      return yield* Either.left(
        decodeError(config, status, "the token's lifetime is not positive (TOKEN_EXPIRES is not later)")
      )
    }
    return {
      token: Redacted.make(body.Token),
      sentAt,
      lifetimeMillis: Math.min(serverLifetimeMillis, Duration.toMillis(config.maxTokenLifetime)),
      serverLifetimeMillis,
      serverClockSkewMillis: Option.isSome(serverDate) ? serverDate.value - receivedAt : undefined,
      source: "server",
      storeGeneration: undefined
    }
  })

/** Sends one token request (with the token timeout) and reads its answer. */
export const requestToken = (
  config: ClinicalConfig.Service,
  transport: HttpTransport.Service
): Effect.Effect<IssuedToken, HttpError> =>
  Effect.gen(function*() {
    const request = tokenRequest(config)
    const sentAt = yield* Clock.currentTimeMillis
    yield* Metric.increment(Telemetry.tokenRequests)
    // The ApplicationId travels inside the body: name it, so that no transport detail can echo it.
    const response = yield* send(transport, request, "token", [config.applicationId], config.tracePropagation)
    yield* Effect.annotateCurrentSpan("http.response.status_code", response.status)
    const receivedAt = yield* Clock.currentTimeMillis
    return yield* readTokenResponse(response, sentAt, receivedAt, config)
  })
