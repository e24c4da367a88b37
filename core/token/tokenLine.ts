/**
 * What core's token runners (the sharer, the keeper) take of a line alike: its common modules
 * (`core/effects`' `Common`), its timeout, the count of fast failures in a pause, and its error
 * classes. Each line builds it once (`internal/token/tokenLine`) and adds what each runner wants.
 */
import type { Common } from "../effects.js"
import type { RateLimited, ServerError, TokenStoreError, TransportError } from "../errors.js"

export interface TokenLine<F, S, E> extends Common<F, S> {
  /** `operation`, failing with `onTimeout()` once `millis` have passed without its outcome. */
  readonly timeout: (operation: F, millis: number, onTimeout: () => E) => F
  /** Counts a call failed fast while the token endpoint's pause lasts. */
  readonly countThrottled: F
  /** A failure decided in core, as the line's error class. */
  readonly wrap: (error: TokenStoreError | RateLimited | ServerError | TransportError) => E
}
