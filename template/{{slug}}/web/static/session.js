// The header of every signed-in page: signing out revokes the session on the server first; the
// console's link shows for operators only.
"use strict";

import { api, endSession } from "/static/api.js";
import { release } from "/static/connection.js";
import { errorWords } from "/static/words.js";

const signOut = document.getElementById("sign-out");
if (signOut) {
  signOut.addEventListener("click", async () => {
    signOut.disabled = true;
    try {
      await endSession("POST", "/api/auth/logout");
    } catch (error) {
      release(signOut);
      signOut.title = errorWords(error);
    }
  });
  release(signOut);
}

const opsLink = document.getElementById("ops-link");
if (opsLink && opsLink.hidden) {
  // Only a hint: the console answers 404 to anyone but an operator whatever the page shows.
  api.get("/api/me").then((me) => {
    opsLink.hidden = !me.operator;
  }, () => {});
}
