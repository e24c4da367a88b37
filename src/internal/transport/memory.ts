/** A transport from a plain send function (the in-memory one for tests among them). */
import * as Effect from "effect/Effect"
import type { TransportError } from "../../ClinicalError.js"
import type { Service, TransportRequest, TransportResponse } from "./port.js"
import { exceedsLimit, hasTimeout, invalidArgument, timedOutError, tooLarge, transportError } from "./wire.js"

/** Bounds `effect` by the request's `timeoutMillis` on Effect's `Clock` (so `TestClock` drives it). */
const withTimeout = <E>(
  request: TransportRequest,
  effect: Effect.Effect<TransportResponse, E>
): Effect.Effect<TransportResponse, E | TransportError> =>
  hasTimeout(request)
    ? Effect.timeoutFail(effect, { duration: request.timeoutMillis, onTimeout: () => timedOutError(request) })
    : effect

/**
 * A transport from a plain send function: adds the request's `timeoutMillis` (on Effect's
 * `Clock`) and `maxResponseBytes`, so that a custom transport only has to send.
 */
export const make = (
  send: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
): Service => {
  if (typeof send !== "function") throw invalidArgument("send", "must be a function from a request to an Effect")
  return {
    send: (request) => {
      // A JavaScript caller's send may return a Promise or nothing: say so, rather than die.
      const sent: unknown = send(request)
      if (!Effect.isEffect(sent)) {
        return Effect.fail(transportError(request, "Network", "the transport's send did not return an Effect"))
      }
      return withTimeout(
        request,
        Effect.flatMap(
          sent as Effect.Effect<TransportResponse, TransportError>,
          (response) =>
            request.maxResponseBytes !== undefined && exceedsLimit(request, Buffer.byteLength(response.body))
              ? Effect.fail(tooLarge(request, request.maxResponseBytes))
              : Effect.succeed(response)
        )
      )
    }
  }
}

/** An in-memory transport: every request goes to `handler`, nothing touches a network. */
export const memory: (
  handler: (request: TransportRequest) => Effect.Effect<TransportResponse, TransportError>
) => Service = make
