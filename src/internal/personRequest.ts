/**
 * The body of a data request about one person (the service's "BaseRequest"): the PersonUid and
 * the optional date range, checked before anything is sent.
 */
import * as Either from "effect/Either"
import * as Redacted from "effect/Redacted"
import { InvalidRequest, type Operation } from "../ClinicalError.js"
import { calendarDate, MAX_PERSON_UID_LENGTH, reveal, visibleAscii } from "./validate.js"

/** A PersonUid, as users pass it: plain, or already `Redacted`. */
export type PersonUidInput = string | Redacted.Redacted<string>

/** The optional date range of a data request. A `Date` stands for its UTC calendar day. */
export interface DateRange {
  /** First day to include, `YYYY-MM-DD` or a `Date`. */
  readonly startDate?: string | Date | undefined
  /** Last day to include, `YYYY-MM-DD` or a `Date`. */
  readonly endDate?: string | Date | undefined
}

/** A checked request body (it holds the PersonUid, so it stays redacted) and the PersonUid itself. */
export interface PersonRequest {
  readonly body: Redacted.Redacted<string>
  /** The PersonUid, redacted; made only when asked for (to scrub it from an error). */
  readonly personUid: () => Redacted.Redacted<string>
}

/**
 * Checks the inputs and writes the body `{"personuid": ..., "StartDate"?: ..., "EndDate"?: ...}`
 * (the interface spells `personuid` so; the service binds names case-insensitively).
 */
export const personRequest = (
  operation: Operation,
  personUid: PersonUidInput,
  range: DateRange | null | undefined
): Either.Either<PersonRequest, InvalidRequest> => {
  const refuse = (field: string, reason: string) => Either.left(new InvalidRequest({ operation, field, reason }))
  const uid = visibleAscii(reveal(personUid), MAX_PERSON_UID_LENGTH)
  if (Either.isLeft(uid)) return refuse("personUid", uid.left)
  // JavaScript callers: `null` means no options; anything else that is not an object is a mistake.
  if (range !== undefined && range !== null && typeof range !== "object") {
    return refuse("options", "must be an object such as { startDate, endDate }")
  }
  const body: { personuid: string; StartDate?: string; EndDate?: string } = { personuid: uid.right }
  if (range?.startDate !== undefined) {
    const start = calendarDate(range.startDate)
    if (Either.isLeft(start)) return refuse("startDate", start.left)
    body.StartDate = start.right
  }
  if (range?.endDate !== undefined) {
    const end = calendarDate(range.endDate)
    if (Either.isLeft(end)) return refuse("endDate", end.left)
    body.EndDate = end.right
  }
  if (body.StartDate !== undefined && body.EndDate !== undefined && body.StartDate > body.EndDate) {
    return refuse("startDate", "is after endDate")
  }
  return Either.right({
    body: Redacted.make(JSON.stringify(body)),
    personUid: Redacted.isRedacted(personUid) ? () => personUid : () => Redacted.make(uid.right)
  })
}
