// A WebSocket that never opens: it errors and closes on the next turn, as a refused connection
// does. Runs in the page (`page.evaluate` or `context.addInitScript`), so it is self-contained.
// Used by the console spec that watches the banner through reconnects and by bench/console-tabs.mjs
// (its "feed refused" condition).
export function refuseWebSockets() {
  globalThis.WebSocket = class {
    readyState = 0;
    onopen = null;
    onmessage = null;
    onerror = null;
    onclose = null;
    constructor() {
      setTimeout(() => {
        this.readyState = 3;
        this.onerror?.({});
        this.onclose?.({ code: 1006, reason: '' });
      }, 0);
    }
    send() {}
    close() {}
  };
}
