// The tasks page: start a task with one of the site's processors on a ready file, and the list of tasks.
//
// The processors, their accepted types and their params come from GET /api/processors; the params
// form is built from each one's schema (params.js).
//
// A start whose answer never arrived may still have created the task. The
// page keeps that request (its key, processor, file and params) and a second click sends
// exactly the same request again, which the server answers with the task it
// already made — never a second one. Choosing another processor, file or option starts a
// new request with a new key.
"use strict";

import { ApiError, api } from "/static/api.js";
import { captchaToken, resetCaptcha } from "/static/captcha.js";
import { onRecheck, recheck, release } from "/static/connection.js";
import { element, formatTime, showMore, tell } from "/static/view.js";
import { paramsForm, paramsSummary } from "/static/params.js";
import { Poller } from "/static/poller.js";
import { ACTIVE, errorWords, statusWords } from "/static/words.js";

const LIST_EVERY_MS = 5000;
const MAX_FILE_PAGES = 10;

const form = document.getElementById("start-form");
const picker = document.getElementById("start-processor");
const processorAbout = document.getElementById("processor-about");
const select = document.getElementById("start-file");
const paramsArea = document.getElementById("start-params");
const startButton = document.getElementById("start-button");
const startMessage = document.getElementById("start-message");
const widget = document.getElementById("captcha");
const list = document.getElementById("task-list");
const listMessage = document.getElementById("list-message");
const more = document.getElementById("more-tasks");
let pending = null; // {requestKey, processor, fileId, params}: a start whose answer is not known yet
let processors = [];
let readParams = () => ({});
let readyFiles = [];
let nextCursor = null;
const extraPages = [];

// --- the start form ----------------------------------------------------------------

function chosenProcessor() {
  return processors.find((found) => found.name === picker.value) || null;
}

async function loadProcessors() {
  processors = await api.get("/api/processors");
  const chosen = picker.value;
  picker.replaceChildren(...processors.map((found) => {
    const option = element("option", found.title);
    option.value = found.name;
    return option;
  }));
  if (processors.some((found) => found.name === chosen)) {
    picker.value = chosen;
  }
  showProcessor();
}

// The chosen processor's description, its params form and the files it can take.
function showProcessor() {
  const found = chosenProcessor();
  if (!found) {
    processorAbout.textContent = "";
    paramsArea.replaceChildren();
    readParams = () => ({});
    return;
  }
  const price = found.price ? ` Costs ${found.price} credit${found.price === 1 ? "" : "s"}.` : "";
  processorAbout.textContent = `${found.name} version ${found.version}: takes ${found.accepts.join(", ")}.${price}`;
  readParams = paramsForm(paramsArea, found.paramsSchema, "start-param");
  for (const control of paramsArea.querySelectorAll("input, select, textarea")) {
    control.addEventListener("change", forgetPending);
  }
  showFiles();
}

async function loadFiles() {
  const files = [];
  let cursor = null;
  for (let page = 0; page < MAX_FILE_PAGES; page += 1) {
    const answer = await api.page("/api/files", cursor);
    files.push(...answer.items);
    cursor = answer.nextCursor;
    if (!cursor) {
      break;
    }
  }
  readyFiles = files;
  showFiles();
}

function showFiles() {
  const found = chosenProcessor();
  const files = found ? readyFiles.filter((file) => found.accepts.includes(file.contentType)) : [];
  const chosen = select.value;
  select.replaceChildren(element("option", files.length ? "Choose a file" : "No files it can take yet", ""));
  select.firstChild.value = "";
  for (const file of files) {
    const option = element("option", file.name);
    option.value = file.id;
    select.append(option);
  }
  if (files.some((file) => file.id === chosen)) {
    select.value = chosen;
  }
  document.getElementById("no-files").hidden = files.length > 0;
}

// A version 4 UUID. crypto.randomUUID exists only in secure contexts; getRandomValues everywhere.
function newRequestKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  bytes[6] = (bytes[6] & 0x0f) | 0x40;
  bytes[8] = (bytes[8] & 0x3f) | 0x80;
  const hex = [...bytes].map((byte) => byte.toString(16).padStart(2, "0")).join("");
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

