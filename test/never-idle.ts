// Preloaded into an example by a test: something that never ends (a timer
// left running), so a stop can only exit by its grace period's end.
setInterval(() => {}, 60_000);
