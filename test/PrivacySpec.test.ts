/** The shared privacy specification (spec/privacy.ts), held against the Effect 3 line. */
import { describe, it } from "@effect/vitest"
import { privacy } from "../spec/privacy.js"
import { driver } from "./support/line.js"

privacy({ describe, it }, driver)
