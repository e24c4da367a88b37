/** The shared end-to-end specification (spec/endToEnd.ts), held against the Effect 3 line. */
import { describe, it } from "@effect/vitest"
import { endToEnd } from "../spec/endToEnd.js"
import { driver } from "./support/line.js"

endToEnd({ describe, it }, driver)
