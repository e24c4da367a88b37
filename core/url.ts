/** Splitting an absolute URL the client built (`https://host:port/path?query`) without parsing it again. */

/** The origin (`https://host:port`) and the path with its query, as undici's dispatch takes them. */
export const splitUrl = (url: string): { readonly origin: string; readonly path: string } => {
  const slash = url.indexOf("/", url.indexOf("//") + 2)
  // Stryker disable next-line EqualityOperator: equivalent, the search starts at index 1 at the least, so slash is never 0
  return slash < 0 ? { origin: url, path: "/" } : { origin: url.slice(0, slash), path: url.slice(slash) }
}

/** The path alone, without query or fragment. */
export const pathOf = (url: string): string => {
  const { path } = splitUrl(url)
  const end = path.search(/[?#]/)
  // Stryker disable next-line EqualityOperator: equivalent, a path starts with "/", so neither ? nor # is at 0
  return end < 0 ? path : path.slice(0, end)
}
