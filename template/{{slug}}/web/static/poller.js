// Polling a view while it shows something that can still change.
//
// `load()` reloads the view and answers whether polling should go on (an
// active task is on screen). A failed load pauses polling and says so, with a
// "Try again" button; nothing is fetched while the browser is offline or the
// tab is hidden — the connection module's re-check resumes it.
"use strict";

import { tryAgainButton } from "/static/view.js";
import { errorWords } from "/static/words.js";

export class Poller {
  constructor(load, everyMs, statusElement) {
    this.load = load;
    this.everyMs = everyMs;
    this.status = statusElement;
    this.timer = null;
    this.running = null;
    this.again = null;
  }

  // Load now; resolves true when the view is fresh.
  now() {
    if (this.running) {
      // The load under way may have been answered before whatever made the caller ask: load once
      // more after it (one more, however many ask meanwhile).
      const again = () => {
        this.again = null;
        return this.now();
      };
      this.again ??= this.running.then(again, again);
      return this.again;
    }
    clearTimeout(this.timer);
    this.running = this.load()
      .then((goOn) => {
        this.status.replaceChildren();
        if (goOn) {
          this.timer = setTimeout(() => this.tick(), this.everyMs);
        }
        return true;
      })
      .catch((error) => {
        this.pause(error);
        return false;
      })
      .finally(() => {
        this.running = null;
      });
    return this.running;
  }

  tick() {
    if (navigator.onLine && document.visibilityState === "visible") {
      this.now();
    }
  }

  pause(error) {
    this.status.replaceChildren(`Updates are paused: ${errorWords(error)} `, tryAgainButton(() => this.now()));
  }
}
