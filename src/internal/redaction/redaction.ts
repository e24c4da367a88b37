/**
 * The core's scrubbing (core/redaction/redaction.ts) over this line's secrets: each `Redacted`
 * revealed where it is searched for, and nowhere else.
 */
import type * as Redacted from "effect/Redacted"
import * as Core from "../../../core/redaction/redaction.js"
import { reveal } from "../validate.js"

export {
  MAX_DECODINGS,
  MAX_SEARCHED,
  MAX_SECRET,
  MAX_TEXT,
  redactMarked,
  REPLACEMENT,
  type Scrubber,
  type ScrubOptions
} from "../../../core/redaction/redaction.js"

/** Secrets as this line holds them: `Redacted` values or plain text. */
type Secrets = Iterable<Redacted.Redacted<string> | string>

const revealed = (secrets: Secrets): Array<string | undefined> =>
  Array.from(secrets, (secret) => {
    const value = reveal(secret)
    return typeof value === "string" ? value : undefined
  })

/** {@link Core.scrub} over `Redacted` secrets. */
export const scrub = (text: string, secrets: Secrets, options?: Core.ScrubOptions): string =>
  Core.scrub(text, revealed(secrets), options)

/** {@link Core.scrubber} over `Redacted` secrets. */
export const scrubber = (secrets: Secrets, options?: Core.ScrubOptions): Core.Scrubber =>
  Core.scrubber(revealed(secrets), options)

/** {@link Core.redactor} over `Redacted` secrets. */
export const redactor = (secrets: Secrets): (text: string) => string => Core.redactor(revealed(secrets))
