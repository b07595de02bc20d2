// Small pieces every page draws with: sizes and times as people read them, elements built
// without innerHTML, a message line, a "Try again" button, a "Show more" button.
"use strict";

import { errorWords } from "/static/words.js";

export function formatBytes(size) {
  if (size < 1024) {
    return `${size} B`;
  }
  if (size < 1024 * 1024) {
    return `${(size / 1024).toFixed(1)} KiB`;
  }
  return `${(size / (1024 * 1024)).toFixed(1)} MiB`;
}

// Two sizes that must read as different ("1.0 MiB" and "1.0 MiB" do not): exact bytes when rounding hides it.
export function formatBytesApart(size, other) {
  const [a, b] = [formatBytes(size), formatBytes(other)];
  return a === b && size !== other
    ? [`${size.toLocaleString("en")} bytes`, `${other.toLocaleString("en")} bytes`]
    : [a, b];
}

export function formatTime(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

export function element(tag, text, className) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) {
    node.textContent = text;
  }
  if (className) {
    node.className = className;
  }
  return node;
}

// Put `text` in a message line; errors are styled as such.
export function tell(where, text, isError = false) {
  where.textContent = text;
  where.classList.toggle("error", isError);
}

// `load` fetches and shows the next page of a list; the button waits for it, and a failure is said.
export function showMore(button, message, what, load) {
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      await load();
    } catch (error) {
      tell(message, `Could not load more ${what}: ${errorWords(error)}`, true);
    } finally {
      button.disabled = false;
    }
  });
}

export function tryAgainButton(onClick) {
  const again = element("button", "Try again", "secondary");
  again.type = "button";
  again.addEventListener("click", onClick);
  return again;
}
