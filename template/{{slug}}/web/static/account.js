// The account page: what the account holds (storage, credits and their ledger) and the actions on it
// (password, email, signing out everywhere, deletion). Every figure comes from the API.
"use strict";

import { ApiError, api, endSession, request } from "/static/api.js";
import { onRecheck, release } from "/static/connection.js";
import { ACCOUNT_WORDS, LEDGER_WORDS, errorWords } from "/static/words.js";
import { element, formatBytes, formatTime, showMore, tell, tryAgainButton } from "/static/view.js";

const byId = (id) => document.getElementById(id);

// What the page itself refuses before asking the server (an empty field, the box not ticked).
class Refusal extends Error {}
const accountMessage = byId("account-message");

async function loadMe() {
  const me = await api.get("/api/me");
  byId("account-email").textContent = me.email;
  // Sites with email verification say whether this address is verified; others leave the row out.
  if (typeof me.emailVerified === "boolean") {
    byId("account-verified").textContent = me.emailVerified ? ACCOUNT_WORDS.emailVerified : ACCOUNT_WORDS.emailUnverified;
    byId("verified-row").hidden = false;
  }
}

async function loadUsage() {
  const text = byId("storage-text");
  if (!text) {
    return;
  }
  const usage = await api.get("/api/files/usage");
  text.textContent = ACCOUNT_WORDS.storage(formatBytes(usage.usedBytes), formatBytes(usage.quotaBytes));
  const meter = byId("storage-meter");
  meter.max = usage.quotaBytes;
  meter.value = Math.min(usage.usedBytes, usage.quotaBytes);
  meter.hidden = false;
}

// The ledger: the first page on every load, further pages with "Show more".
const ledger = byId("ledger-list");
const ledgerMessage = byId("ledger-message");
const moreEntries = byId("more-entries");
let entriesCursor = null;

function amountWords(entry) {
  const amount = entry.amount.toLocaleString("en");
  if (entry.kind === "hold") {
    return `−${amount}`;
  }
  return entry.kind === "capture" ? amount : `+${amount}`;
}

function entryItem(entry) {
  const item = element("li", null, "item");
  item.dataset.entryId = String(entry.id);
  const about = element("div", null, "about");
  about.append(element("strong", LEDGER_WORDS[entry.kind] || entry.kind));
  const meta = [formatTime(entry.createdAt)];
  if (entry.reason) {
    meta.push(entry.reason);
  }
  about.append(element("span", meta.join(" · "), "meta"));
  item.append(about);
  const side = element("div", null, "actions");
  side.append(element("strong", amountWords(entry)));
  if (entry.taskId) {
    const link = element("a", "Task");
    link.href = `/tasks/${entry.taskId}`;
    side.append(" ", link);
  }
  item.append(side);
  return item;
}

async function loadEntries(more) {
  const page = await api.page("/api/credits/entries", more ? entriesCursor : null);
  if (!more) {
    ledger.replaceChildren();
  }
  ledger.append(...page.items.map(entryItem));
  entriesCursor = page.nextCursor;
  moreEntries.hidden = !entriesCursor;
  tell(ledgerMessage, ledger.children.length ? "" : ACCOUNT_WORDS.noEntries);
}

async function loadCredits() {
  const balance = byId("balance");
  if (!balance) {
    return;
  }
  const credits = await api.get("/api/credits");
  balance.textContent = ACCOUNT_WORDS.credits(credits.balance);
  try {
    await loadEntries(false);
  } catch (error) {
    tell(ledgerMessage, errorWords(error), true);
    throw error;
  }
}

async function load() {
  try {
    await Promise.all([loadMe(), loadUsage(), loadCredits()]);
    tell(accountMessage, "");
    return true;
  } catch (error) {
    tell(accountMessage, `Could not load your account: ${errorWords(error)}`, true);
    accountMessage.append(" ", tryAgainButton(() => load()));
    return false;
  }
}

// A 401 from a route that checks a password is a wrong password while the session is still live;
// asking /api/me tells the two apart (a dead session goes to the sign-in page from there).
async function refusalWords(error) {
  if (error instanceof Refusal) {
    return error.message;
  }
  if (error instanceof ApiError && error.status === 401 && error.code === "UNAUTHENTICATED") {
    await api.get("/api/me").catch(() => null);
    return ACCOUNT_WORDS.passwordIncorrect;
  }
  return errorWords(error);
}

// `act` runs the form's request; the button waits for it and the outcome is said under the form.
function handle(form, button, message, act) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    button.disabled = true;
    tell(message, "");
    try {
      tell(message, await act());
    } catch (error) {
      tell(message, await refusalWords(error), true);
    } finally {
      release(button);
    }
  });
  release(button);
}

const passwordForm = byId("password-form");
handle(passwordForm, byId("password-button"), byId("password-message"), async () => {
  const current = passwordForm.elements.current.value;
  const next = passwordForm.elements.new.value;
  if (!current || !next) {
    throw new Refusal(ACCOUNT_WORDS.fillIn);
  }
  if (next.length < 8) {
    throw new Refusal(ACCOUNT_WORDS.passwordTooShort);
  }
  await request("POST", "/api/me/password", { json: { currentPassword: current, newPassword: next },
    checksPassword: true });
  passwordForm.reset();
  return ACCOUNT_WORDS.passwordChanged;
});

const emailForm = byId("email-form");
handle(emailForm, byId("email-button"), byId("email-message"), async () => {
  const address = emailForm.elements.email.value.trim();
  const password = emailForm.elements.password.value;
  if (!address || !password) {
    throw new Refusal(ACCOUNT_WORDS.fillIn);
  }
  try {
    await request("POST", "/api/me/email", { json: { newEmail: address, password }, checksPassword: true });
  } catch (error) {
    // A site without email change has no such route (404, or 405 where the path exists for another method).
    if (error instanceof ApiError && (error.status === 404 || error.status === 405)) {
      throw new Refusal(ACCOUNT_WORDS.emailUnavailable);
    }
    if (error instanceof ApiError && error.code === "EMAIL_TAKEN") {
      throw new Refusal(ACCOUNT_WORDS.emailTaken);
    }
    throw error;
  }
  emailForm.reset();
  return ACCOUNT_WORDS.emailSent(address);
});

const endSessions = byId("end-sessions");
endSessions.addEventListener("click", async () => {
  endSessions.disabled = true;
  try {
    await endSession("POST", "/api/me/sessions/end");
  } catch (error) {
    tell(byId("sessions-message"), errorWords(error), true);
    release(endSessions);
  }
});
release(endSessions);

const deleteForm = byId("delete-form");
handle(deleteForm, byId("delete-button"), byId("delete-message"), async () => {
  const password = deleteForm.elements.password.value;
  if (!password) {
    throw new Refusal(ACCOUNT_WORDS.fillIn);
  }
  if (!deleteForm.elements.sure.checked) {
    throw new Refusal(ACCOUNT_WORDS.confirmDelete);
  }
  await endSession("DELETE", "/api/me", { json: { password }, checksPassword: true });
  return "";
});

if (moreEntries) {
  showMore(moreEntries, ledgerMessage, "credit entries", () => loadEntries(true));
}
onRecheck(load);
load();
