// The session's message log: what the page sent (↑) and what the server answered (↓), errors with
// their codes, newest at the bottom, times relative to the session start.
import { h } from "./dom.js";

export function createLog(root) {
  const list = h("ol", { class: "log", "aria-live": "polite" });
  const empty = h("p", { class: "log-empty" }, "Messages of the session appear here.");
  root.append(list, empty);
  let started = performance.now();

  return {
    reset() {
      list.replaceChildren();
      empty.hidden = false;
      started = performance.now();
    },
    /** direction: "out" | "in"; kind: a short type label; level: "info" | "ok" | "warn" | "error". */
    add({ direction = "in", kind, text = "", level = "info", code, eventId }) {
      empty.hidden = true;
      const seconds = ((performance.now() - started) / 1000).toFixed(2);
      const item = h(
        "li",
        { class: `log-item log-${level}`, "data-kind": kind, "data-code": code, "data-event-id": eventId },
        h("span", { class: "log-time" }, `${seconds}s`),
        h("span", { class: `log-dir log-${direction}` }, direction === "out" ? "↑" : "↓"),
        h("span", { class: "log-kind" }, code ? `${kind} · ${code}` : kind),
        h("span", { class: "log-text" }, text),
      );
      const atBottom = list.scrollTop + list.clientHeight >= list.scrollHeight - 8;
      list.append(item);
      if (atBottom) list.scrollTop = list.scrollHeight;
    },
  };
}
