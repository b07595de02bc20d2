// Online, offline and stale state for every page.
//
// Offline, whatever the page shows may be out of date, so every control marked
// `data-action` is disabled and a notice says why. Back online — or back to
// the tab — the page re-checks (the `onRecheck` handlers reload what it shows);
// only after that succeeds are the actions enabled again.
"use strict";

import { tryAgainButton } from "/static/view.js";

const notice = document.getElementById("connection");
const rechecks = new Set();
let stale = !navigator.onLine;
let checking = null;
let checkAgain = null;

export function onRecheck(handler) {
  rechecks.add(handler);
}

export function isStale() {
  return stale;
}

function applyToActions() {
  for (const control of document.querySelectorAll("[data-action]")) {
    if (stale && !control.disabled) {
      control.disabled = true;
      control.dataset.staleDisabled = "";
    } else if (!stale && control.dataset.staleDisabled !== undefined) {
      control.disabled = false;
      delete control.dataset.staleDisabled;
    }
  }
}

// A control the page disabled while a request ran comes back — unless the page went stale meanwhile.
// Action controls are also rendered disabled, so a click that lands before the page's module has
// attached its handler is not lost (or sent as a plain form submission); the module releases them
// once it has.
export function release(control) {
  control.disabled = false;
  applyToActions();
}

function say(text, withRetry = false) {
  notice.replaceChildren(text);
  if (withRetry) {
    notice.append(" ", tryAgainButton(() => recheck()));
  }
  notice.hidden = false;
}

function setStale(value) {
  stale = value;
  document.body.classList.toggle("stale", stale);
  applyToActions();
}

export function recheck() {
  if (!navigator.onLine) {
    return Promise.resolve(false);
  }
  if (checking) {
    // The check under way may have loaded what it shows before whatever made this one ask: check again
    // once it is done (one more, however many ask meanwhile).
    const again = () => {
      checkAgain = null;
      return recheck();
    };
    checkAgain ??= checking.then(again, again);
    return checkAgain;
  }
  if (stale) {
    say("Back online. Checking for changes…");
  }
  checking = Promise.all([...rechecks].map((handler) => handler().catch(() => false)))
    .then((results) => {
      const fresh = results.every(Boolean);
      if (checkAgain) {
        return fresh; // asked for again meanwhile: the next check says what the page is
      }
      if (fresh) {
        setStale(false);
        notice.hidden = true;
      } else if (stale) {
        say("Still could not reach the server. Actions stay paused until the page has checked for changes.", true);
      }
      return fresh;
    })
    .finally(() => {
      checking = null;
    });
  return checking;
}

function wentOffline() {
  setStale(true);
  say("You are offline. Actions are paused until you reconnect and the page has checked for changes.");
}

window.addEventListener("offline", wentOffline);
window.addEventListener("online", () => recheck());
document.addEventListener("visibilitychange", () => {
  if (document.visibilityState === "visible") {
    recheck();
  }
});
// Controls rendered while stale (a list redrawn from old data) start disabled too.
new MutationObserver(() => stale && applyToActions()).observe(document.body, { subtree: true, childList: true });
if (stale) {
  wentOffline();
}
