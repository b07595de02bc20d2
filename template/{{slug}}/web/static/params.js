// A processor's params form, built from the JSON Schema of its params Struct (GET /api/processors).
//
// Booleans become checkboxes, enums menus, numbers number fields and short strings text fields;
// anything richer (lists, nested objects, long or unconstrained shapes) is one JSON field. The
// server validates what is sent against the same Struct, so the form only has to be helpful.
"use strict";

import { element } from "/static/view.js";

const SHORT_STRING = 200;

function label(name) {
  // trimTrailingWhitespace → "Trim trailing whitespace"
  const words = name.replace(/([a-z0-9])([A-Z])/g, "$1 $2").toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

function fieldKind(schema) {
  if (schema.type === "boolean") {
    return "boolean";
  }
  if (Array.isArray(schema.enum) && schema.enum.every((value) => typeof value === "string")) {
    return "enum";
  }
  if (schema.type === "integer" || schema.type === "number") {
    return "number";
  }
  if (schema.type === "string" && schema.maxLength !== undefined && schema.maxLength <= SHORT_STRING
      && !schema.format) {
    return "string";
  }
  return "json";
}

// Renders the form into `where`; returns a function giving the params object (or throwing an
// Error whose message is for the person filling the form in).
export function paramsForm(where, schema, idPrefix) {
  const properties = (schema && schema.properties) || {};
  const required = new Set((schema && schema.required) || []);
  const readers = [];
  where.replaceChildren();
  for (const [name, property] of Object.entries(properties)) {
    const id = `${idPrefix}-${name}`;
    const kind = fieldKind(property);
    const title = property.title || label(name);
    if (kind === "boolean") {
      const box = element("input");
      box.type = "checkbox";
      box.id = id;
      box.name = name;
      box.checked = property.default === true;
      const wrap = element("label", null, "check");
      wrap.append(box, ` ${title}`);
      where.append(wrap);
      readers.push(() => [name, box.checked]);
      continue;
    }
    const caption = element("label", title);
    caption.htmlFor = id;
    let input;
    if (kind === "enum") {
      input = element("select");
      for (const value of property.enum) {
        const option = element("option", value);
        option.value = value;
        input.append(option);
      }
      if (property.default !== undefined) {
        input.value = property.default;
      }
    } else if (kind === "json") {
      input = element("textarea");
      input.rows = 3;
      input.spellcheck = false;
      input.value = property.default !== undefined ? JSON.stringify(property.default) : "";
      caption.textContent = `${title} (JSON)`;
    } else {
      input = element("input");
      input.type = kind === "number" ? "number" : "text";
      if (kind === "number") {
        input.step = property.type === "integer" ? "1" : "any";
        if (property.minimum !== undefined) {
          input.min = String(property.minimum);
        }
        if (property.maximum !== undefined) {
          input.max = String(property.maximum);
        }
        input.inputMode = property.type === "integer" ? "numeric" : "decimal";
      } else {
        input.maxLength = property.maxLength;
      }
      if (property.default !== undefined && property.default !== null) {
        input.value = String(property.default);
      }
    }
    input.id = id;
    input.name = name;
    where.append(caption, input);
    readers.push(() => {
      const raw = input.value.trim();
      if (raw === "" && !required.has(name)) {
        return null; // left out: the server uses the default
      }
      if (kind === "number") {
        const number = Number(raw);
        if (raw === "" || !Number.isFinite(number)) {
          throw new Error(`${title} must be a number.`);
        }
        return [name, number];
      }
      if (kind === "json") {
        try {
          return [name, JSON.parse(raw)];
        } catch {
          throw new Error(`${title} is not valid JSON.`);
        }
      }
      return [name, input.value];
    });
  }
  return () => Object.fromEntries(readers.map((read) => read()).filter((entry) => entry !== null));
}

// What a task's params say, in a few words: "unit: lines · trim trailing whitespace".
export function paramsSummary(params) {
  return Object.entries(params || {})
    .filter(([, value]) => value !== false && value !== null)
    .map(([name, value]) => (value === true ? label(name).toLowerCase() : `${label(name).toLowerCase()}: `
      + (typeof value === "object" ? JSON.stringify(value) : String(value))))
    .join(" · ");
}
