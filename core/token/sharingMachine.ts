/**
 * One refresh through the fleet's token store, as a machine with no I/O (the shape of
 * core/call/callMachine.ts): each line's runner (`internal/token/tokenSharing`) performs the
 * action it answers with and feeds it what came of it; the action's details are in its fields.
 * The decisions are core/token/tokenSharing.ts's; the flow is its steps 1-3:
 *
 * | after | the machine answers |
 * |---|---|
 * | `start` | `Read` |
 * | `read` (the first, or after a sleep) | `Adopted`; `Fail` (the fleet's pause); `Lease`; waiting for a holder: `Sleep`, `Request` (alone, then offered), `StoreFailed` (a churning lease) |
 * | `leased` | `Read` again: as leaseholder (`true`), or the new holder's (`false`) |
 * | the leaseholder's `read` | `Release` then `Adopted`; else `Request` (after `Repair` when the store holds what no instance reads) |
 * | `requested` | `Publish` (`Release` when no time is left to publish); alone: `Done`, after `PublishInBackground` if a generation was read |
 * | `published` | `Done`, or `Read` when a newer token won (then `Done` with it) |
 * | a failed read, lease, request or publication | alone (`Request`, or `Fail` after `ReleaseInBackground`), `Fail`, or `Done` with the token in hand |
 *
 * `Release`, `ReleaseInBackground`, `PublishInBackground`, `Repair` and `StoreFailed` have no answer
 * to tell: the runner performs them and asks {@link SharingMachine.next}.
 */
import type { RateLimited, ServerError, TokenStoreError } from "../errors.js"
import {
  adoptable,
  afterRead,
  AVOID_NONE,
  churned,
  type IssuedToken,
  type Limits,
  pausedError,
  pollDelayMillis,
  publishTtlMillis,
  type Waiting,
  waitStep
} from "./tokenSharing.js"
import type { OnUnavailable, Snapshot } from "./tokenStore.js"

/**
 * What the runner does next:
 * - `Read`: read the store, then `read` or `readFailed`;
 * - `Lease`: try to take the lease, then `leased` or `leaseFailed`;
 * - `Request`: one token request, then `requested` or `requestFailed`. By the `leaseholder`, the
 *   pause it is told to make is owed to the fleet as the lease is, and the lease is given back if
 *   the request fails or is interrupted;
 * - `Publish`: publish `issued` over generation `expected` for `ttlMillis` (owed), then `published`
 *   or `publishFailed`;
 * - `Release`: give the lease back (owed; a failure only counts), then `next`;
 * - `ReleaseInBackground`: the same in the client's background, then `next` at once;
 * - `PublishInBackground`: run {@link SharingMachine.publishing} for `issued` over `expected` in the
 *   client's background, its outcome ignored, then `next` at once;
 * - `Repair`: count and log that the store held what no instance reads (`repairReason`), then `next`;
 * - `StoreFailed`: count and log `storeError` as a failure of the store, then `next`;
 * - `Sleep`: wait {@link SharingMachine.sleepMillis}, then `woke`;
 * - `Adopted`: the refresh ends with `issued`, taken from the store (counted);
 * - `Done`: the refresh ends with `issued`;
 * - `Fail`: the refresh ends with `error` (`paused`: refused by the fleet's pause, counted).
 */
export type Action =
  | "Read"
  | "Lease"
  | "Request"
  | "Publish"
  | "Release"
  | "ReleaseInBackground"
  | "PublishInBackground"
  | "Repair"
  | "StoreFailed"
  | "Sleep"
  | "Adopted"
  | "Done"
  | "Fail"

/** What the refreshes of one client share: the settings the decisions read, and its line's errors. */
export interface Settings<E> {
  readonly limits: Limits
  readonly leaseMillis: number
  readonly onUnavailable: OnUnavailable
  /** The token endpoint's URL, for the error of a request the fleet's pause keeps from going. */
  readonly url: string
  /** A failure the machine decided on, as the line's error class. */
  readonly wrap: (error: TokenStoreError | RateLimited | ServerError) => E
}

