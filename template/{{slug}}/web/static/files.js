// The files page: upload, list (20 a page), preview, download, delete.
"use strict";

import { ApiError, api, request } from "/static/api.js";
import { onRecheck, recheck, release } from "/static/connection.js";
import { element, formatBytes, formatBytesApart, formatTime, showMore, tell } from "/static/view.js";
import { errorWords } from "/static/words.js";

const main = document.getElementById("main");
const maxFileBytes = Number(main.dataset.maxFileBytes);
const form = document.getElementById("upload-form");
const uploadButton = document.getElementById("upload-button");
const chooser = document.getElementById("upload-file");
const uploadMessage = document.getElementById("upload-message");
const list = document.getElementById("file-list");
const listMessage = document.getElementById("list-message");
const more = document.getElementById("more-files");
const dialog = document.getElementById("preview");
let nextCursor = null;

function fileItem(file) {
  const item = element("li", null, "item");
  item.dataset.fileId = file.id;
  const about = element("div", null, "about");
  about.append(element("strong", file.name, "name"));
  about.append(element("span", `${formatBytes(file.size)} · ${file.contentType}`, "meta"));
  about.append(element("span", `Uploaded ${formatTime(file.createdAt)} · available until ${formatTime(file.expiresAt)}`, "meta"));
  const actions = element("div", null, "row actions");
  const preview = element("button", "Preview", "secondary");
  preview.type = "button";
  preview.addEventListener("click", () => showPreview(file, preview));
  const download = element("a", "Download", "button secondary");
  download.href = `/api/files/${file.id}/content`;
  download.setAttribute("download", file.name);
  const remove = element("button", "Delete", "danger");
  remove.type = "button";
  remove.dataset.action = "";
  remove.addEventListener("click", () => removeFile(file, item, remove));
  actions.append(preview, download, remove);
  item.append(about, actions);
  return item;
}

async function loadFiles(reset) {
  const page = await api.page("/api/files", reset ? null : nextCursor);
  if (reset) {
    list.replaceChildren();
  }
  list.append(...page.items.map(fileItem));
  nextCursor = page.nextCursor;
  more.hidden = !nextCursor;
  tell(listMessage, list.children.length ? "" : "No files yet. Upload one above.");
  return true;
}

async function reload() {
  try {
    return await loadFiles(true);
  } catch (error) {
    tell(listMessage, `Could not load your files: ${errorWords(error)}`, true);
    return false;
  }
}

form.addEventListener("submit", async (event) => {
  event.preventDefault();
  const file = chooser.files[0];
  if (!file) {
    tell(uploadMessage, "Choose a file first.", true);
    return;
  }
  if (file.size === 0) {
    tell(uploadMessage, "This file is empty; there is nothing to store.", true);
    return;
  }
  if (file.size > maxFileBytes) {
    const [size, largest] = formatBytesApart(file.size, maxFileBytes);
    tell(uploadMessage, `This file is ${size}; the largest this site takes is ${largest}.`, true);
    return;
  }
  uploadButton.disabled = true;
  tell(uploadMessage, `Uploading ${file.name}…`);
  try {
    const stored = await request("POST", `/api/files?name=${encodeURIComponent(file.name)}`, {
      body: file,
      headers: { "Content-Type": file.type || "application/octet-stream" },
    });
    tell(uploadMessage, `Stored ${stored.name} (${formatBytes(stored.size)}).`);
    form.reset();
    await reload();
  } catch (error) {
    tell(uploadMessage, error instanceof ApiError
      ? errorWords(error)
      : "The server did not answer, so the upload may not have been stored. Check the list below before uploading again.", true);
    if (!(error instanceof ApiError)) {
      await reload();
    }
  } finally {
    release(uploadButton);
  }
});
release(uploadButton);

async function showPreview(file, button) {
  button.disabled = true;
  try {
    const preview = await api.get(`/api/files/${file.id}/preview`);
    document.getElementById("preview-title").textContent = file.name;
    document.getElementById("preview-truncated").hidden = !preview.truncated;
    document.getElementById("preview-encoding").hidden = !preview.encodingError;
    document.getElementById("preview-text").textContent = preview.text;
    dialog.showModal();
  } catch (error) {
    tell(listMessage, `Could not preview ${file.name}: ${errorWords(error)}`, true);
  } finally {
    button.disabled = false;
  }
}

document.getElementById("preview-close").addEventListener("click", () => dialog.close());

async function removeFile(file, item, button) {
  if (!window.confirm(`Delete ${file.name}? This cannot be undone.`)) {
    return;
  }
  button.disabled = true;
  try {
    const answer = await api.delete(`/api/files/${file.id}`);
    item.remove();
    tell(listMessage, answer && answer.status === "deleting"
      ? `${file.name} is being deleted; storage did not answer, so it will be finished shortly.`
      : `Deleted ${file.name}.`);
  } catch (error) {
    release(button);
    tell(listMessage, `Could not delete ${file.name}: ${errorWords(error)}`, true);
  }
}

showMore(more, listMessage, "files", () => loadFiles(false));

onRecheck(reload);
recheck();
