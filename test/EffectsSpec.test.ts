/** The combinators core's runners use (spec/effects.ts), held against this line's `Effect` module. */
import { describe, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { effectsModule } from "../spec/effects.js"

effectsModule({ describe, it }, Effect)
