/**
 * The body of a data request about one person (the service's "BaseRequest"), checked before
 * anything is sent (the core's rules: core/call/personRequest.ts), as this line's values: the
 * body a secret text, the PersonUid `Redacted`, a refusal an `InvalidRequest`.
 */
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import * as Core from "../../../core/call/personRequest.js"
import { InvalidRequest, type Operation } from "../../ClinicalError.js"
import { reveal } from "../validate.js"
import { SecretText } from "./secretText.js"

export type { DateRange } from "../../../core/call/personRequest.js"

/** A PersonUid, as users pass it: plain, or already `Redacted`. */
export type PersonUidInput = string | Redacted.Redacted<string>

/**
 * A checked request body (it holds the PersonUid, so it stays secret) and the PersonUid itself.
 * A class, not an object literal, as every object that lives as long as a call (see `callback`).
 */
export class PersonRequest {
  /** The PersonUid, redacted; made only when asked for (to scrub it from an error). */
  readonly personUid: () => Redacted.Redacted<string>
  constructor(readonly body: SecretText, personUid: PersonUidInput, checked: string) {
    this.personUid = Redacted.isRedacted(personUid) ? () => personUid : () => Redacted.make(checked)
  }
}

/**
 * The date range as the body writes it (`StartDate`, `EndDate`: `YYYY-MM-DD`), or the field that is
 * refused and why (the core's `dateRange`): for a caller checking a batch's range first (a
 * request checks its own in the core's `personRequest`).
 */
export const dateRange = (
  range: Core.DateRange | null | undefined
): Either.Either<{ StartDate?: string; EndDate?: string }, readonly [string, string]> => {
  const written = Core.dateRange(range)
  return written instanceof Core.Refusal ? Either.left([written.field, written.reason]) : Either.right(written)
}

/**
 * Checks the inputs and writes the body `{"personuid": ..., "StartDate"?: ..., "EndDate"?: ...}`
 * (the core's `personRequest`, over the PersonUid revealed).
 */
export const personRequest = (
  operation: Operation,
  personUid: PersonUidInput,
  dates: Core.DateRange | null | undefined
): Either.Either<PersonRequest, InvalidRequest> => {
  const checked = Core.personRequest(reveal(personUid), dates)
  return checked instanceof Core.Refusal
    ? Either.left(new InvalidRequest({ operation, field: checked.field, reason: checked.reason }))
    : Either.right(new PersonRequest(new SecretText(checked.body), personUid, checked.personUid))
}