/** Which read the machine is waiting for. */
type Reading = "Shared" | "AsLeaseholder" | "AfterLost"

/** Who asked for the token: alone (the store failed), alone after waiting for a holder, or the leaseholder. */
type Asker = "Alone" | "AskAlone" | "Leaseholder"

/** One refresh (`S`: the line's `Redacted`; `E`: its errors). Its fields are the current action's details. */
export class SharingMachine<S, E> {
  /** `Publish`'s, `Adopted`'s and `Done`'s token. */
  issued: IssuedToken<S> | undefined = undefined
  /** `Publish`'s and `PublishInBackground`'s generation to compare against. */
  expected = 0
  /** `Publish`'s time to live. */
  ttlMillis = 0
  /** `Fail`'s error. */
  error: E | undefined = undefined
  /** `Fail` by the fleet's pause. */
  paused = false
  /** `StoreFailed`'s failure, as core data (what the count and the log read). */
  storeError: TokenStoreError | undefined = undefined
  /** `Repair`'s reason. */
  repairReason = ""
  /** The number of the next poll for a holder's publication (0 first). */
  poll = 0

  private reading: Reading = "Shared"
  private asker: Asker = "Alone"
  /** The generation an instance that went on alone read, to offer its token over; `undefined` when it read none. */
  private owed: number | undefined = undefined
  /** The leaseholder's first read, which fences its publication if the second fails. */
  private first: { readonly snapshot: Snapshot<S>; readonly readAt: number } | undefined = undefined
  private waiting: Waiting | undefined = undefined
  /** What follows an action with no answer. */
  private then: () => Action = () => "Done"

  /** `Request` by the holder of the lease. */
  get leaseholder(): boolean {
    return this.asker === "Leaseholder"
  }

  constructor(
    private readonly settings: Settings<E>,
    /** Fingerprints of the tokens not to take from the store (the one replaced, the one just refused). */
    private readonly avoid: ReadonlyArray<string>
  ) {}

  /**
   * The publication of a token this instance fetched alone, run in the background: its outcome
   * is ignored, but a lost publication still reads the winner, as every publication does.
   */
  static publishing<S, E>(
    settings: Settings<E>,
    issued: IssuedToken<S>,
    expected: number,
    now: number
  ): readonly [SharingMachine<S, E>, Action] {
    const machine = new SharingMachine<S, E>(settings, AVOID_NONE)
    machine.issued = issued
    machine.expected = expected
    return [machine, machine.publish(now)]
  }

  start(): Action {
    return "Read"
  }

  /** The store answered a read sent at `readAt`. */
  read(snapshot: Snapshot<S>, readAt: number): Action {
    switch (this.reading) {
      case "Shared":
        return this.afterShared(snapshot, readAt)
      case "AsLeaseholder":
        return this.asLeaseholder(snapshot, readAt)
      case "AfterLost":
        // Another instance published while this one fetched (its lease ran out): theirs is the fleet's.
        this.issued = adoptable(snapshot, AVOID_NONE, readAt, this.settings.limits) ?? this.issued
        return "Done"
    }
  }

  readFailed(error: E): Action {
    switch (this.reading) {
      case "Shared":
        return this.alone(error, undefined)
      case "AsLeaseholder":
        // A read that fails now changes nothing: the first one still fences the publication.
        return this.asLeaseholder(this.first!.snapshot, this.first!.readAt)
      case "AfterLost":
        return "Done"
    }
  }

  leased(acquired: boolean): Action {
    // Taken: read again as its holder (somebody may have published meanwhile). Not: another
    // instance took it first, a new holder, which the next read finds.
    this.reading = acquired ? "AsLeaseholder" : "Shared"
    return "Read"
  }

  leaseFailed(error: E): Action {
    // The lease may have been taken even so (a command that timed out but ran): it is given back.
    return this.alone(error, this.first!.snapshot.generation)
  }

  /** The token endpoint answered at `now`. */
  requested(issued: IssuedToken<S>, now: number): Action {
    this.issued = issued
    if (this.asker !== "Alone") return this.publish(now)
    if (this.owed === undefined) return "Done"
    // Published in the background, if it can be: the fleet may still take it.
    this.expected = this.owed
    return this.andThen("PublishInBackground", () => "Done")
  }

