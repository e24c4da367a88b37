/**
 * The runner of the sharing machine (core/token/sharingMachine.ts), written once: it performs each
 * action with the effects of a line's {@link Port} and feeds the machine what came of them, until
 * the refresh ends. Each line's `internal/token/tokenSharing` builds the port over its store (the
 * operations bounded, counted and left alone while the store is down) with its own Effect.
 */
import type { Effects } from "../effects.js"
import type { TokenStoreError } from "../errors.js"
import { type Action, type Settings, SharingMachine } from "./sharingMachine.js"
import type { Entry } from "./storedEntry.js"
import type { IssuedToken } from "./tokenSharing.js"
import type { Snapshot } from "./tokenStore.js"

/**
 * What the runner performs the actions with, as the line's effects (`F`). `S`: the line's
 * `Redacted`; `E`: its errors. "Fails with `E`" means a failure the machine is told of.
 */
export interface Port<F, S, E> {
  readonly effects: Effects<F>
  readonly settings: Settings<E>
  /** Reads the store: succeeds with a {@link Read}, fails with `E`. */
  readonly read: F
  /** Takes the lease: succeeds with whether it was free, fails with `E`. */
  readonly acquireLease: F
  /** One token request (its pause told to the fleet): succeeds with an `IssuedToken<S>`, fails with `E`. */
  readonly request: F
  /** The same by the leaseholder: its pause owed to the fleet, and the lease given back if it fails or is interrupted. */
  readonly leaseholderRequest: F
  /** Publishes over `expected` (owed): succeeds with the new generation or `undefined` (lost), fails with `E`. */
  readonly publish: (expected: number, entry: Entry<S>, ttlMillis: number) => F
  /** Gives the lease back (owed); never fails. */
  readonly release: F
  /** Runs an effect in the client's background, not waited for. */
  readonly background: (effect: F) => F
  /** Counts and logs the repair of what no instance could read. */
  readonly repairing: (reason: string) => F
  /** Counts and logs a failure of the store (the outage begins or goes on). */
  readonly storeFailed: (error: TokenStoreError) => F
  /** Counts a token taken from the store. */
  readonly adopted: F
  /** Counts a refresh refused by the fleet's pause. */
  readonly throttled: F
  /** Succeeds with the wall clock's ms. */
  readonly now: F
  /** Succeeds with a random number in [0, 1). */
  readonly random: F
}

/** A read of the store, and the local time it was sent. */
export interface Read<S> {
  readonly snapshot: Snapshot<S>
  readonly readAt: number
}

/** A new token through the store (the tokens with a fingerprint in `avoid` not taken): succeeds with an `IssuedToken<S>`, fails with `E`. */
export const obtain = <F, S, E>(port: Port<F, S, E>, avoid: ReadonlyArray<string>): F =>
  port.effects.suspend(() => {
    const machine = new SharingMachine<S, E>(port.settings, avoid)
    return run(port, machine, machine.start())
  })

const entryOf = <S>(issued: IssuedToken<S>): Entry<S> => ({
  token: issued.token,
  lifetimeMillis: issued.lifetimeMillis,
  serverLifetimeMillis: issued.serverLifetimeMillis,
  serverClockSkewMillis: issued.serverClockSkewMillis
})

/** Performs `action`, then what the machine answers, until the refresh ends. */
const run = <F, S, E>(port: Port<F, S, E>, machine: SharingMachine<S, E>, action: Action): F => {
  const { effects } = port
  const go = (next: () => Action) => run(port, machine, next())
  // An action with no answer: performed, then the machine's next.
  const then = (performed: F) => effects.andThen(performed, effects.suspend(() => go(() => machine.next())))
  const outcome = (
    performed: F,
    onSuccess: (value: any) => Action,
    onFailure: (error: E) => Action
  ) =>
    effects.matchEffect(performed, {
      onSuccess: (value) => go(() => onSuccess(value)),
      onFailure: (error) => go(() => onFailure(error))
    })
  switch (action) {
    case "Read":
      return outcome(
        port.read,
        (read: Read<S>) => machine.read(read.snapshot, read.readAt),
        (e) => machine.readFailed(e)
      )
    case "Lease":
      return outcome(port.acquireLease, (acquired: boolean) => machine.leased(acquired), (e) => machine.leaseFailed(e))
    case "Request":
      return effects.matchEffect(machine.leaseholder ? port.leaseholderRequest : port.request, {
        onSuccess: (issued: IssuedToken<S>) =>
          effects.flatMap(port.now, (now: number) => go(() => machine.requested(issued, now))),
        onFailure: (error: E) => go(() => machine.requestFailed(error))
      })
    case "Publish":
      return outcome(
        port.publish(machine.expected, entryOf(machine.issued!), machine.ttlMillis),
        (generation: number | undefined) => machine.published(generation),
        () => machine.publishFailed()
      )
    case "Release":
      return then(port.release)
    case "ReleaseInBackground":
      return then(port.background(port.release))
    case "PublishInBackground": {
      const { expected, issued } = machine
      return then(effects.flatMap(port.now, (now: number) => {
        const [publishing, first] = SharingMachine.publishing<S, E>(port.settings, issued!, expected, now)
        return port.background(run(port, publishing, first))
      }))
    }
    case "Repair":
      return then(port.repairing(machine.repairReason))
    case "StoreFailed":
      return then(port.storeFailed(machine.storeError!))
    case "Sleep":
      return effects.flatMap(
        port.random,
        (random: number) =>
          effects.andThen(effects.sleep(machine.sleepMillis(random)), effects.suspend(() => go(() => machine.woke())))
      )
    case "Adopted":
      return effects.as(port.adopted, machine.issued)
    case "Done":
      return effects.succeed(machine.issued)
    case "Fail":
      return machine.paused ? effects.andThen(port.throttled, effects.fail(machine.error)) : effects.fail(machine.error)
  }
}
