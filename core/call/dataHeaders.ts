/** The headers of every data request (`S`: the line's secret, its `Redacted`). */

/** JSON, the bearer token and the ApplicationId, both secret. */
export const dataHeaders = <S>(applicationId: S, authorization: S): Readonly<Record<string, string | S>> => ({
  "Content-Type": "application/json",
  // No compression: nothing to inflate, so nothing to inflate without bound.
  "Accept-Encoding": "identity",
  Authorization: authorization,
  ApplicationId: applicationId
})

/** A client's data headers, made again only when the token changes (not on every call). */
export class HeadersByToken<S> {
  private token: object | undefined = undefined
  private headers: Readonly<Record<string, string | S>> = {}

  constructor(private readonly applicationId: S) {}

  of(token: { readonly authorization: S }): Readonly<Record<string, string | S>> {
    if (token !== this.token) {
      this.headers = dataHeaders(this.applicationId, token.authorization)
      this.token = token
    }
    return this.headers
  }
}
