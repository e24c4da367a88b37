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
  readonly personUid: Redacted.Redacted<string>
}

/**
 * Checks the inputs and writes the body `{"personuid": ..., "StartDate"?: ..., "EndDate"?: ...}`
 * (the interface spells `personuid` so; the service binds names case-insensitively).
 */
export const personRequest = (
  operation: Operation,
  personUid: PersonUidInput,
  range: DateRange | undefined
): Either.Either<PersonRequest, InvalidRequest> =>
  Either.gen(function*() {
    const refuse = (field: string) => (reason: string) => new InvalidRequest({ operation, field, reason })
    const uid = yield* Either.mapLeft(visibleAscii(reveal(personUid), MAX_PERSON_UID_LENGTH), refuse("personUid"))
    const body: { personuid: string; StartDate?: string; EndDate?: string } = { personuid: uid }
    if (range?.startDate !== undefined) {
      body.StartDate = yield* Either.mapLeft(calendarDate(range.startDate), refuse("startDate"))
    }
    if (range?.endDate !== undefined) {
      body.EndDate = yield* Either.mapLeft(calendarDate(range.endDate), refuse("endDate"))
    }
    if (body.StartDate !== undefined && body.EndDate !== undefined && body.StartDate > body.EndDate) {
      return yield* Either.left(refuse("startDate")("is after endDate"))
    }
    return {
      body: Redacted.make(JSON.stringify(body)),
      personUid: Redacted.isRedacted(personUid) ? personUid : Redacted.make(uid)
    }
  })
