/**
 * One transport call, its failure labelled with the operation it belongs to. (The timeout and
 * the body limit travel in the request itself: every transport enforces them.)
 */
import * as Effect from "effect/Effect"
import type * as Redacted from "effect/Redacted"
import { labelledFields } from "../../../core/errors.js"
import { type Operation, TransportError } from "../../ClinicalError.js"
import type * as HttpTransport from "../../HttpTransport.js"
import * as HttpSpan from "../observability/httpSpan.js"
import { scrub } from "../redaction/redaction.js"

/**
 * A transport's failure, labelled with the operation it belongs to; its detail scrubbed of
 * `secrets` too (the transport only knows the request's redacted headers and body as a whole, not
 * a pass code inside the body).
 */
export const labelled = (
  error: TransportError,
  operation: Operation,
  secrets: ReadonlyArray<Redacted.Redacted<string>> = []
): TransportError =>
  new TransportError(
    labelledFields(error, operation, (detail) => secrets.length === 0 ? detail : scrub(detail, secrets))
  )

/**
 * Sends `request` through `transport`, observed as one HTTP attempt (see `httpSpan`); a
 * `TransportError` gets `operation`.
 */
export const send = (
  transport: HttpTransport.Service,
  request: HttpTransport.TransportRequest,
  operation: Operation,
  secrets: ReadonlyArray<Redacted.Redacted<string>> = [],
  propagate = false
): Effect.Effect<HttpTransport.TransportResponse, TransportError> =>
  Effect.mapError(
    HttpSpan.attempt(request, 0, propagate, transport.send),
    (error) => labelled(error, operation, secrets)
  )
