/**
 * What a token store does (the port `TokenStore` names and its adapters implement): the core's
 * plain types (core/token/tokenStore.ts) with this line's `Redacted`, and the service's effects.
 */
import type * as Redacted from "effect/Redacted"
import type * as Core from "../../../core/token/tokenStore.js"
import type { StoreService } from "../../../core/token/tokenStorePort.js"
import type { TokenStoreError } from "../../ClinicalError.js"
import type { Line } from "../kind.js"

export { MAX_PAUSE_MILLIS } from "../../../core/token/tokenStore.js"

export type { OnUnavailable, Paused, PauseStatus, Unreadable } from "../../../core/token/tokenStore.js"

/** A token in the store, as one instance reads it. */
export type Stored = Core.Stored<Redacted.Redacted<string>>

/** What one read of the store finds, in one step. */
export type Snapshot = Core.Snapshot<Redacted.Redacted<string>>

/** A token store (core/token/tokenStorePort.ts says what each operation does). */
export type Service = StoreService<Line, Redacted.Redacted<string>, TokenStoreError>
