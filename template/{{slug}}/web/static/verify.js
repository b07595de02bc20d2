// The verify page: a verification link (#token=…) or an email-change link (#change=…) is posted as
// soon as the page opens (the token is in the URL's fragment: no server ever sees it in a request
// line or a Referer) and leaves the address bar at once. Signed in and unverified: ask for a new link.
"use strict";

import { api } from "/static/api.js";
import { tell } from "/static/view.js";
import { errorWords } from "/static/words.js";

const message = document.getElementById("verify-message");
const resend = document.getElementById("verify-resend");

async function confirm(path, token, done) {
  window.history.replaceState(null, "", window.location.pathname);
  if (resend) {
    resend.hidden = true;
  }
  tell(message, "Confirming…");
  try {
    await api.post(path, { token: token });
    tell(message, done);
  } catch (error) {
    tell(message, errorWords(error), true);
  }
}

// On load, and when a link is opened in a tab already on this page (only the fragment changes:
// the page is not loaded again).
function readLink() {
  const fragment = new URLSearchParams(window.location.hash.slice(1));
  const verify = fragment.get("token");
  const change = fragment.get("change");
  if (verify) {
    confirm("/api/auth/verify/confirm", verify, "Your email address is confirmed.");
  } else if (change) {
    confirm("/api/auth/email/confirm", change, "Your account now uses this email address.");
  }
}
readLink();
window.addEventListener("hashchange", readLink);

if (resend) {
  resend.addEventListener("submit", async (event) => {
    event.preventDefault();
    try {
      await api.post("/api/auth/verify/resend");
      tell(message, "A new link is on its way. Check your mail.");
    } catch (error) {
      tell(message, errorWords(error), true);
    }
  });
  for (const button of resend.querySelectorAll("button")) {
    button.disabled = false;
  }
}
