// The Turnstile widget, when the site turns captcha on (the page then loads Cloudflare's script).
// A token is good for one check: after every answer the widget is reset for the next one.
"use strict";

export function captchaToken(container) {
  if (!container) {
    return undefined;
  }
  const field = container.querySelector("[name='cf-turnstile-response']");
  return field && field.value ? field.value : null;
}

export function resetCaptcha(container) {
  if (container && window.turnstile) {
    window.turnstile.reset(container);
  }
}
