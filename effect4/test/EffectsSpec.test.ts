/** The combinators and modules core's runners use (spec/effects.ts), held against this line's. */
import { describe, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Random from "effect/Random"
import * as Redacted from "effect/Redacted"
import { effectsModule } from "../../spec/effects.js"

effectsModule({ describe, it }, { Effect, Clock, Random, Deferred, Redacted })
