/**
 * The core's secret text (core/redaction/secretText.ts) with Effect 3's `Redacted`: a request body
 * that holds a secret, a `Redacted` of it made only if some code other than the transport reads it.
 */
import * as Redacted from "effect/Redacted"
import * as Core from "../../../core/redaction/secretText.js"

/** A header value or body, kept `Redacted` when it holds a secret (`WireValue`). */
export type WireValue = string | Redacted.Redacted<string>

/** A secret text, handed out as an Effect 3 `Redacted`. */
export class SecretText extends Core.SecretText<Redacted.Redacted<string>> {
  protected redact(text: string): Redacted.Redacted<string> {
    return Redacted.make(text)
  }
}

/** A request whose body may be a {@link SecretText} (see the core's). */
export const SecretBodyRequest = Core.SecretBodyRequest<Redacted.Redacted<string>>

/** The request's body as a {@link SecretText}, when it carries one. */
export const secretBodyOf = (request: object): Core.SecretText<Redacted.Redacted<string>> | undefined =>
  Core.secretBodyOf(request)

/** A data request as the transport gets it (see the core's). */
export const DataRequest = Core.DataRequest<Redacted.Redacted<string>>
