/**
 * What the calls of one client share, read once from its settings: the machine's `Client` (its
 * policies, deadline, load control, the cache's reader) and the data headers by token. Each line's
 * `Caller` extends it with its gate, transport and runner; `D` is its `Duration`, `S` its
 * `Redacted`, `C` its `Clock`, `G` its gate.
 */
import type { Settings } from "../config/settings.js"
import { retryPolicyOf } from "../config/settings.js"
import type * as Core from "../errors.js"
import * as FreshToken from "../token/freshToken.js"
import type { Client } from "./callMachine.js"
import type * as CallPolicy from "./callPolicy.js"
import { HeadersByToken } from "./dataHeaders.js"
import type * as Gate from "./gate.js"
import { LoadControl, settingsOf } from "./loadControl.js"

/** How a line reads its durations and its clock. */
export interface Durations<D, C> {
  readonly toMillis: (duration: D) => number
  /** A duration as the messages say it (`5s`). */
  readonly format: (duration: D) => string
  /** A clock's monotonic time in ns. */
  readonly nanos: (clock: C) => bigint
}

/** The rules of one client's calls, in ms. */
export abstract class CallRules<T, E extends Core.ClinicalError, C, S, D, G extends Gate.Gate = Gate.Gate>
  implements Client<T, E, C>
{
  readonly resendable: CallPolicy.Policy
  readonly singleUse: CallPolicy.Policy
  readonly deadlineMillis: number
  readonly requestTimeoutMillis: number
  readonly deadlineText: string
  readonly maxRetryAfterMillis: number
  readonly load: LoadControl<C>
  readonly fresh: FreshToken.Reader<T> | undefined
  protected readonly headers: HeadersByToken<S>
  abstract readonly wrap: (error: Core.ClinicalError) => E

  /**
   * @param tokens the line's token service, whose cache's reader the calls read without waiting
   * @param onLimit told of each new size of the gate (the limit's gauge)
   */
  constructor(
    settings: Settings<S, D>,
    durations: Durations<D, C>,
    readonly gate: G,
    tokens: object,
    onLimit: (permits: number) => void
  ) {
    const retry = retryPolicyOf(settings, durations.toMillis)
    this.resendable = { ...retry, resendable: true }
    this.singleUse = { ...retry, resendable: false }
    this.deadlineMillis = durations.toMillis(settings.deadline)
    this.requestTimeoutMillis = durations.toMillis(settings.requestTimeout)
    this.deadlineText = durations.format(settings.deadline)
    this.maxRetryAfterMillis = durations.toMillis(settings.maxRetryAfter)
    this.headers = new HeadersByToken(settings.applicationId)
    this.load = new LoadControl(settingsOf(settings, durations.toMillis), gate, onLimit, durations.nanos)
    this.fresh = FreshToken.readerOf<T>(tokens)
  }
}
