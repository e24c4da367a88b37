/**
 * The shared hostile-server specification (spec/hostile.ts), held against the Effect 4 line, but
 * for its known gaps: each still runs, and must still fail, until it is closed and taken off.
 */
import { describe, it } from "@effect/vitest"
import { hostile, type KnownGaps } from "../../spec/hostile.js"
import { driver } from "./support/line.js"

const NO_CLAMP_WARNING =
  "effect4/src/TokenService.ts logs no warning when maxTokenLifetime cuts a token's lifetime (Effect 3 does, once)"

const KNOWN_GAPS: KnownGaps = {
  "absurd timing from the server > TOKEN_EXPIRES in the year 9999: the cut is logged once as a warning, however many tokens it cuts":
    NO_CLAMP_WARNING,
  "absurd timing from the server > a Date of 1970 and TOKEN_EXPIRES an hour from now: the cut is logged once as a warning, however many tokens it cuts":
    NO_CLAMP_WARNING
}

hostile({ describe, it }, driver, KNOWN_GAPS)
