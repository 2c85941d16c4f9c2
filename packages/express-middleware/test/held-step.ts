/**
 * A step of the server a mocked fs call waits at once the test holds it
 * (`hold`), until the test lets it go (`state.go`). `state.waiting`: a call
 * reached the step since the last hold (earlier tests' calls do not count).
 * Made inside `vi.hoisted`, as the `vi.mock` factory that uses it runs first.
 */
export function heldStep() {
  const state = { waiting: false, gate: Promise.resolve(), go: () => {} };
  return {
    state,
    hold() {
      state.waiting = false;
      state.gate = new Promise((resolve) => {
        state.go = resolve;
      });
    },
  };
}
