/**
 * A failure the core decided on (plain data, core/errors.ts) as this line's error class: how the
 * core's decisions (responses read, a pause's fast failure) reach a caller of this line. Each
 * class is exported under its tag.
 */
import type * as Core from "../../../core/errors.js"
import * as ClinicalError from "../ClinicalError.js"

/** A failure the core decided on (plain data), as this line's error class. */
export const fromCore = <E extends Core.AnyClinicalError>(
  error: E
): Extract<ClinicalError.AnyClinicalError, { _tag: E["_tag"] }> => {
  const { _tag, ...fields } = error
  const Class = ClinicalError[_tag] as unknown as new(
    fields: object
  ) => Extract<ClinicalError.AnyClinicalError, { _tag: E["_tag"] }>
  return new Class(fields)
}
