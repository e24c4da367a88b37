/** What a caller fails fast with while the token endpoint's pause runs (core/token/tokenCache decides when). */
import { RateLimited, ServerError } from "../../ClinicalError.js"

/**
 * The error to fail fast with while a pause runs: the endpoint's (where it was sent, its status),
 * counting down to the pause's end.
 */
export const throttledError = (
  error: RateLimited | ServerError,
  retryAfterMillis: number
): RateLimited | ServerError => {
  const fields = {
    operation: error.operation,
    ...(error.method === undefined ? {} : { method: error.method }),
    ...(error.url === undefined ? {} : { url: error.url }),
    status: error.status,
    retryAfterMillis
  }
  return error._tag === "RateLimited" ? new RateLimited(fields) : new ServerError(fields)
}
