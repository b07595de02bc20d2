// The header of every signed-in page: signing out revokes the session on the server first.
"use strict";

import { api } from "/static/api.js";
import { release } from "/static/connection.js";
import { errorWords } from "/static/words.js";

const signOut = document.getElementById("sign-out");
if (signOut) {
  signOut.addEventListener("click", async () => {
    signOut.disabled = true;
    try {
      await api.post("/api/auth/logout");
      window.location.assign("/login");
    } catch (error) {
      release(signOut);
      signOut.title = errorWords(error);
    }
  });
  release(signOut);
}
