/** The shared hostile-server specification (spec/hostile.ts), held against the Effect 3 line. */
import { describe, it } from "@effect/vitest"
import { hostile } from "../spec/hostile.js"
import { driver } from "./support/line.js"

hostile({ describe, it }, driver)
