// The library of REST jobs: GET /v1/videos page by page (newest first, "Load more" follows last_id),
// one card per job that follows its progress while it runs, and DELETE behind a two-click confirm.
import * as api from "./api.js";
import { h, icon, timeAgo, toast } from "./dom.js";

const PAGE_SIZE = 9;
const POLL_MS = 250;
const active = (job) => job.status === "queued" || job.status === "in_progress";
const contentPath = (id) => `/v1/videos/${encodeURIComponent(id)}/content`;

/** options: {onSelect(job), onUpdate(job), onDelete(id)} */
export function createJobList(root, options) {
  const grid = h("div", { class: "job-grid" });
  const empty = h("p", { class: "muted jobs-empty", hidden: true }, "No clips yet. Generated videos are listed here until deleted.");
  const more = h("button", { type: "button", class: "ghost load-more", hidden: true, onclick: () => loadPage() }, "Load more");
  const count = h("span", { class: "count" });
  root.append(h("header", { class: "panel-head" }, h("h2", {}, "Library"), count), grid, empty, more);

  const cards = new Map(); // id → {job, el, parts}
  let lastId = null;

  function renderEmpty() {
    empty.hidden = cards.size > 0;
    count.textContent = cards.size ? String(cards.size) + (more.hidden ? "" : "+") : "";
  }

  async function loadPage() {
    more.disabled = true;
    try {
      const query = new URLSearchParams({ limit: String(PAGE_SIZE), order: "desc" });
      if (lastId) query.set("after", lastId);
      const page = await api.get(`/v1/videos?${query}`);
      for (const job of page.data) if (!cards.has(job.id)) grid.append(card(job));
      lastId = page.last_id ?? lastId;
      more.hidden = !page.has_more;
    } catch (err) {
      toast(`Could not list videos: ${err.message}`, "error");
    } finally {
      more.disabled = false;
      renderEmpty();
    }
  }

  function card(job) {
    const thumb = h("button", { type: "button", class: "thumb", "aria-label": `Play: ${job.prompt}`, onclick: () => options.onSelect(cards.get(job.id).job) });
    const bar = h("i", { class: "thumb-progress" });
    const badge = h("span", { class: "badge" });
    thumb.append(bar, badge);
    const del = h("button", { type: "button", class: "icon-button delete", title: "Delete", "aria-label": "Delete" }, icon("trash"));
    del.addEventListener("click", () => confirmDelete(job.id, del));
    const meta = h("div", { class: "job-meta" });
    const el = h(
      "article",
      { class: "job", "data-job-id": job.id },
      thumb,
      h("div", { class: "job-body" }, h("p", { class: "job-prompt", title: job.prompt }, job.prompt), meta),
      del,
    );
    const entry = { job, el, parts: { thumb, bar, badge, meta }, video: null };
    cards.set(job.id, entry);
    render(entry);
    return el;
  }

  function render(entry) {
    const { job, el, parts } = entry;
    el.dataset.status = job.status;
    el.dataset.progress = String(job.progress);
    parts.bar.style.width = `${job.progress}%`;
    parts.badge.textContent = job.status === "completed" ? job.seconds + " s" : job.status === "failed" ? "failed" : `${job.progress}%`;
    parts.badge.dataset.status = job.status;
    parts.meta.textContent = [job.size.replace("x", "×"), timeAgo(job.created_at), job.inference_time_s != null ? `${job.inference_time_s.toFixed(1)} s to make` : null]
      .filter(Boolean)
      .join(" · ");
    if (job.status === "failed" && !parts.failure) {
      parts.failure = h("span", { class: "thumb-error" }, job.error?.message ?? "generation failed");
      parts.thumb.append(parts.failure);
    }
    if (job.status === "completed" && !entry.video) attachThumbnail(entry);
  }

  async function attachThumbnail(entry) {
    const video = h("video", { muted: true, playsInline: true, preload: "auto", loop: true, disablePictureInPicture: true });
    entry.video = video;
    entry.parts.thumb.prepend(video);
    entry.parts.thumb.addEventListener("mouseenter", () => video.play().catch(() => {}));
    entry.parts.thumb.addEventListener("mouseleave", () => video.pause());
    try {
      video.src = await api.mediaUrl(contentPath(entry.job.id));
    } catch {
      video.remove();
    }
  }

  function confirmDelete(id, button) {
    if (!button.classList.contains("confirm")) {
      button.classList.add("confirm");
      button.replaceChildren("Delete?");
      setTimeout(() => {
        button.classList.remove("confirm");
        button.replaceChildren(icon("trash"));
      }, 3000);
      return;
    }
    remove(id);
  }

  async function remove(id) {
    const entry = cards.get(id);
    if (!entry) return;
    entry.el.classList.add("removing");
    try {
      await api.del(`/v1/videos/${encodeURIComponent(id)}`);
    } catch (err) {
      if (err.status !== 404) {
        entry.el.classList.remove("removing");
        return toast(`Could not delete: ${err.message}`, "error");
      }
    }
    forget(id);
  }

  function forget(id) {
    const entry = cards.get(id);
    if (!entry) return;
    cards.delete(id);
    entry.el.remove();
    api.forgetMedia(contentPath(id));
    options.onDelete(id);
    renderEmpty();
  }

  /** A job the page just created goes first. */
  function add(job) {
    if (cards.has(job.id)) return;
    grid.prepend(card(job));
    renderEmpty();
  }

  // Jobs that are still running are polled until they finish; each update reaches the stage too.
  async function poll() {
    const running = [...cards.values()].filter((e) => active(e.job));
    await Promise.all(
      running.map(async (entry) => {
        try {
          const job = await api.get(`/v1/videos/${encodeURIComponent(entry.job.id)}`);
          if (!cards.has(job.id)) return;
          entry.job = job;
          render(entry);
          options.onUpdate(job);
        } catch (err) {
          if (err.status === 404) forget(entry.job.id);
        }
      }),
    );
    setTimeout(poll, POLL_MS);
  }
  poll();
  loadPage();

  return { add, get: (id) => cards.get(id)?.job, contentPath };
}
