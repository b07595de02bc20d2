// Plain words for everything the API says in codes: task states, failure codes and error codes.
"use strict";

import { ApiError } from "/static/api.js";

export const STATUS_WORDS = {
  pending: "Waiting to start",
  queued: "Queued",
  running: "Running",
  retry_wait: "Waiting to retry",
  reconciling: "Being checked",
  succeeded: "Succeeded",
  failed: "Failed",
  canceled: "Canceled",
};

export const ACTIVE = new Set(["pending", "queued", "running", "retry_wait", "reconciling"]);

export function statusWords(task) {
  if (task.cancelRequested && ACTIVE.has(task.status)) {
    return "Cancel requested";
  }
  return STATUS_WORDS[task.status] || task.status;
}

// Why a task failed (task.errorCode).
export const FAILURE_WORDS = {
  INPUT_MISSING: "The input file was no longer there when the task ran.",
  INPUT_INVALID: "The processor could not use this input (a text that is not valid UTF-8, for one), or the input "
    + "changed after the task was started.",
  PROCESSOR_UNAVAILABLE: "This processor is no longer available on the site. Start a new task.",
  STORAGE_FULL: "There was not enough storage left for the result. Free some space, then retry.",
  RESULT_TOO_LARGE: "The result would be larger than this site allows.",
  STORAGE_UNAVAILABLE: "File storage did not answer while the task ran.",
  LEASE_EXPIRED: "The worker running the task stopped answering.",
  DELIVERY_EXHAUSTED: "The task could not be handed to a worker.",
  PROCESSOR_FAILED: "The processor stopped with an error on this input.",
  PROCESSOR_TIMEOUT: "The processor took longer than its time limit.",
  SERVICE_UNAVAILABLE: "A service the processor uses did not answer.",
};

export function failureWords(code) {
  return FAILURE_WORDS[code] || "The task did not finish.";
}

// What an API refusal means for the person in front of the page (error.code).
const ERROR_WORDS = {
  REQUEST_CONFLICT: "This request was already used for a different file or option. Start it again as a new request.",
  ACTIVE_LIMIT: "You already have as many active tasks as allowed. Wait for one to finish or cancel one.",
  NOT_RETRYABLE: "This task cannot be retried.",
  DISABLED: "This is turned off on this site.",
  NOT_CONFIGURED: "This site is not set up for this yet. Please try again later.",
  NOT_FOUND: "Not found. It may have been deleted or have expired.",
  FILE_IN_USE: "This file is the input of an active task. Cancel that task or wait for it to finish, then delete the file.",
  QUOTA_EXCEEDED: "Not enough storage left. Delete some files and try again.",
  INSUFFICIENT_CREDITS: "You do not have enough credits for this task.",
  ORIGIN_MISMATCH: "The request was refused because it did not come from this site's pages. Reload the page and try again.",
  UNAUTHENTICATED: "Please sign in again.",
  CAPTCHA_FAILED: "The captcha check did not pass. Complete it and try again.",
  RATE_LIMITED: "Too many requests. Wait a minute, then try again.",
  FILE_TOO_LARGE: "The file is larger than this site allows.",
  PAYLOAD_TOO_LARGE: "That is more data than this site accepts at once.",
  STORAGE_UNAVAILABLE: "File storage is not answering right now. Please try again.",
  UNAVAILABLE: "The service is not answering right now. Please try again.",
  EMAIL_TAKEN: "An account with this email already exists. Sign in instead.",
};

// Codes whose server message says more than the code alone (which field, which rule, why not).
const SERVER_SAYS_MORE = new Set(["VALIDATION_FAILED", "NOT_RETRYABLE", "BAD_REQUEST"]);

export function errorWords(error) {
  if (!(error instanceof ApiError)) {
    return "The server did not answer. Check your connection and try again.";
  }
  if (SERVER_SAYS_MORE.has(error.code)) {
    return error.message;
  }
  if (error.code === "INTERNAL") {
    const reference = error.requestId ? ` (reference ${error.requestId})` : "";
    return `Something went wrong on our side${reference}. Please try again later.`;
  }
  return ERROR_WORDS[error.code] || error.message;
}

// A credit ledger entry (entry.kind): what it did to the balance.
export const LEDGER_WORDS = {
  grant: "Credits added",
  hold: "Held for a task",
  capture: "Paid for a task (from the amount held)",
  refund: "Given back from a task",
};

// What the account page says once an action on the account is done, or why it is not.
export const ACCOUNT_WORDS = {
  passwordIncorrect: "The password is incorrect.",
  passwordTooShort: "The new password needs at least 8 characters.",
  passwordChanged: "Your password was changed. Every other device was signed out.",
  fillIn: "Fill in every field first.",
  emailUnavailable: "Changing the email address is not available on this site yet.",
  emailTaken: "Another account already uses this email address.",
  emailSent: (address) => `We sent a link to ${address}. Your email changes once you open it.`,
  emailVerified: "Yes",
  emailUnverified: "Not yet: open the link we sent to this address.",
  confirmDelete: "Tick the box to confirm that everything is deleted.",
  storage: (used, quota) => `${used} of ${quota} used`,
  credits: (balance) => `${balance.toLocaleString("en")} credits`,
  noEntries: "No credit entries yet.",
};
