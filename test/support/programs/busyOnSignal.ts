// A program whose event loop is busy for 300 ms when its SIGTERM comes (a batch of results being
// encoded, a garbage collection): its own handler must still be the one that ends it.
const alive = setInterval(() => {}, 1000)
process.once("SIGTERM", () => {
  console.log("stopped by its own handler")
  clearInterval(alive)
})
setTimeout(() => {
  console.log("busy")
  const until = Date.now() + 300
  while (Date.now() < until) { /* busy */ }
}, 100)
