/** The shared conformance specification (spec/conformance.ts), held against the Effect 4 line's errors. */
import { describe, it } from "@effect/vitest"
import { conformance } from "../../spec/conformance.js"
import { isClinicalError } from "../src/ClinicalError.js"
import { fromCore } from "../src/internal/fromCore.js"

conformance({ describe, it }, { line: "Effect 4", fromCore, isClinicalError })
