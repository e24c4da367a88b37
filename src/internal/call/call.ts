/**
 * What a data call is (its operation, URL, secret body, and what it makes of its answer) and the
 * headers every data request carries. The calls are made by `authorizedPost`.
 *
 * The objects made on every call are class instances, not object literals. V8 "pretenures" an
 * object literal whose objects it sees surviving a scavenge (it allocates them in the old
 * generation from then on), and an object there keeps whatever young objects it points to alive
 * until the next full collection, which pretenures their literals in turn: measured on the
 * common path, the request, the attempt, the answer and the call were all pretenured, the parsed
 * answer promoted with them, and garbage collection took half of the call's CPU. A class
 * instance has no allocation site to pretenure (see docs/architecture.md).
 */
import type * as Either from "effect/Either"
import type * as Redacted from "effect/Redacted"
import type * as Tracer from "effect/Tracer"
import * as Core from "../../../core/call/dataHeaders.js"
import type * as ClinicalConfig from "../../ClinicalConfig.js"
import type { ClinicalError, Operation } from "../../ClinicalError.js"
import type * as HttpTransport from "../../HttpTransport.js"
import type { SecretText } from "./secretText.js"

/** A successful answer: its status and its JSON body. */
export interface JsonResponse {
  readonly status: number
  readonly json: unknown
  /** Every secret the request carried (the PersonUid, the token, the ApplicationId, ...): to scrub from text built from the body. */
  readonly secrets: () => ReadonlyArray<Redacted.Redacted<string>>
}

/** What a call makes of an answer that reads: the value its caller gets, or the error the answer stands for. */
export type Finish<A> = (answer: JsonResponse) => Either.Either<A, ClinicalError>

/** What a call is. */
export class Call<A> {
  /**
   * @param operation the operation's name, for errors, spans and metrics
   * @param url where the request goes
   * @param body the request body; it holds a PersonUid (or a pass code), so it stays secret
   * @param secrets secrets the request carries besides the token and ApplicationId, to scrub from
   *   server text (asked for only then)
   * @param resendable whether the request may be sent again once it may have reached the server.
   *   Reads may. An operation that consumes something (a single-use pass code) or writes may not:
   *   it is sent again only where the server surely did not act (no connection was made; a
   *   401/419 refused the token).
   * @param finish what the call makes of its answer (decoding it, say), as part of the call: its
   *   failure is the call's, recorded as any other
   * @param span the call's span, when the caller made it without making it current (see
   *   `fiberSpan`): the attempts' spans and the call's attributes go there, the Effect path runs
   *   under it, and the call ends it (the caller ends it only when the call never starts)
   * @param traced false when no one could see the call's spans (no tracer installed: see
   *   `FiberSpan.observed`): then the call has no span, and its attempts make none
   */
  constructor(
    readonly operation: Operation,
    readonly url: string,
    readonly body: SecretText,
    readonly secrets: () => ReadonlyArray<Redacted.Redacted<string>>,
    readonly resendable: boolean,
    readonly finish: Finish<A>,
    readonly span?: Tracer.Span | undefined,
    readonly traced: boolean = true
  ) {}
}

/** A call, whatever it makes of its answer. */
export type AnyCall = Call<unknown>

/** The headers of every data request: JSON, the bearer token and the ApplicationId, both redacted. */
export const dataHeaders = (
  config: ClinicalConfig.Service,
  authorization: Redacted.Redacted<string>
): Readonly<Record<string, HttpTransport.WireValue>> => Core.dataHeaders(config.applicationId, authorization)
