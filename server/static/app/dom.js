// Small DOM helpers: elements are built from calls, never from HTML strings, so no text
// from the API can become markup.

const SVG_NS = "http://www.w3.org/2000/svg";

/**
 * An element: `h("a", { href: "/x", class: "y" }, "text", child)`. Attributes named on* take
 * listeners, `dataset` an object, booleans set or drop the attribute; null children are
 * skipped and arrays flattened.
 */
export function h(tag, attrs = {}, ...children) {
  return fill(document.createElement(tag), attrs, children);
}

/** An SVG element, as `h` builds HTML ones. */
export function s(tag, attrs = {}, ...children) {
  return fill(document.createElementNS(SVG_NS, tag), attrs, children);
}

function fill(el, attrs, children) {
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value == null || value === false) continue;
    if (name.startsWith("on") && typeof value === "function") {
      el.addEventListener(name.slice(2), value);
    } else if (name === "dataset") {
      Object.assign(el.dataset, value);
    } else {
      el.setAttribute(name, value === true ? "" : String(value));
    }
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child == null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : String(child));
  }
}

/** Replace the children of `el`. */
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

const NUMBER = new Intl.NumberFormat("en");

/** 12,345 */
export function count(n) {
  return NUMBER.format(n);
}

/** "1 spec", "2 specs" */
export function plural(n, word, many = `${word}s`) {
  return `${count(n)} ${n === 1 ? word : many}`;
}

/** Bytes for people: 1.2 MB; an em dash when unknown. */
export function bytes(n) {
  if (n == null) return "\u2014";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let value = n;
  let unit = 0;
  while (value >= 1000 && unit < units.length - 1) {
    value /= 1000;
    unit += 1;
  }
  return `${unit === 0 ? value : value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** Tell screen readers what changed (the live region in the page's HTML). */
export function announce(text) {
  const status = document.getElementById("status");
  if (status) status.textContent = text;
}

/** A message box; `role=alert` for errors so that they are read out at once. */
export function notice(text, kind = "info") {
  return h("p", { class: `notice ${kind}`, role: kind === "error" ? "alert" : null }, text);
}

/** Calls `fn` once `ms` have passed without another call; `cancel()` drops a pending call. */
export function debounce(fn, ms) {
  let timer = 0;
  const debounced = (...args) => {
    clearTimeout(timer);
    timer = setTimeout(() => fn(...args), ms);
  };
  debounced.cancel = () => clearTimeout(timer);
  return debounced;
}

/** Resolves after the next frame has been painted (a frame callback runs before the paint;
 * a task queued from it runs after). */
export function afterPaint() {
  return new Promise((resolve) => {
    requestAnimationFrame(() => {
      const channel = new MessageChannel();
      channel.port1.onmessage = () => resolve(performance.now());
      channel.port2.postMessage(null);
    });
  });
}
