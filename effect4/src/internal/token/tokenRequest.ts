/**
 * One token request: `POST {authUrl}{tokenPath}` with the ApplicationId, and the reading of its
 * answer (the core's rules: core/token/tokenResponse.ts), over this line's `Redacted` and errors.
 */
import * as Clock from "effect/Clock"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as Redacted from "effect/Redacted"
import { Failed } from "../../../../core/call/response.js"
import * as Core from "../../../../core/token/tokenResponse.js"
import type * as Sharing from "../../../../core/token/tokenSharing.js"
import type * as ClinicalConfig from "../../ClinicalConfig.js"
import type { HttpError } from "../../ClinicalError.js"
import type * as HttpTransport from "../../HttpTransport.js"
import { fromCore } from "../fromCore.js"
import * as Telemetry from "../observability/telemetry.js"
import { labelled } from "../transport/wire.js"

/** A token as the service issued it (or the store held it), with its expiry already moved onto the local clock. */
export type IssuedToken = Sharing.IssuedToken<Redacted.Redacted<string>>

/** What a token request is made of, from a client's settings. */
const termsOf = (config: ClinicalConfig.Service): Core.TokenTerms => ({
  authUrl: config.authUrl,
  tokenPath: config.tokenPath,
  applicationId: Redacted.value(config.applicationId),
  maxResponseBytes: config.maxResponseBytes,
  tokenTimeoutMillis: Duration.toMillis(config.tokenTimeout)
})

/** Where token requests go. */
export const tokenUrl = (config: ClinicalConfig.Service): string => Core.tokenUrlOf(config)

/** The token request as it goes to the transport. The body holds the ApplicationId, so it is redacted. */
export const tokenRequest = (config: ClinicalConfig.Service): HttpTransport.TransportRequest =>
  Core.tokenRequestOf(termsOf(config), (text) => Redacted.make(text))

/** Sends one token request (with the token timeout) and reads its answer. */
export const requestToken = (
  config: ClinicalConfig.Service,
  transport: HttpTransport.Service
): Effect.Effect<IssuedToken, HttpError> =>
  Effect.gen(function*() {
    const request = tokenRequest(config)
    const sentAt = yield* Clock.currentTimeMillis
    yield* Metric.update(Telemetry.tokenRequests, 1)
    const response = yield* transport.send(request).pipe(
      // The ApplicationId travels inside the body: no transport detail may echo it.
      Effect.mapError((error) => labelled(error, "token", [Redacted.value(config.applicationId)]))
    )
    yield* Effect.annotateCurrentSpan("http.response.status_code", response.status)
    const receivedAt = yield* Clock.currentTimeMillis
    const read = Core.readTokenResponse(response, {
      url: tokenUrl(config),
      applicationId: () => Redacted.value(config.applicationId),
      sentAt,
      receivedAt,
      maxRetryAfterMillis: Duration.toMillis(config.maxRetryAfter),
      maxTokenLifetimeMillis: Duration.toMillis(config.maxTokenLifetime)
    }, (token) => Redacted.make(token))
    return read instanceof Failed
      ? yield* Effect.fail(fromCore(read.error))
      : { ...read, source: "server", storeGeneration: undefined } satisfies IssuedToken
  }).pipe(Effect.withSpan("TokenService.request", { kind: "client" }, Telemetry.NO_STACK))