function currentRequest(params) {
  const input = { processor: picker.value, fileId: select.value, params: JSON.stringify(params) };
  if (!pending || pending.processor !== input.processor || pending.fileId !== input.fileId
      || pending.params !== input.params) {
    pending = { requestKey: newRequestKey(), ...input };
  }
  return pending;
}

// A different processor, file or option is a different request: forget the unanswered one.
function forgetPending() {
  pending = null;
  tell(startMessage, "");
}
select.addEventListener("change", forgetPending);
picker.addEventListener("change", () => {
  forgetPending();
  showProcessor();
});

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  if (!select.value) {
    tell(startMessage, "Choose a file to start a task.", true);
    return;
  }
  let params;
  try {
    params = readParams();
  } catch (error) {
    tell(startMessage, error.message, true);
    return;
  }
  const submit = currentRequest(params);
  const body = {
    requestKey: submit.requestKey,
    processor: submit.processor,
    fileId: submit.fileId,
    params: JSON.parse(submit.params),
  };
  const token = captchaToken(widget);
  if (token === null) {
    tell(startMessage, "Complete the captcha check first.", true);
    return;
  }
  if (token !== undefined) {
    body.captchaToken = token;
  }
  startButton.disabled = true;
  tell(startMessage, "Starting…");
  try {
    const task = await api.post("/api/tasks", body);
    pending = null;
    window.location.assign(`/tasks/${task.id}`);
  } catch (error) {
    release(startButton);
    resetCaptcha(widget);
    if (error instanceof ApiError) {
      if (error.code === "REQUEST_CONFLICT") {
        pending = null; // that key is taken by another request: the next press makes a new one
      }
      tell(startMessage, errorWords(error), true);
    } else {
      tell(startMessage, "The server did not answer, so the task may or may not have started. "
        + "Press Start again to send the same request: it will not start a second task.", true);
      poller.now(); // if it did start, the list below shows it as soon as the server answers
    }
  }
});
release(startButton);

// --- the list ------------------------------------------------------------------

function taskItem(task) {
  const item = element("li", null, "item");
  item.dataset.taskId = task.id;
  const about = element("div", null, "about");
  const link = element("a", task.input.name, "name");
  link.href = `/tasks/${task.id}`;
  about.append(link);
  const options = paramsSummary(task.params);
  const option = options ? ` · ${options}` : "";
  const gone = task.resultGone ? " · result deleted or expired" : "";
  about.append(element("span", `${task.processor} · started ${formatTime(task.createdAt)}${option}${gone}`,
    "meta"));
  const status = element("span", statusWords(task), `status status-${task.status}`);
  item.append(about, status);
  return item;
}

function render() {
  // A task can show up on two pages while new ones push the list down: keep its newest view.
  const byId = new Map();
  for (const task of [...firstPage.items, ...extraPages.flatMap((page) => page.items)]) {
    if (!byId.has(task.id)) {
      byId.set(task.id, task);
    }
  }
  const tasks = [...byId.values()];
  list.replaceChildren(...tasks.map(taskItem));
  more.hidden = !nextCursor;
  tell(listMessage, tasks.length ? "" : "No tasks yet.");
  return tasks.some((task) => ACTIVE.has(task.status));
}

let firstPage = { items: [] };

async function loadList() {
  firstPage = await api.get("/api/tasks");
  if (!extraPages.length) {
    nextCursor = firstPage.nextCursor;
  }
  return render();
}

const poller = new Poller(loadList, LIST_EVERY_MS, document.getElementById("list-poll"));

showMore(more, listMessage, "tasks", async () => {
  const page = await api.page("/api/tasks", nextCursor);
  extraPages.push(page);
  nextCursor = page.nextCursor;
  render();
});

async function refreshFiles() {
  try {
    await loadProcessors();
    await loadFiles();
    return true;
  } catch (error) {
    tell(startMessage, `Could not load your files: ${errorWords(error)}`, true);
    return false;
  }
}

onRecheck(refreshFiles);
onRecheck(() => poller.now());
recheck();
