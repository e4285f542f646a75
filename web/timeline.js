// The realtime timeline: one column per generation chunk. The top row is the chunks themselves, tinted
// by the prompt each was generated under (blending while a transition runs) with the playhead over the
// one on screen; below it one row per prompt update showing where it started (▸), how far its
// transition had got in each chunk (the bar's height is transition.progress), where it completed (✓),
// or where a newer update took over before it could (✕, kino's superseded_event_ids).
// State is mirrored into data-* attributes so tests and curious users can read it from the DOM.
import { h } from "./dom.js";

const BASE_COLOR = [92, 108, 150];
const EVENT_COLORS = [
  [255, 181, 71], [255, 107, 154], [53, 208, 186], [139, 212, 80],
  [95, 168, 255], [193, 140, 255], [255, 138, 76], [245, 224, 90],
];
const rgb = (c, a = 1) => `rgba(${c.map(Math.round).join(",")},${a})`;
const mix = (a, b, t) => a.map((v, i) => v + (b[i] - v) * t);

export function createTimeline(root) {
  const chunkLabelCount = h("span", { class: "tl-count" }, "");
  const chunkCells = h("div", { class: "tl-cells" });
  const chunkRow = h("div", { class: "tl-row tl-chunks" }, h("div", { class: "tl-label" }, h("span", { class: "tl-name" }, "Chunks"), chunkLabelCount), chunkCells);
  const playhead = h("div", { class: "tl-playhead", hidden: true });
  const content = h("div", { class: "tl-content" }, chunkRow, playhead);
  const scroller = h("div", { class: "tl-scroll" }, content);
  const empty = h("p", { class: "tl-empty" }, "Start a session: each generated chunk appears here, and each prompt update as a row below.");
  root.append(
    h(
      "header",
      { class: "panel-head" },
      h("h2", {}, "Timeline"),
      h(
        "div",
        { class: "legend" },
        h("span", {}, h("i", { class: "lg-started" }), "started"),
        h("span", {}, h("i", { class: "lg-active" }), "transition"),
        h("span", {}, h("i", { class: "lg-completed" }), "completed"),
        h("span", {}, h("i", { class: "lg-superseded" }), "superseded"),
      ),
    ),
    scroller,
    empty,
  );

  let events, chunks, numChunks, fps, previousColor, received;

  function reset() {
    events = new Map();
    chunks = []; // {cell, startFrame, frames}
    numChunks = 0;
    fps = 16;
    previousColor = BASE_COLOR;
    received = 0;
    chunkCells.replaceChildren();
    for (const row of content.querySelectorAll(".tl-event")) row.remove();
    playhead.hidden = true;
    root.dataset.state = "idle";
    root.dataset.chunksReceived = "0";
    empty.hidden = false;
    updateCount();
  }

  function updateCount() {
    chunkLabelCount.textContent = numChunks ? `${received}/${numChunks}` : "";
    content.style.setProperty("--n", String(Math.max(numChunks, 1)));
  }

  function makeCell(index) {
    return h("div", { class: "tl-cell", "data-chunk": index });
  }

  /** Grows every row to `count` columns (the plan from video.start, or more if the stream runs longer). */
  function ensureColumns(count) {
    if (count <= numChunks) return;
    for (let i = numChunks; i < count; i++) {
      const cell = makeCell(i);
      cell.dataset.state = "pending";
      cell.append(h("span", { class: "tl-index" }, String(i)));
      chunkCells.append(cell);
      chunks[i] = { cell, startFrame: null, frames: 0 };
      for (const event of events.values()) event.cells.append(makeCell(i));
    }
    numChunks = count;
    updateCount();
  }

  /** From video.start's config: how many chunks to expect and at what frame rate. */
  function setup({ num_chunks, fps: rate }) {
    fps = rate ?? fps;
    root.dataset.state = "live";
    empty.hidden = true;
    ensureColumns(num_chunks ?? 1);
  }

  function eventStatus(event, status, text) {
    event.status = status;
    event.row.dataset.status = status;
    event.pill.textContent = text ?? status;
  }

  /** A prompt update the page just sent (before the server acknowledged it). */
  function addEvent(id, prompt, transitionChunks) {
    const color = EVENT_COLORS[events.size % EVENT_COLORS.length];
    const cells = h("div", { class: "tl-cells" });
    for (let i = 0; i < numChunks; i++) cells.append(makeCell(i));
    const pill = h("span", { class: "tl-pill" });
    const row = h(
      "div",
      { class: "tl-row tl-event", "data-event-id": id, style: { "--c": rgb(color) } },
      h("div", { class: "tl-label", title: `${id}: ${prompt}` }, h("i", { class: "tl-swatch" }), h("span", { class: "tl-name" }, prompt), pill),
      cells,
    );
    content.insertBefore(row, playhead);
    const event = { id, color, prompt, transitionChunks, row, cells, pill, fromColor: null, status: "sent" };
    events.set(id, event);
    eventStatus(event, "sent");
    return event;
  }

  const eventFor = (id) => events.get(id) ?? addEvent(id, id, null);
  const eventCell = (event, index) => event.cells.children[index];

  function queued(id) {
    const event = events.get(id);
    if (event && event.status === "sent") eventStatus(event, "queued");
  }

  function failed(id, code) {
    const event = events.get(id);
    if (event) eventStatus(event, "failed", code ?? "failed");
  }

  /** One video.chunk_metadata message. */
  function chunk(meta) {
    if (meta.kind === "trailer") return;
    const index = meta.generation_chunk_index;
    ensureColumns(index + 1);
    const previous = chunks[index - 1];
    const slot = chunks[index];
    slot.startFrame = previous ? (previous.startFrame ?? 0) + previous.frames : 0;
    slot.frames = meta.num_frames;
    received++;
    root.dataset.chunksReceived = String(received);
    updateCount();

    const transition = meta.transition;
    for (const id of meta.started_event_ids) {
      const event = eventFor(id);
      event.fromColor = previousColor;
      eventCell(event, index).classList.add("started");
    }
    for (const id of meta.superseded_event_ids ?? []) {
      const event = eventFor(id);
      eventCell(event, index).classList.add("superseded");
      eventStatus(event, "superseded");
    }
    for (const id of meta.active_event_ids) {
      const event = eventFor(id);
      const done = meta.completed_event_ids.includes(id);
      const progress = transition?.event_id === id ? transition.progress : done ? 1 : 0;
      const cell = eventCell(event, index);
      cell.classList.add("active");
      cell.style.setProperty("--p", String(progress));
      cell.dataset.progress = progress.toFixed(3);
      cell.title = `${id} · chunk ${index} · ${transition?.event_id === id ? `${transition.k}/${transition.n}` : ""} ${Math.round(progress * 100)}%`;
      if (!done) eventStatus(event, "active", transition?.event_id === id ? `${transition.k}/${transition.n}` : "active");
    }
    for (const id of meta.completed_event_ids) {
      const event = eventFor(id);
      eventCell(event, index).classList.add("completed");
      eventStatus(event, "completed", "done");
    }

    // The chunk's tint: the prompt it was generated under, blended while a transition runs.
    let color = previousColor;
    const completedEvent = meta.completed_event_ids.map((id) => events.get(id)).at(-1);
    if (transition && events.has(transition.event_id)) {
      const event = events.get(transition.event_id);
      color = mix(event.fromColor ?? previousColor, event.color, transition.progress);
    } else if (completedEvent) color = completedEvent.color;
    previousColor = color;

    const cell = slot.cell;
    cell.dataset.state = "received";
    cell.style.setProperty("--tint", rgb(color, 0.9));
    cell.dataset.frames = String(meta.num_frames);
    cell.dataset.bytes = String(meta.byte_length);
    const lists = { started: meta.started_event_ids, active: meta.active_event_ids, completed: meta.completed_event_ids, superseded: meta.superseded_event_ids ?? [] };
    for (const [name, ids] of Object.entries(lists)) {
      if (ids.length) cell.dataset[name] = ids.join(" ");
    }
    if (transition) cell.dataset.progress = transition.progress.toFixed(3);
    cell.title = [
      `chunk ${index} · ${meta.num_frames} frames · ${meta.byte_length} bytes`,
      ...Object.entries(lists).filter(([, ids]) => ids.length).map(([name, ids]) => `${name}: ${ids.join(", ")}`),
      transition ? `transition ${transition.event_id} ${transition.k}/${transition.n}` : "",
    ].filter(Boolean).join("\n");
    if (!scroller.matches(":hover")) scrollIntoView(cell);
  }

  function scrollIntoView(cell) {
    const right = cell.offsetLeft + cell.offsetWidth;
    if (right > scroller.scrollLeft + scroller.clientWidth) scroller.scrollLeft = right - scroller.clientWidth + 40;
  }

  let playing = null;
  /** Moves the playhead to media time `seconds` (the video's currentTime). */
  function setPlayhead(seconds) {
    const frame = seconds * fps;
    const index = chunks.findIndex((c) => c && c.startFrame !== null && frame >= c.startFrame && frame < c.startFrame + c.frames);
    const slot = chunks[index];
    if (playing !== slot?.cell) {
      if (playing) playing.dataset.state = "received";
      playing = slot?.cell ?? null;
      if (playing) playing.dataset.state = "playing";
      root.dataset.playingChunk = index >= 0 ? String(index) : "";
    }
    if (!slot) return;
    const within = (frame - slot.startFrame) / slot.frames;
    playhead.hidden = false;
    playhead.style.left = `${slot.cell.offsetLeft + within * slot.cell.offsetWidth}px`;
  }

  function finish() {
    root.dataset.state = "done";
  }

  reset();
  return { reset, setup, addEvent, queued, failed, chunk, setPlayhead, finish };
}
