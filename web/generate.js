// The Generate tab: a REST job (POST /v1/videos), its progress over the stage while it runs (from the
// job's `progress`, polled by the library), then the finished MP4 on the stage.
import * as api from "./api.js";
import { $, h, icon, toast } from "./dom.js";
import { createJobList } from "./jobs.js";
import { createRequestForm } from "./request-form.js";

const RING = 2 * Math.PI * 44;

export function initGenerate(root, card) {
  const stage = $(".stage", root);
  const video = $("video", stage);
  const caption = $(".stage-caption", root);
  const overlay = h("div", { class: "progress-overlay", hidden: true, "data-progress": "0" });
  const arc = document.createElementNS("http://www.w3.org/2000/svg", "circle");
  const ring = document.createElementNS("http://www.w3.org/2000/svg", "svg");
  ring.setAttribute("viewBox", "0 0 100 100");
  ring.classList.add("ring");
  ring.innerHTML = '<circle cx="50" cy="50" r="44" class="ring-track"/>';
  for (const [k, v] of Object.entries({ cx: 50, cy: 50, r: 44, class: "ring-arc", "stroke-dasharray": RING, "stroke-dashoffset": RING })) arc.setAttribute(k, v);
  ring.append(arc);
  const percent = h("div", { class: "ring-value" }, "0%");
  const label = h("div", { class: "progress-label" });
  const prompt = h("div", { class: "progress-prompt" });
  const bar = h("i", { class: "stage-bar" });
  overlay.append(h("div", { class: "ring-wrap" }, ring, percent), label, prompt);
  stage.append(overlay, bar);

  let current = null; // the job id on the stage

  const form = createRequestForm($(".request-panel", root), card, {
    id: "gen",
    seconds: { max: 10, value: Math.max(1, Math.round(card.defaults.num_frames / card.defaults.fps)) },
    submitLabel: "Generate",
    onSubmit: submit,
    onSizeChange: setAspect,
  });
  for (const chip of root.querySelectorAll("[data-example]")) chip.addEventListener("click", () => form.setPrompt(chip.dataset.example));

  const jobs = createJobList($(".library", root), {
    onSelect: (job) => show(job),
    onUpdate: (job) => job.id === current && show(job),
    onDelete: (id) => id === current && clear(),
  });

  function setAspect(size) {
    const [w, hh] = size.split("x").map(Number);
    stage.style.setProperty("--ar", `${w} / ${hh}`);
  }
  setAspect(form.size());

  async function submit() {
    const body = form.read();
    if (!body.prompt) return toast("Write a prompt first", "error");
    form.setBusy(true);
    try {
      const job = await api.post("/v1/videos", body);
      jobs.add(job);
      show(job);
    } catch (err) {
      toast(err.param ? `${err.message} (${err.param})` : err.message, "error");
    } finally {
      form.setBusy(false);
    }
  }

  function clear() {
    current = null;
    overlay.hidden = true;
    video.removeAttribute("src");
    video.load();
    stage.dataset.hasVideo = "false";
    caption.replaceChildren();
  }

  /** Puts a job on the stage: its progress while it runs, the video once it is done. */
  async function show(job) {
    const switched = current !== job.id;
    current = job.id;
    stage.dataset.jobId = job.id;
    stage.dataset.hasVideo = "true";
    setAspect(job.size);
    const running = job.status === "queued" || job.status === "in_progress";
    overlay.hidden = job.status === "completed";
    overlay.dataset.status = job.status;
    overlay.dataset.progress = String(job.progress);
    arc.setAttribute("stroke-dashoffset", String(RING * (1 - job.progress / 100)));
    percent.textContent = job.status === "failed" ? "!" : `${job.progress}%`;
    label.textContent =
      job.status === "queued" ? "Waiting in the queue"
      : job.status === "failed" ? `Failed: ${job.error?.message ?? "generation failed"}`
      : job.progress >= 90 ? "Encoding" : job.status === "completed" ? "Done" : "Generating";
    prompt.textContent = job.prompt;
    bar.style.width = running ? `${job.progress}%` : "0";
    renderCaption(job);
    video.controls = job.status === "completed";
    if (running && switched) {
      video.removeAttribute("src");
      video.load();
      video.dataset.state = "waiting";
    }
    if (job.status === "completed" && (switched || video.dataset.jobId !== job.id)) {
      video.dataset.jobId = job.id;
      video.dataset.state = "loading";
      video.src = await api.mediaUrl(jobs.contentPath(job.id));
      video.play().catch(() => {});
    }
  }

  function renderCaption(job) {
    const download = h("a", { class: "ghost small", download: `${job.id}.mp4`, title: "Download MP4" }, icon("download"), "MP4");
    if (job.status === "completed") api.mediaUrl(jobs.contentPath(job.id)).then((url) => (download.href = url));
    else download.hidden = true;
    caption.replaceChildren(
      h("p", { class: "caption-prompt" }, job.prompt),
      h(
        "div",
        { class: "caption-meta" },
        h("span", { class: "tag" }, job.size.replace("x", "×")),
        h("span", { class: "tag" }, `${job.seconds} s`),
        job.inference_time_s != null ? h("span", { class: "tag" }, `made in ${job.inference_time_s.toFixed(2)} s`) : null,
        h("span", { class: "tag mono" }, job.id),
        download,
      ),
    );
  }

  video.addEventListener("playing", () => (video.dataset.state = "playing"));
  video.addEventListener("ended", () => (video.dataset.state = "ended"));
  video.addEventListener("error", () => video.getAttribute("src") && (video.dataset.state = "error"));
}
