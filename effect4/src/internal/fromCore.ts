/**
 * A failure the core decided on (plain data, core/errors.ts) as this line's error class: how the
 * core's decisions (responses read, a pause's fast failure) reach a caller of this line. Each
 * class is exported under its tag.
 */
import * as Core from "../../../core/errors.js"
import * as ClinicalError from "../ClinicalError.js"

/** A failure the core decided on (plain data), as this line's error class. */
export const fromCore = <E extends Core.AnyClinicalError>(
  error: E
): Extract<ClinicalError.AnyClinicalError, { _tag: E["_tag"] }> =>
  Core.instanceOf(ClinicalError, error) as Extract<ClinicalError.AnyClinicalError, { _tag: E["_tag"] }>
