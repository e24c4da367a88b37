/**
 * What a data call is (its operation, URL, secret body, and what it makes of its answer), the
 * request object made per call, and the headers every data request carries. The calls are made
 * by `authorizedPost`.
 *
 * The objects made per call are classes rather than object literals, for the garbage collector's
 * sake (docs/architecture.md, "Objects made per call").
 */
import type * as Redacted from "effect/Redacted"
import * as Core from "../../../../core/call/dataHeaders.js"
import type { Failed } from "../../../../core/call/response.js"
import type * as ClinicalConfig from "../../ClinicalConfig.js"
import type { Operation } from "../../ClinicalError.js"
import type * as HttpTransport from "../../HttpTransport.js"

/** A successful answer: its status and its JSON body. */
export interface JsonResponse {
  readonly status: number
  readonly json: unknown
  /** Every secret the request carried (the PersonUid, the token, the ApplicationId, ...), revealed: to scrub from text built from the body. */
  readonly secrets: () => ReadonlyArray<string>
}

/** What a call makes of an answer that reads: the value its caller gets, or the error the answer stands for. */
export type Finish<A> = (answer: JsonResponse) => A | Failed

/** What a call is. */
export interface Call<A> {
  /** The operation's name, for errors, spans and metrics. */
  readonly operation: Operation
  readonly url: string
  /** The request body; it holds a PersonUid (or a pass code), so it stays secret. */
  readonly body: Redacted.Redacted<string>
  /** Secrets the request carries besides the token and ApplicationId, revealed only to scrub server text. */
  readonly secrets: () => ReadonlyArray<string>
  /**
   * Whether the request may be sent again once it may have reached the server. Reads may; an
   * operation that consumes something (a single-use pass code) or writes may not.
   */
  readonly resendable: boolean
  /** What the call makes of its answer (decoding it, say): its failure is the call's, recorded as any other. */
  readonly finish: Finish<A>
  /**
   * The call's span, made when someone could see it (a tracer installed, or propagation on), with
   * the operation as its `clinical.operation`; without it, the caller made the span it runs under.
   */
  readonly span?: string | undefined
}

/** A call, whatever it makes of its answer. */
export type AnyCall = Call<unknown>

/** The headers of every data request: JSON, the bearer token and the ApplicationId, both redacted. */
export const dataHeaders = (
  config: ClinicalConfig.Service,
  authorization: Redacted.Redacted<string>
): Readonly<Record<string, HttpTransport.WireValue>> => Core.dataHeaders(config.applicationId, authorization)

/**
 * A data request as the transport gets it. Its body is an Effect `Redacted` made by the caller:
 * the Effect 3 line's lazily made body (core/redaction/secretText) measured 8% more CPU per call
 * here (its per-request `defineProperty` costs more than Effect 4's `Redacted.make`).
 */
export class DataRequest implements HttpTransport.TransportRequest {
  readonly method = "POST"
  constructor(
    readonly url: string,
    readonly headers: Readonly<Record<string, HttpTransport.WireValue>>,
    readonly body: Redacted.Redacted<string>,
    readonly maxResponseBytes: number,
    readonly timeoutMillis: number
  ) {}
}
