// Small pieces every page draws with: sizes and times as people read them, elements built
// without innerHTML, a message line, a "Try again" button.
"use strict";

export function formatBytes(size) {
  if (size < 1024) {
    return `${size} B`;
  }
  if (size < 1024 * 1024) {
    return `${(size / 1024).toFixed(1)} KiB`;
  }
  return `${(size / (1024 * 1024)).toFixed(1)} MiB`;
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

export function tryAgainButton(onClick) {
  const again = element("button", "Try again", "secondary");
  again.type = "button";
  again.addEventListener("click", onClick);
  return again;
}
