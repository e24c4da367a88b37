/**
 * What a metrics scraper and an OpenTelemetry collector receive from the command line: a Prometheus
 * text exposition parsed into samples, and a loopback OTLP/HTTP collector stand-in that keeps every
 * JSON body posted to it (metrics and spans), with the headers it came with.
 */
import { createServer, type IncomingHttpHeaders } from "node:http"
import type { AddressInfo } from "node:net"

/** One sample of a Prometheus exposition: its metric name, labels and value. */
export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/** Parses Prometheus's text format (comments skipped). */
export const parseExposition = (text: string): Array<Sample> =>
  text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const match = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const [, key, value] of (match[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key!] = value!
    return { name: match[1]!, labels, value: Number(match[3]) }
  })

/** The value of the sample named `name` whose labels include `labels` (summed over any others). */
export const valueOf = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}): number =>
  samples.filter((sample) =>
    sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value)
  ).reduce((sum, sample) => sum + sample.value, 0)

/** GETs `url` and parses its exposition. */
export const scrape = async (url: string): Promise<{ readonly text: string; readonly samples: Array<Sample> }> => {
  const response = await fetch(url)
  if (response.status !== 200) throw new Error(`scrape of ${url}: HTTP ${response.status}`)
  const text = await response.text()
  return { text, samples: parseExposition(text) }
}

/** A body posted to the collector. */
export interface Posted {
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly text: string
  readonly json: any
}

/** An OTLP/HTTP collector stand-in on loopback: every POST answered 200 `{}`, its body kept. */
export const collector = async () => {
  const posted: Array<Posted> = []
  const server = createServer((request, response) => {
    const chunks: Array<Buffer> = []
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.on("end", () => {
      const text = Buffer.concat(chunks).toString("utf8")
      let json: unknown
      try {
        json = JSON.parse(text)
      } catch {
        json = undefined
      }
      posted.push({ path: request.url ?? "", headers: request.headers, text, json })
      response.writeHead(200, { "content-type": "application/json" }).end("{}")
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    posted,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve())
        server.closeAllConnections()
      })
  }
}

/** An OTLP attribute list as a record (string, int and double values). */
const attributesOf = (list: ReadonlyArray<any> | undefined): Record<string, unknown> =>
  Object.fromEntries((list ?? []).map((attribute: any) => {
    const value = attribute.value ?? {}
    return [attribute.key, value.stringValue ?? value.intValue ?? value.doubleValue ?? value.boolValue]
  }))

/** The data points of every metric posted (to /v1/metrics), flattened: name, attributes, value. */
export const metricPoints = (posted: ReadonlyArray<Posted>) =>
  posted.filter((each) => each.path === "/v1/metrics").flatMap((each) =>
    (each.json?.resourceMetrics ?? []).flatMap((resource: any) =>
      (resource.scopeMetrics ?? []).flatMap((scope: any) =>
        (scope.metrics ?? []).flatMap((metric: any) =>
          (metric.sum?.dataPoints ?? metric.gauge?.dataPoints ?? []).map((point: any) => ({
            name: metric.name as string,
            attributes: attributesOf(point.attributes),
            value: Number(point.asInt ?? point.asDouble ?? 0)
          }))
        )
      )
    )
  )

/** The spans posted (to /v1/traces), flattened: name, ids, kind, attributes, and their resource's attributes. */
export const spansOf = (posted: ReadonlyArray<Posted>) =>
  posted.filter((each) => each.path === "/v1/traces").flatMap((each) =>
    (each.json?.resourceSpans ?? []).flatMap((resource: any) =>
      (resource.scopeSpans ?? []).flatMap((scope: any) =>
        (scope.spans ?? []).map((span: any) => ({
          name: span.name as string,
          traceId: span.traceId as string,
          spanId: span.spanId as string,
          parentSpanId: (span.parentSpanId ?? "") as string,
          kind: span.kind as number,
          attributes: attributesOf(span.attributes),
          resource: attributesOf(resource.resource?.attributes)
        }))
      )
    )
  )