  requestFailed(error: E): Action {
    return this.fail(error)
  }

  /** The store took the publication as `generation`, or `undefined`: a newer token won. */
  published(generation: number | undefined): Action {
    if (generation === undefined) {
      this.reading = "AfterLost"
      return "Read"
    }
    this.issued = { ...this.issued!, storeGeneration: generation }
    return "Done"
  }

  /** The store failed to take the publication: the token is used as it is. */
  publishFailed(): Action {
    return this.asker === "Leaseholder" ? this.andThen("ReleaseInBackground", () => "Done") : "Done"
  }

  woke(): Action {
    this.poll++
    this.reading = "Shared"
    return "Read"
  }

  /** What follows `Release`, `ReleaseInBackground`, `PublishInBackground`, `Repair` and `StoreFailed`. */
  next(): Action {
    return this.then()
  }

  /** `Sleep`'s wait, for a `random` in [0, 1). */
  sleepMillis(random: number): number {
    return pollDelayMillis(this.poll, random)
  }

  private afterShared(snapshot: Snapshot<S>, readAt: number): Action {
    const step = afterRead(snapshot, this.avoid, readAt, this.settings.limits)
    switch (step._tag) {
      case "Adopt":
        this.issued = step.issued
        return "Adopted"
      case "Paused":
        this.paused = true
        return this.fail(this.settings.wrap(pausedError(step.status, step.remainingMillis, this.settings.url)))
      case "Lease":
        this.first = { snapshot, readAt }
        return "Lease"
      case "Wait":
        return this.waitFor(step.holder, snapshot, readAt)
    }
  }

  /** Another instance holds the lease (`holder`): wait for its token, within bounds. */
  private waitFor(holder: string, snapshot: Snapshot<S>, readAt: number): Action {
    const step = waitStep(this.waiting, holder, readAt, this.settings.leaseMillis)
    switch (step._tag) {
      case "Churned": {
        // Counted and logged as a failure of the store, which is then left alone for a while.
        this.storeError = churned(step)
        const error = this.settings.wrap(this.storeError)
        return this.andThen("StoreFailed", () => this.alone(error, snapshot.generation))
      }
      case "AskAlone":
        this.expected = snapshot.generation
        return this.request("AskAlone")
      case "Poll":
        this.waiting = step.waiting
        return "Sleep"
    }
  }

  private asLeaseholder(snapshot: Snapshot<S>, readAt: number): Action {
    const issued = adoptable(snapshot, this.avoid, readAt, this.settings.limits)
    if (issued !== undefined) {
      this.issued = issued
      return this.andThen("Release", () => "Adopted")
    }
    this.expected = snapshot.generation
    if (snapshot.unreadable === undefined) return this.request("Leaseholder")
    this.repairReason = snapshot.unreadable.reason
    return this.andThen("Repair", () => this.request("Leaseholder"))
  }

  /** Publishes `issued` over `expected` at `now`; with no time left, only gives the lease back. */
  private publish(now: number): Action {
    this.ttlMillis = publishTtlMillis(this.issued!, now)
    // Stryker disable next-line ConditionalExpression,EqualityOperator: unreachable in the lines' tests, a token request times out (10 s) long before a token's lifetime passes; kept for a store that refuses a TTL of 0
    if (this.ttlMillis <= 0) return this.andThen("Release", () => "Done")
    return "Publish"
  }

  /** The token of this instance's own, for a refresh the store could not serve (`expected`: the generation read). */
  private alone(error: E, expected: number | undefined): Action {
    if (this.settings.onUnavailable === "fail") {
      return expected === undefined ? this.fail(error) : this.andThen("ReleaseInBackground", () => this.fail(error))
    }
    this.owed = expected
    return this.request("Alone")
  }

  private request(asker: Asker): Action {
    this.asker = asker
    return "Request"
  }

  private fail(error: E): Action {
    this.error = error
    return "Fail"
  }

  private andThen(action: Action, then: () => Action): Action {
    this.then = then
    return action
  }
}
