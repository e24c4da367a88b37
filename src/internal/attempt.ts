/**
 * One attempt of one request: the transport call bounded by its timeout, with any transport
 * failure labelled with the operation it belongs to.
 */
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import { type Operation, TransportError } from "../ClinicalError.js"
import * as HttpTransport from "../HttpTransport.js"

/** Sends through `send`, failing with a `Timeout` `TransportError` (and aborting the request) after `timeout`. */
export const withTimeout = (
  send: Effect.Effect<HttpTransport.TransportResponse, TransportError>,
  request: HttpTransport.TransportRequest,
  operation: Operation,
  timeout: Duration.Duration
): Effect.Effect<HttpTransport.TransportResponse, TransportError> =>
  send.pipe(
    Effect.timeoutFail({
      duration: timeout,
      onTimeout: () =>
        HttpTransport.transportError(request, "Timeout", `no response within ${Duration.format(timeout)}`)
    }),
    Effect.mapError((error) =>
      new TransportError({
        operation,
        reason: error.reason,
        method: error.method,
        url: error.url,
        detail: error.detail
      })
    )
  )
