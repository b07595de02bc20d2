// One task: its state from the server (polled every 3 s while active), cancel, retry, and the result.
"use strict";

import { ApiError, api } from "/static/api.js";
import { captchaToken, resetCaptcha } from "/static/captcha.js";
import { onRecheck, recheck, release } from "/static/connection.js";
import { formatBytes, formatTime, tell } from "/static/view.js";
import { paramsSummary } from "/static/params.js";
import { Poller } from "/static/poller.js";
import { ACTIVE, errorWords, failureWords, statusWords } from "/static/words.js";

const DETAIL_EVERY_MS = 3000;

const taskId = document.getElementById("main").dataset.taskId;
const $ = (id) => document.getElementById(id);
const cancelButton = $("cancel");
const retryButton = $("retry");
const widget = $("captcha");
const actionMessage = $("action-message");
let shown = null;
let previewFor = null;

function say(text, isError = false) {
  tell(actionMessage, text, isError);
}

function show(task) {
  shown = task;
  const status = $("status");
  status.textContent = statusWords(task);
  status.className = `status status-${task.status}`;
  $("input").textContent = `${task.input.name} (${formatBytes(task.input.size)})`;
  $("processor").textContent = `${task.processor} version ${task.processorVersion}`;
  $("option").textContent = paramsSummary(task.params) || "none";
  $("attempts").textContent = `${task.attempts.used} of ${task.attempts.max} used`;
  $("created").textContent = formatTime(task.createdAt);
  $("updated").textContent = formatTime(task.updatedAt);
  $("finished-row").hidden = !task.finishedAt;
  $("finished").textContent = formatTime(task.finishedAt);
  $("price-row").hidden = !task.price;
  $("price").textContent = `${task.price} credits (${task.chargeStatus})`;

  const active = ACTIVE.has(task.status);
  $("cancel-requested").hidden = !(task.cancelRequested && active);
  cancelButton.hidden = !active || task.cancelRequested;
  retryButton.hidden = !task.retryable;
  $("retry-area").hidden = !task.retryable;
  $("retry-budget").textContent = `This would be attempt ${task.attempts.used + 1} of ${task.attempts.max}.`;

  const failure = $("failure");
  failure.hidden = task.status !== "failed";
  failure.textContent = task.status === "failed" ? failureWords(task.errorCode) : "";
  $("dead-letter").hidden = !task.deadLetteredAt;
  $("dead-letter").textContent = task.deadLetteredAt
    ? `Delivery to a worker gave up at ${formatTime(task.deadLetteredAt)}.`
    : "";

  // A result the owner deleted (or that expired) comes as null with resultGone: say so, offer nothing.
  $("result-gone").hidden = !(task.status === "succeeded" && task.resultGone);
  showResult(task.status === "succeeded" ? task.result : null);
  return active;
}

function isText(contentType) {
  return contentType.startsWith("text/") || contentType === "application/json";
}

function showResult(result) {
  $("result").hidden = !result;
  if (!result) {
    return;
  }
  $("result-name").textContent = result.name;
  $("result-type").textContent = result.contentType;
  $("result-size").textContent = formatBytes(result.size);
  // Only text is previewed: anything else is downloaded.
  $("result-preview").hidden = !isText(result.contentType);
  $("result-digest").textContent = result.sha256;
  const download = $("result-download");
  download.href = `/api/files/${result.fileId}/content`;
  download.setAttribute("download", result.name);
  if (previewFor !== result.fileId) {
    $("result-preview-area").hidden = true;
  }
}

async function load() {
  return show(await api.get(`/api/tasks/${taskId}`));
}

const poller = new Poller(load, DETAIL_EVERY_MS, $("poll-status"));

async function act(button, path, body) {
  button.disabled = true;
  say("");
  try {
    show(await api.post(path, body));
    poller.now();
    return true;
  } catch (error) {
    say(error instanceof ApiError ? errorWords(error) : "The server did not answer. Check the task's state below before trying again.", true);
    poller.now();
    return false;
  } finally {
    release(button);
  }
}

cancelButton.addEventListener("click", () => act(cancelButton, `/api/tasks/${taskId}/cancel`));

retryButton.addEventListener("click", async () => {
  const body = {};
  const token = captchaToken(widget);
  if (token === null) {
    say("Complete the captcha check first.", true);
    return;
  }
  if (token !== undefined) {
    body.captchaToken = token;
  }
  await act(retryButton, `/api/tasks/${taskId}/retry`, body);
  resetCaptcha(widget);
});

$("result-preview").addEventListener("click", async () => {
  const result = shown && shown.result;
  if (!result) {
    return;
  }
  try {
    const preview = await api.get(`/api/files/${result.fileId}/preview`);
    previewFor = result.fileId;
    $("result-text").textContent = preview.text;
    $("result-truncated").hidden = !preview.truncated;
    $("result-empty").hidden = result.size > 0;
    $("result-preview-area").hidden = false;
  } catch (error) {
    say(`Could not preview the result: ${errorWords(error)}`, true);
  }
});

onRecheck(() => poller.now());
recheck();
