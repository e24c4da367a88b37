/**
 * The shared end-to-end specification (spec/endToEnd.ts), held against the Effect 4 line. A known
 * gap of this line would be listed here, by test name and why: it still runs, and must still fail,
 * until it is closed and taken off (none now).
 */
import { describe, it } from "@effect/vitest"
import { endToEnd } from "../../spec/endToEnd.js"
import type { KnownGaps } from "../../spec/hostile.js"
import { driver } from "./support/line.js"

const KNOWN_GAPS: KnownGaps = {}

endToEnd({ describe, it }, driver, KNOWN_GAPS)
