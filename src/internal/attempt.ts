/**
 * One transport call, its failure labelled with the operation it belongs to. (The timeout and
 * the body limit travel in the request itself: every transport enforces them.)
 */
import * as Effect from "effect/Effect"
import { type Operation, TransportError } from "../ClinicalError.js"
import type * as HttpTransport from "../HttpTransport.js"

/** A transport's failure, labelled with the operation it belongs to. */
export const labelled = (error: TransportError, operation: Operation): TransportError =>
  new TransportError({ operation, reason: error.reason, method: error.method, url: error.url, detail: error.detail })

/** Sends `request` through `transport`; a `TransportError` gets `operation`. */
export const send = (
  transport: HttpTransport.Service,
  request: HttpTransport.TransportRequest,
  operation: Operation
): Effect.Effect<HttpTransport.TransportResponse, TransportError> =>
  Effect.mapError(transport.send(request), (error) => labelled(error, operation))
