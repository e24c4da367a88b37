/**
 * A data request: POST with the bearer token and the ApplicationId, answered as JSON.
 *
 * A 401 or 419 drops the token that was used (only if it is still the cached one), takes a fresh
 * token and retries once; a second 401 or 419 is the caller's typed error. Never a loop.
 */
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import type * as ClinicalConfig from "../ClinicalConfig.js"
import type { HttpError, Operation } from "../ClinicalError.js"
import type * as HttpTransport from "../HttpTransport.js"
import type * as TokenService from "../TokenService.js"
import { withTimeout } from "./attempt.js"
import { isTokenRejected, readJson } from "./response.js"

/** A successful answer: its status and its JSON body. */
export interface JsonResponse {
  readonly status: number
  readonly json: unknown
}

/** Sends one data request and returns its JSON body, or the typed error the exchange ended in. */
export type AuthorizedPost = (
  operation: Operation,
  url: string,
  body: Redacted.Redacted<string>,
  secrets: ReadonlyArray<Redacted.Redacted<string>>
) => Effect.Effect<JsonResponse, HttpError>

/** Builds the data-request function over the given services. */
export const make = (
  config: ClinicalConfig.Service,
  transport: HttpTransport.Service,
  tokens: TokenService.Service
): AuthorizedPost =>
(operation, url, body, secrets) => {
  const send = (token: TokenService.AccessToken) => {
    const request: HttpTransport.TransportRequest = {
      method: "POST",
      url,
      headers: {
        "Content-Type": "application/json",
        Authorization: token.authorization,
        ApplicationId: config.applicationId
      },
      body
    }
    return withTimeout(transport.send(request), request, operation, config.requestTimeout)
  }
  return Effect.gen(function*() {
    let token = yield* tokens.get
    let response = yield* send(token)
    if (isTokenRejected(response.status)) {
      yield* Effect.logDebug("token rejected; refreshing it and retrying once").pipe(
        Effect.annotateLogs({ status: response.status, generation: token.generation })
      )
      yield* tokens.invalidate(token)
      token = yield* tokens.get
      response = yield* send(token)
    }
    const now = yield* Clock.currentTimeMillis
    const json = yield* readJson({ operation, secrets: [...secrets, token.token, config.applicationId], now }, response)
    return { status: response.status, json }
  })
}
