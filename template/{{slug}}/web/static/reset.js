// The reset page: without a token, ask for a link; with the link's token (in the URL's fragment,
// which no server ever sees), set the new password. The token leaves the address bar at once.
"use strict";
(function () {
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
    say("");
  }

  function say(text, error) {
    message.textContent = text;
    message.classList.toggle("error", Boolean(error));
  }

  async function post(path, body) {
    const response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
      credentials: "same-origin",
    });
    const payload = response.ok ? null : await response.json().catch(() => null);
    return { ok: response.ok, message: payload && payload.error && payload.error.message };
  }

  readToken();
  window.addEventListener("hashchange", readToken);

  request.addEventListener("submit", async (event) => {
    event.preventDefault();
    say("");
    try {
      const answer = await post("/api/auth/reset", { email: request.email.value });
      if (answer.ok) {
        say("If an account uses this address, a link to reset its password is on its way. Check your mail.");
        request.hidden = true;
      } else {
        say(answer.message || "Could not send the link.", true);
      }
    } catch (error) {
      say("You appear to be offline. Check your connection and try again.", true);
    }
  });

  confirm.addEventListener("submit", async (event) => {
    event.preventDefault();
    say("");
    try {
      const answer = await post("/api/auth/reset/confirm", { token: token, password: confirm.password.value });
      if (answer.ok) {
        confirm.hidden = true;
        say("Your password is set. Sign in with it.");
      } else {
        say(answer.message || "Could not set the password.", true);
      }
    } catch (error) {
      say("You appear to be offline. Check your connection and try again.", true);
    }
  });

  for (const button of document.querySelectorAll("#main button")) {
    button.disabled = false;
  }
})();
