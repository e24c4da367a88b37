/**
 * A line's effect type as a type-level function, so that an interface whose members are effects
 * (a service, a port) is declared once in core for both lines: `Kind<L, A, E>` is line `L`'s
 * `Effect.Effect<A, E>`. Each line names its own (`internal/kind.ts`):
 *
 * ```ts
 * interface Line extends EffectKind { readonly type: Effect.Effect<this["A"], this["E"]> }
 * ```
 *
 * (The shape of Effect's own `TypeLambda`, which core cannot import.)
 */
export interface EffectKind {
  readonly A: unknown
  readonly E: unknown
  readonly type: unknown
}

/** Line `L`'s effect that succeeds with `A` and fails with `E`. */
export type Kind<L extends EffectKind, A, E = never> = (L & { readonly A: A; readonly E: E })["type"]
