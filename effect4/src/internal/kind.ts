/** This line's effect type for core's interfaces (core/kind.ts). */
import type * as Effect from "effect/Effect"
import type { EffectKind } from "../../../core/kind.js"

/** `Kind<Line, A, E>` is `Effect.Effect<A, E>`. */
export interface Line extends EffectKind {
  readonly type: Effect.Effect<this["A"], this["E"]>
}
