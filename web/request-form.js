// The request fields both tabs share (prompt, size, length, seed, and an "Advanced" drawer built from
// the model card), read back as the body of POST /v1/videos or session.start.
import { h, icon } from "./dom.js";

/** The sizes the model card names as native (the model draws those best), else the model's default,
 *  its portrait twin, a square and the usual Wan sizes. */
export function sizeOptions(card) {
  if (card.native_sizes?.length) return card.native_sizes;
  const { width, height } = card.defaults;
  const f = card.spatial_factor;
  const snap = (v) => Math.max(f, Math.round(v / f) * f);
  const side = snap(Math.sqrt(width * height));
  const candidates = [[width, height], [height, width], [side, side], [832, 480], [480, 832], [1280, 720]];
  const fits = ([w, hh]) =>
    w % f === 0 && hh % f === 0 && Math.min(w, hh) >= card.min_size && Math.max(w, hh) <= card.max_size && w * hh <= card.max_pixels;
  const seen = new Set();
  return candidates.filter(fits).filter(([w, hh]) => !seen.has(`${w}x${hh}`) && seen.add(`${w}x${hh}`)).map(([w, hh]) => `${w}x${hh}`);
}

/**
 * Builds the fields into `root`. options: {id, seconds: {max, value}, onSubmit, submitLabel}.
 * Returns {read(), setPrompt(text), size(), setBusy(bool), submit}.
 */
export function createRequestForm(root, card, options) {
  const id = options.id;
  const fps = card.defaults.fps;
  const maxSeconds = Math.max(1, Math.min(options.seconds.max, Math.floor(card.max_frames / fps)));

  const prompt = h("textarea", {
    id: `${id}-prompt`, class: "prompt", rows: 3, required: true, spellcheck: false,
    placeholder: "Describe the scene: a red circle moving left on a blue background",
  });

  let size = sizeOptions(card)[0];
  const sizeChips = h("div", { class: "chips", role: "radiogroup", "aria-label": "Size" });
  for (const option of sizeOptions(card)) {
    const [w, hh] = option.split("x").map(Number);
    const scale = 22 / Math.max(w, hh);
    const chip = h(
      "button",
      { type: "button", class: "chip", role: "radio", "data-size": option, "aria-checked": String(option === size), onclick: () => pick(option) },
      h("span", { class: "aspect", style: { width: `${Math.round(w * scale)}px`, height: `${Math.round(hh * scale)}px` } }),
      option.replace("x", "×"),
    );
    sizeChips.append(chip);
  }
  function pick(option) {
    size = option;
    for (const chip of sizeChips.children) chip.setAttribute("aria-checked", String(chip.dataset.size === option));
    options.onSizeChange?.(option);
  }

  const seconds = h("input", {
    id: `${id}-seconds`, type: "range", min: 1, max: maxSeconds, step: 1,
    value: Math.min(maxSeconds, options.seconds.value),
  });
  const secondsOut = h("output", { for: seconds.id, class: "value" });
  // The server aligns seconds × fps to the model's frame grid (frame_multiple·n + frame_offset); show that count.
  const frames = () => {
    const n = Math.max(0, Math.round((seconds.value * fps - card.frame_offset) / card.frame_multiple));
    return Math.min(card.max_frames, Math.max(card.min_frames, n * card.frame_multiple + card.frame_offset));
  };
  const showSeconds = () => (secondsOut.textContent = `${seconds.value} s · ${frames()} frames`);
  seconds.addEventListener("input", showSeconds);
  showSeconds();

  const seed = h("input", { id: `${id}-seed`, type: "number", min: 0, max: 4294967295, step: 1, placeholder: "random", inputmode: "numeric" });
  const dice = h("button", {
    type: "button", class: "icon-button", title: "Random seed", "aria-label": "Random seed",
    onclick: () => (seed.value = String(Math.floor(Math.random() * 2 ** 32))),
  }, icon("dice"));

  // Advanced: the rest of the request, with the model's own extra_params from its card.
  const negative = h("input", { id: `${id}-negative`, type: "text", placeholder: "what to avoid" });
  const steps = h("input", { id: `${id}-steps`, type: "number", min: 1, max: card.max_inference_steps, placeholder: String(card.defaults.num_inference_steps) });
  const guidance = h("input", { id: `${id}-guidance`, type: "number", min: 0, max: 100, step: 0.1, placeholder: String(card.defaults.guidance_scale) });
  const extras = Object.entries(card.extra_params ?? {}).map(([name, type]) => ({
    name,
    type,
    input: h("input", {
      id: `${id}-extra-${name}`, "data-extra": name,
      type: type === "boolean" ? "checkbox" : type === "number" ? "number" : "text",
      step: type === "number" ? "any" : undefined,
    }),
  }));

  const field = (label, control, hint) => h("label", { class: "field" }, h("span", { class: "label" }, label, hint ? h("span", { class: "hint" }, hint) : null), control);

  const submit = h("button", { type: "submit", class: "primary", id: `${id}-submit` }, icon(options.submitIcon ?? "sparkle"), options.submitLabel);
  const form = h(
    "form",
    { class: "request-form", onsubmit: (e) => (e.preventDefault(), options.onSubmit()) },
    field("Prompt", prompt),
    h("div", { class: "field" }, h("span", { class: "label" }, "Size"), sizeChips),
    field("Length", seconds, secondsOut),
    field("Seed", h("div", { class: "input-row" }, seed, dice)),
    options.extraFields ?? null,
    h(
      "details",
      { class: "advanced" },
      h("summary", {}, "Advanced"),
      h("div", { class: "grid-2" }, field("Steps", steps), field("Guidance", guidance)),
      field("Negative prompt", negative),
      extras.length ? h("div", { class: "grid-2" }, extras.map((x) => field(x.name, x.input, x.type))) : null,
    ),
    submit,
  );
  // Enter submits (Shift+Enter for a new line), like a chat box.
  prompt.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) {
      e.preventDefault();
      form.requestSubmit();
    }
  });
  root.append(form);

  return {
    submit,
    size: () => size,
    setPrompt(text) {
      prompt.value = text;
      prompt.focus();
    },
    setBusy(busy) {
      submit.disabled = busy;
    },
    /** The request body: only what the user set, so server and operator defaults apply to the rest. */
    read() {
      const body = { prompt: prompt.value.trim(), size, seconds: Number(seconds.value) };
      if (seed.value !== "") body.seed = Number(seed.value);
      if (negative.value.trim()) body.negative_prompt = negative.value.trim();
      if (steps.value !== "") body.num_inference_steps = Number(steps.value);
      if (guidance.value !== "") body.guidance_scale = Number(guidance.value);
      const extra = {};
      for (const x of extras) {
        if (x.type === "boolean") {
          if (x.input.checked) extra[x.name] = true;
        } else if (x.input.value !== "") extra[x.name] = x.type === "number" ? Number(x.input.value) : x.input.value;
      }
      if (Object.keys(extra).length) body.extra_params = extra;
      return body;
    },
  };
}
