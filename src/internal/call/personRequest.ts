/**
 * The body of a data request about one person (the service's "BaseRequest"): the PersonUid and
 * the optional date range, checked before anything is sent.
 */
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import { InvalidRequest, type Operation } from "../../ClinicalError.js"
import { calendarDate, MAX_PERSON_UID_LENGTH, reveal, visibleAscii } from "../validate.js"
import { SecretText } from "./secretText.js"

/** A PersonUid, as users pass it: plain, or already `Redacted`. */
export type PersonUidInput = string | Redacted.Redacted<string>

/** The optional date range of a data request. A `Date` stands for its UTC calendar day. */
export interface DateRange {
  /** First day to include, `YYYY-MM-DD` or a `Date`. */
  readonly startDate?: string | Date | undefined
  /** Last day to include, `YYYY-MM-DD` or a `Date`. */
  readonly endDate?: string | Date | undefined
}

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

const noDates: Either.Either<{ StartDate?: string; EndDate?: string }, readonly [string, string]> = Either.right({})

/**
 * The date range as the body writes it (`StartDate`, `EndDate`: `YYYY-MM-DD`), or the field that is
 * refused and why: for every request, and for a caller checking a batch's range first.
 */
export const dateRange = (
  range: DateRange | null | undefined
): Either.Either<{ StartDate?: string; EndDate?: string }, readonly [string, string]> => {
  const startDate = range?.startDate
  const endDate = range?.endDate
  // Most requests have no range: no allocation for them (this runs on every call).
  // Stryker disable next-line ConditionalExpression: equivalent, the path below writes the same empty range
  if (startDate === undefined && endDate === undefined) return noDates
  const written: { StartDate?: string; EndDate?: string } = {}
  if (startDate !== undefined) {
    const start = calendarDate(startDate)
    if (Either.isLeft(start)) return Either.left(["startDate", start.left])
    written.StartDate = start.right
  }
  if (endDate !== undefined) {
    const end = calendarDate(endDate)
    if (Either.isLeft(end)) return Either.left(["endDate", end.left])
    written.EndDate = end.right
  }
  // Stryker disable next-line ConditionalExpression,LogicalOperator: equivalent, a comparison with undefined is false
  if (written.StartDate !== undefined && written.EndDate !== undefined && written.StartDate > written.EndDate) {
    return Either.left(["startDate", "is after endDate"])
  }
  return Either.right(written)
}

/**
 * Checks the inputs and writes the body `{"personuid": ..., "StartDate"?: ..., "EndDate"?: ...}`
 * (the interface spells `personuid` so; the service binds names case-insensitively).
 */
export const personRequest = (
  operation: Operation,
  personUid: PersonUidInput,
  dates: DateRange | null | undefined
): Either.Either<PersonRequest, InvalidRequest> => {
  const refuse = (field: string, reason: string) => Either.left(new InvalidRequest({ operation, field, reason }))
  const uid = visibleAscii(reveal(personUid), MAX_PERSON_UID_LENGTH)
  if (Either.isLeft(uid)) return refuse("personUid", uid.left)
  // JavaScript callers: `null` means no options; anything else that is not an object is a mistake.
  if (typeof dates !== "object" && dates !== undefined) {
    return refuse("options", "must be an object such as { startDate, endDate }")
  }
  const range = dateRange(dates)
  if (Either.isLeft(range)) return refuse(range.left[0], range.left[1])
  // Most requests have no range: their body written directly (the same text JSON.stringify writes).
  const body = range === noDates
    ? `{"personuid":${JSON.stringify(uid.right)}}`
    : JSON.stringify({ personuid: uid.right, ...range.right })
  return Either.right(new PersonRequest(new SecretText(body), personUid, uid.right))
}
