// The Live tab: one realtime session over /v1/realtime/video. The stream plays through MediaSource as it
// arrives, every chunk's metadata lands on the timeline, prompt updates go out as session.interaction
// with an event id the page makes up, and the log shows acknowledgements, errors and session.done.
import { webSocketUrl } from "./api.js";
import { $, formatBytes, h, icon, toast } from "./dom.js";
import { createLog } from "./log.js";
import { MsePlayer, mseSupported } from "./mse-player.js";
import { createRequestForm } from "./request-form.js";
import { createTimeline } from "./timeline.js";

export function initLive(root, card) {
  const stage = $(".stage", root);
  const video = $("video", stage);
  const hud = $(".hud", stage);
  const timeline = createTimeline($(".timeline", root));
  const log = createLog($(".log-panel", root));

  if (!card.supports_streaming || !mseSupported()) {
    const why = !card.supports_streaming ? "The served model does not stream." : "This browser has no MediaSource.";
    $(".empty-title", stage).textContent = "Live is not available";
    $(".empty-text", stage).textContent = why;
    $(".session-panel", root).append(h("p", { class: "muted" }, why));
    return;
  }

  const pace = h("input", { type: "checkbox", id: "live-pace", checked: true, role: "switch" });
  const form = createRequestForm($(".session-panel", root), card, {
    id: "live",
    seconds: { max: 60, value: 10 },
    submitLabel: "Start live",
    submitIcon: "play",
    onSubmit: start,
    onSizeChange: (size) => setAspect(size),
    extraFields: h(
      "label",
      { class: "toggle", title: "Generate no further ahead of playback than about one chunk, so updates show up quickly" },
      pace,
      h("span", { class: "toggle-track" }),
      h("span", {}, "Pace to playback", h("span", { class: "hint" }, "updates land within a chunk")),
    ),
  });
  const stop = h("button", { type: "button", class: "danger-button", id: "live-stop", hidden: true, onclick: () => sendJson({ type: "session.stop" }, "session.stop") }, icon("stop"), "Stop");
  form.submit.after(stop);

  // Steering: prompt + how many chunks the transition takes (0 = cut).
  const steerPrompt = $("#live-steer-prompt", root);
  const transition = $("#live-transition", root);
  const transitionOut = $("#live-transition-value", root);
  const steerSend = $("#live-steer-send", root);
  const steer = $(".steer", root);
  transition.value = String(card.default_transition_chunks ?? 3);
  const showTransition = () => (transitionOut.textContent = Number(transition.value) === 0 ? "cut" : `${transition.value} chunk${transition.value === "1" ? "" : "s"}`);
  transition.addEventListener("input", showTransition);
  showTransition();
  steer.addEventListener("submit", (e) => {
    e.preventDefault();
    interact();
  });

  for (const chip of root.querySelectorAll("[data-example]")) chip.addEventListener("click", () => form.setPrompt(chip.dataset.example));

  let ws = null, player = null, session = null;

  function setAspect(size) {
    const [w, hh] = size.split("x").map(Number);
    stage.style.setProperty("--ar", `${w} / ${hh}`);
  }
  setAspect(form.size());

  function setState(state) {
    root.dataset.session = state;
    stage.dataset.state = state;
    const running = state === "connecting" || state === "live";
    form.submit.hidden = running;
    stop.hidden = !running;
    stop.disabled = state !== "live";
    steerSend.disabled = state !== "live";
    steerPrompt.disabled = state !== "live";
  }
  setState("idle");

  function sendJson(message, kind, text = "") {
    if (ws?.readyState !== WebSocket.OPEN) return false;
    ws.send(JSON.stringify(message));
    log.add({ direction: "out", kind, text, eventId: message.interaction?.event_id });
    return true;
  }

  function start() {
    const request = form.read();
    if (!request.prompt) return toast("Write a prompt first", "error");
    if (pace.checked) request.extra_params = { ...request.extra_params, pace_to_media_time: true };
    ws?.close();
    player?.dispose();
    timeline.reset();
    log.reset();
    setAspect(request.size);
    session = { chunks: 0, frames: 0, bytes: 0, events: 0, meta: null, basePrompt: request.prompt };
    stage.dataset.hasVideo = "true";
    player = new MsePlayer(video, (err) => {
      log.add({ kind: "player", text: err.message, level: "error" });
      stage.dataset.playerError = err.message;
    });
    setState("connecting");

    const socket = (ws = new WebSocket(webSocketUrl("/v1/realtime/video")));
    socket.binaryType = "arraybuffer";
    socket.onopen = () => sendJson({ type: "session.start", ...request }, "session.start", request.prompt);
    socket.onmessage = (e) => {
      if (socket !== ws) return;
      if (typeof e.data === "string") onMessage(JSON.parse(e.data));
      else onBinary(e.data);
    };
    socket.onclose = (e) => {
      if (socket !== ws) return;
      if (root.dataset.session !== "done") {
        log.add({ kind: "closed", text: e.code === 1006 ? "connection lost (a wrong API key or a full or stopping server also ends here)" : `code ${e.code}`, level: "warn" });
        player?.end();
        setState("closed");
      }
      timeline.finish();
    };
  }

  function onMessage(m) {
    switch (m.type) {
      case "video.start": {
        const c = m.config;
        timeline.setup(c);
        session.config = c;
        setState("live");
        log.add({ kind: "video.start", text: `${c.width}×${c.height} · ${c.num_frames} frames @ ${c.fps} fps · ${c.num_chunks} chunks · seed ${c.seed}`, level: "ok" });
        steerPrompt.focus();
        break;
      }
      case "video.chunk_metadata":
        session.meta = m;
        timeline.chunk(m);
        if (m.kind === "media") {
          session.chunks++;
          session.frames += m.num_frames;
        }
        for (const id of m.started_event_ids) log.add({ kind: "started", text: `${id} at chunk ${m.generation_chunk_index}`, eventId: id });
        for (const id of m.completed_event_ids) log.add({ kind: "completed", text: `${id} at chunk ${m.generation_chunk_index}`, level: "ok", eventId: id });
        for (const id of m.superseded_event_ids ?? []) log.add({ kind: "superseded", text: `${id} at chunk ${m.generation_chunk_index}`, level: "warn", eventId: id });
        break;
      case "session.interaction.queued":
        timeline.queued(m.event_id);
        log.add({ kind: "queued", text: m.event_id, eventId: m.event_id });
        break;
      case "error":
        if (m.event_id) timeline.failed(m.event_id, m.code);
        log.add({ kind: "error", code: m.code, text: m.message, level: "error", eventId: m.event_id });
        break;
      case "session.done":
        log.add({ kind: "session.done", text: `${m.chunks} chunks${m.stopped ? " · stopped" : ""}${m.reason ? ` · ${m.reason}` : ""}`, level: "ok" });
        player.end();
        root.dataset.stopped = String(m.stopped);
        setState("done");
        break;
      case "session.pong":
        break;
      default:
        log.add({ kind: m.type ?? "message", text: JSON.stringify(m).slice(0, 200) });
    }
  }

  function onBinary(buffer) {
    const expected = session.meta?.byte_length;
    if (expected !== undefined && expected !== buffer.byteLength) {
      log.add({ kind: "binary", text: `expected ${expected} bytes, got ${buffer.byteLength}`, level: "warn" });
    }
    session.bytes += buffer.byteLength;
    player.append(buffer);
    if (player.codec) stage.dataset.codec = player.codec;
  }

  function interact() {
    const prompt = steerPrompt.value.trim();
    if (!prompt || root.dataset.session !== "live") return;
    const eventId = `ui-${++session.events}`;
    const chunks = Number(transition.value);
    timeline.addEvent(eventId, prompt, chunks);
    sendJson(
      { type: "session.interaction", interaction: { event_id: eventId, event: { prompt }, transition_chunks: chunks } },
      "interaction",
      `${eventId} · “${prompt}” · ${chunks === 0 ? "cut" : `over ${chunks} chunks`}`,
    );
    steerPrompt.value = "";
  }

  // The playhead and the numbers over the video follow what is on screen.
  let hudText = "";
  function frame() {
    if (session) {
      timeline.setPlayhead(video.currentTime);
      const state = root.dataset.session;
      const parts = [
        state === "live" ? "LIVE" : state.toUpperCase(),
        `chunk ${session.chunks}/${session.config?.num_chunks ?? "?"}`,
        `${video.currentTime.toFixed(1)} s`,
        state === "live" && player ? `+${player.bufferedAhead.toFixed(2)} s buffered` : null,
        formatBytes(session.bytes),
      ].filter(Boolean);
      if (parts.join("|") !== hudText) {
        hudText = parts.join("|");
        hud.replaceChildren(...parts.map((text, i) => h("span", { class: i === 0 ? (state === "live" ? "live-dot" : "hud-state") : undefined }, text)));
      }
    }
    requestAnimationFrame(frame);
  }
  requestAnimationFrame(frame);

  video.addEventListener("playing", () => (video.dataset.state = "playing"));
  video.addEventListener("ended", () => (video.dataset.state = "ended"));
  video.addEventListener("error", () => (video.dataset.state = "error"));
}
