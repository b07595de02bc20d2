// The operator console: confirmed retry and cancel of a task, and the audit run on demand. Everything
// else on these pages is rendered by the server; after an action the page is loaded again from it.
"use strict";

import { ApiError, api } from "/static/api.js";
import { release } from "/static/connection.js";
import { element, tell } from "/static/view.js";
import { errorWords } from "/static/words.js";

const $ = (id) => document.getElementById(id);
const taskId = document.getElementById("main").dataset.taskId;

for (const button of document.querySelectorAll("[data-ops-action]")) {
  button.addEventListener("click", async () => {
    if (!window.confirm(button.dataset.confirm)) {
      return;
    }
    const message = $("action-message");
    button.disabled = true;
    tell(message, "");
    try {
      await api.post(`/api/ops/tasks/${taskId}/${button.dataset.opsAction}`);
      window.location.reload();
    } catch (error) {
      const words = error instanceof ApiError ? errorWords(error) : "The server did not answer. Reload the page to see the task's state before trying again.";
      tell(message, words, true);
      release(button);
    }
  });
  release(button);
}

const audit = $("run-audit");
if (audit) {
  audit.addEventListener("click", async () => {
    const message = $("audit-message");
    const list = $("audit-findings");
    audit.disabled = true;
    tell(message, "Running the audit…");
    list.replaceChildren();
    try {
      const report = await api.post("/api/ops/audit");
      const storage = report.storage_checked ? "" : " (storage not configured: objects not checked)";
      tell(message, report.clean ? `Clean: no broken invariant${storage}.` : `${report.findings.length} finding(s)${storage}:`, !report.clean);
      for (const finding of report.findings) {
        const item = element("li", null, "item");
        item.append(element("strong", finding.rule), element("span", `${finding.subject}: ${finding.detail}`, "meta"));
        list.append(item);
      }
    } catch (error) {
      tell(message, `The audit did not run: ${errorWords(error)}`, true);
    } finally {
      release(audit);
    }
  });
  release(audit);
}
