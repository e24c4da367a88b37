/**
 * The body of a data request about one person (the service's "BaseRequest"): the PersonUid and
 * the optional date range, checked before anything is sent, alike in every Effect line. A refusal
 * names the field and why, never the value (a PersonUid identifies a patient).
 */
import { calendarDate, MAX_PERSON_UID_LENGTH, visibleAscii } from "../validate.js"

/**
 * A refused field of a request and why (plain data; each line makes it its `InvalidRequest`). A
 * class, told apart by `instanceof`, so that a success is returned as itself, with no wrapper.
 */
export class Refusal {
  constructor(readonly field: string, readonly reason: string) {}
}

/** The optional date range of a data request. A `Date` stands for its UTC calendar day. */
export interface DateRange {
  /** First day to include, `YYYY-MM-DD` or a `Date`. */
  readonly startDate?: string | Date | undefined
  /** Last day to include, `YYYY-MM-DD` or a `Date`. */
  readonly endDate?: string | Date | undefined
}

/** The date range as the body writes it. */
export interface WrittenRange {
  StartDate?: string
  EndDate?: string
}

/** The range of a request with none: one object for all of them. */
export const NO_DATES: WrittenRange = {}

/**
 * The date range as the body writes it (`StartDate`, `EndDate`: `YYYY-MM-DD`), or the field that is
 * refused and why: for every request, and for a caller checking a batch's range first.
 */
export const dateRange = (range: DateRange | null | undefined): WrittenRange | Refusal => {
  const startDate = range?.startDate
  const endDate = range?.endDate
  // Most requests have no range: no allocation for them (this runs on every call).
  // Stryker disable next-line ConditionalExpression: equivalent, the path below writes the same empty range
  if (startDate === undefined && endDate === undefined) return NO_DATES
  const written: WrittenRange = {}
  if (startDate !== undefined) {
    const start = calendarDate(startDate)
    if (!start.ok) return new Refusal("startDate", start.reason)
    written.StartDate = start.value
  }
  if (endDate !== undefined) {
    const end = calendarDate(endDate)
    if (!end.ok) return new Refusal("endDate", end.reason)
    written.EndDate = end.value
  }
  // Stryker disable next-line ConditionalExpression,LogicalOperator: equivalent, a comparison with undefined is false
  if (written.StartDate !== undefined && written.EndDate !== undefined && written.StartDate > written.EndDate) {
    return new Refusal("startDate", "is after endDate")
  }
  return written
}

/** A checked request: its body (it holds the PersonUid: a secret) and the PersonUid as checked. */
export class PersonBody {
  constructor(readonly body: string, readonly personUid: string) {}
}

/**
 * Checks the inputs (the PersonUid already revealed) and writes the body
 * `{"personuid": ..., "StartDate"?: ..., "EndDate"?: ...}` (the interface spells `personuid` so;
 * the service binds names case-insensitively).
 */
export const personRequest = (personUid: unknown, dates: DateRange | null | undefined): PersonBody | Refusal => {
  const uid = visibleAscii(personUid, MAX_PERSON_UID_LENGTH)
  if (!uid.ok) return new Refusal("personUid", uid.reason)
  // JavaScript callers: `null` means no options; anything else that is not an object is a mistake.
  if (typeof dates !== "object" && dates !== undefined) {
    return new Refusal("options", "must be an object such as { startDate, endDate }")
  }
  const range = dateRange(dates)
  if (range instanceof Refusal) return range
  // Most requests have no range: their body written directly (the same text JSON.stringify writes).
  const body = range === NO_DATES
    ? `{"personuid":${JSON.stringify(uid.value)}}`
    : JSON.stringify({ personuid: uid.value, ...range })
  return new PersonBody(body, uid.value)
}
