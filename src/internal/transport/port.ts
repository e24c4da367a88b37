/**
 * The transport's port as types alone (re-exported by `HttpTransport`): what its adapters and the
 * public module share without importing each other.
 */
import type { HttpMethod } from "@effect/platform/HttpMethod"
import type * as Effect from "effect/Effect"
import type * as Either from "effect/Either"
import type { Received } from "../../../core/transport/message.js"
import type { TransportError } from "../../ClinicalError.js"
import type { WireValue } from "../call/secretText.js"

export type { WireValue } from "../call/secretText.js"

/** One HTTP request. `url` is absolute. */
export interface TransportRequest {
  readonly method: HttpMethod
  readonly url: string
  readonly headers: Readonly<Record<string, WireValue>>
  readonly body?: WireValue | undefined
  /** Largest response body to read, in bytes; a larger one fails with `ResponseTooLarge`. No limit when absent. */
  readonly maxResponseBytes?: number | undefined
  /** Longest wait for the whole response; then the request is aborted and fails with `Timeout`. No limit when absent. */
  readonly timeoutMillis?: number | undefined
}

/**
 * One HTTP response. Header names are lower-cased; repeated headers are joined with `, `.
 * `invalidUtf8` is true when the body's bytes were not UTF-8: the client refuses such a body.
 */
export type TransportResponse = Received

/**
 * Sends one request. Fails only when no usable HTTP response was received. A transport honours
 * the request's `timeoutMillis` and `maxResponseBytes`; `HttpTransport.make` adds both to a plain send
 * function, so a custom transport need not implement them itself.
 */
export interface Service {
  readonly send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
  /**
   * The same send in callback form, offered by a transport that has one natively (the undici
   * transport): `done` is called once, with the response or the failure; calling the function
   * returned aborts the request, and `done` is then not called. The client's common path sends
   * through it without suspending a fiber; a transport without it is sent through `send`.
   */
  readonly dispatch?: (
    request: TransportRequest,
    done: (outcome: Either.Either<TransportResponse, TransportError>) => void
  ) => () => void
}
