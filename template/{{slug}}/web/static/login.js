// Sign in or register through the JSON API, then go where the visitor was headed (a path on this
// site, checked by the server when it rendered the page) or to the files page.
"use strict";
(function () {
  const form = document.getElementById("auth-form");
  const message = document.getElementById("auth-message");
  // Only ever this site: the URL the browser would go to must have this page's origin.
  const next = (() => {
    try {
      const target = new URL(document.getElementById("main").dataset.next || "/files", window.location.origin);
      return target.origin === window.location.origin ? target.href : "/files";
    } catch (error) {
      return "/files";
    }
  })();
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const action = event.submitter && event.submitter.value === "register" ? "register" : "login";
    const body = { email: form.email.value, password: form.password.value };
    message.textContent = "";
    message.classList.remove("error");
    try {
      const response = await fetch(`/api/auth/${action}`, {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify(body),
        credentials: "same-origin",
      });
      if (response.ok) {
        window.location.assign(next);
        return;
      }
      const payload = await response.json().catch(() => null);
      message.textContent = (payload && payload.error && payload.error.message) || "Could not sign in.";
    } catch (error) {
      message.textContent = "You appear to be offline. Check your connection and try again.";
    }
    message.classList.add("error");
  });
  // Rendered disabled: a press before this handler exists would otherwise be a plain form post.
  for (const button of form.querySelectorAll("button")) {
    button.disabled = false;
  }
})();
