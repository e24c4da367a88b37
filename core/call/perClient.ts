/**
 * One call function per client. A client's services (its `PersonData`, `PersonAuthentication`,
 * `MedicationService`) each ask for the call function of the services they were built over; those
 * of one client share one token cache, and so one call function: one gate, one load control, so
 * that `maxConcurrentRequests` bounds the requests of all the client's operations together.
 */

/** Call functions (`P`) by the token cache (`K`) they were built over, for the config and transport they were built with. */
export class PerClient<K extends object, P> {
  private readonly known = new WeakMap<K, { readonly config: unknown; readonly transport: unknown; readonly post: P }>()

  /** The call function of the client of `tokens`, `config` and `transport`: the one made before, else `make()`'s. */
  of(tokens: K, config: unknown, transport: unknown, make: () => P): P {
    const known = this.known.get(tokens)
    if (known !== undefined && known.config === config && known.transport === transport) return known.post
    const post = make()
    this.known.set(tokens, { config, transport, post })
    return post
  }
}
