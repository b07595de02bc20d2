// The verify page: a verification link (#token=…) or an email-change link (#change=…) is posted as
// soon as the page opens (the token is in the URL's fragment: no server ever sees it in a request
// line or a Referer) and leaves the address bar at once. Signed in and unverified: ask for a new link.
"use strict";
(function () {
  const message = document.getElementById("verify-message");
  const resend = document.getElementById("verify-resend");

  function say(text, error) {
    message.textContent = text;
    message.classList.toggle("error", Boolean(error));
  }

  async function post(path, body) {
    const response = await fetch(path, {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: "same-origin",
    });
    const payload = response.ok ? null : await response.json().catch(() => null);
    return { ok: response.ok, message: payload && payload.error && payload.error.message };
  }

  async function confirm(path, token, done) {
    window.history.replaceState(null, "", window.location.pathname);
    if (resend) {
      resend.hidden = true;
    }
    say("Confirming…");
    try {
      const answer = await post(path, { token: token });
      say(answer.ok ? done : answer.message || "Could not confirm.", !answer.ok);
    } catch (error) {
      say("You appear to be offline. Reload the link once you are back online.", true);
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
        const answer = await post("/api/auth/verify/resend");
        say(answer.ok ? "A new link is on its way. Check your mail." : answer.message || "Could not send it.",
          !answer.ok);
      } catch (error) {
        say("You appear to be offline. Check your connection and try again.", true);
      }
    });
    for (const button of resend.querySelectorAll("button")) {
      button.disabled = false;
    }
  }
})();
