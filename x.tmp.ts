import { redactor, scrub } from "./src/internal/redaction.js"
const secrets = ["Qk9CL3BlcnNvbi91aWQrKz09/x+y==", "7A1C3E5F-2B4D-4F60-8A9B-0C1D2E3F4A5B", "EW-2719-KQ", "03/14/1945"]
const texts: Record<string, string> = {
  plain: "hello world ".repeat(5462),
  escapes: "caf\\u00e9 %41%2B &amp; x ".repeat(2730),
  base64: "QUJD".repeat(16384)
}
for (const [name, text] of Object.entries(texts)) {
  for (let i = 0; i < 2; i++) scrub(text, secrets)
  let t = performance.now()
  for (let i = 0; i < 5; i++) scrub(text, secrets)
  const s = (performance.now() - t) / 5
  t = performance.now()
  for (let i = 0; i < 5; i++) redactor(secrets)(text)
  const r = (performance.now() - t) / 5
  console.log(name, text.length, "scrub ms", s.toFixed(1), "redactor ms", r.toFixed(1))
}
