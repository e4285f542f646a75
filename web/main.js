// Entry point: the API-key prompt, the served model's card, the tabs, the health light.
import * as api from "./api.js";
import { $, toast } from "./dom.js";
import { initGenerate } from "./generate.js";
import { initLive } from "./live.js";

const keyDialog = $("#key-dialog");
const keyInput = $("#key-input");

/** Shows the key dialog; resolves with the key, or null when dismissed. */
function askForKey(reason) {
  $("#key-reason").textContent = reason;
  keyInput.value = "";
  keyDialog.showModal();
  return new Promise((resolve) => {
    keyDialog.addEventListener("close", () => resolve(keyDialog.returnValue === "save" ? keyInput.value.trim() || null : null), { once: true });
  });
}
api.setKeyPrompt(askForKey);

$("#key-button").addEventListener("click", async () => {
  const key = await askForKey(api.apiKey() ? "Replace the stored API key (leave empty to forget it)." : "Set the API key this server expects.");
  if (key !== null) api.setApiKey(key);
  else if (keyDialog.returnValue === "save") api.setApiKey("");
  showKeyState();
  // The first load failed for want of a key: start again with it.
  if (document.body.dataset.ready === "error" && api.apiKey()) location.reload();
});
const showKeyState = () => ($("#key-button").dataset.set = String(Boolean(api.apiKey())));
showKeyState();

// Tabs follow the URL hash, so a reload (or a shared link) opens the same one.
function showTab() {
  const name = location.hash === "#live" ? "live" : "generate";
  for (const tab of document.querySelectorAll("[role=tab]")) tab.setAttribute("aria-selected", String(tab.dataset.tab === name));
  for (const panel of document.querySelectorAll("[role=tabpanel]")) panel.hidden = panel.id !== name;
  document.body.dataset.tab = name;
}
addEventListener("hashchange", showTab);
showTab();

async function checkHealth() {
  const light = $("#health");
  try {
    const res = await fetch("/health");
    light.dataset.health = res.ok ? "ok" : "down";
    light.title = res.ok ? "Ready" : "The generation engine is restarting";
  } catch {
    light.dataset.health = "offline";
    light.title = "The server does not answer";
  }
}
checkHealth();
setInterval(checkHealth, 10000);

async function boot() {
  const models = await api.get("/v1/models");
  const id = models.data[0].id;
  const { card } = await api.get(api.modelPath(id));
  showKeyState();
  $("#model-name").textContent = id;
  $("#model-name").title = `${card.name} · ${card.defaults.width}×${card.defaults.height} @ ${card.defaults.fps} fps`;
  initGenerate($("#generate"), card);
  initLive($("#live"), card);
  document.body.dataset.ready = "true";
}

boot().catch((err) => {
  document.body.dataset.ready = "error";
  toast(`Could not load the served model: ${err.message}`, "error");
});
