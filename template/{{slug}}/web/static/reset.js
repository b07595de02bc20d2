// The reset page: without a token, ask for a link; with the link's token (in the URL's fragment,
// which no server ever sees), set the new password. The token leaves the address bar at once.
"use strict";

import { api } from "/static/api.js";
import { tell } from "/static/view.js";
import { errorWords } from "/static/words.js";

const request = document.getElementById("reset-request");
const confirm = document.getElementById("reset-confirm");
const message = document.getElementById("reset-message");
let token = null;

// On load, and when a link is opened in a tab already on this page (only the fragment changes:
// the page is not loaded again).
function readToken() {
  const found = new URLSearchParams(window.location.hash.slice(1)).get("token");
  if (!found) {
    return;
  }
  token = found;
  window.history.replaceState(null, "", window.location.pathname);
  request.hidden = true;
  confirm.hidden = false;
  tell(message, "");
}

readToken();
window.addEventListener("hashchange", readToken);

request.addEventListener("submit", async (event) => {
  event.preventDefault();
  tell(message, "");
  try {
    await api.post("/api/auth/reset", { email: request.email.value });
    tell(message, "If an account uses this address, a link to reset its password is on its way. Check your mail.");
    request.hidden = true;
  } catch (error) {
    tell(message, errorWords(error), true);
  }
});

confirm.addEventListener("submit", async (event) => {
  event.preventDefault();
  tell(message, "");
  try {
    await api.post("/api/auth/reset/confirm", { token: token, password: confirm.password.value });
    confirm.hidden = true;
    tell(message, "Your password is set. Sign in with it.");
  } catch (error) {
    tell(message, errorWords(error), true);
  }
});

for (const button of document.querySelectorAll("#main button")) {
  button.disabled = false;
}
