/** The shared load-control specification (spec/loadControl.ts), held against the Effect 4 line. */
import { describe, it } from "@effect/vitest"
import { loadControl } from "../../spec/loadControl.js"
import { driver } from "./support/line.js"

loadControl({ describe, it }, driver)
