// The start page: start a story in a world (POST /api/stories), then go to its play page with the
// story's token in the URL fragment, which the browser never sends to the server.

import { apiToken, rememberApiToken, request, savedStories, saveStory, say, sentence } from "./common.js";

const error = document.getElementById("start-error");
const tokenField = document.getElementById("api-token");

if (tokenField) tokenField.value = apiToken();

async function start(form) {
  const button = form.querySelector("button[type=submit]");
  const dice = form.querySelector("input[name=dice]:checked")?.value || "shown";
  const fair = form.querySelector("input[name=fair]")?.checked || false;
  const diceFrom = form.querySelector("input[name=dice-from]")?.checked ? "player" : "engine";
  const playerSeed = fair ? form.querySelector("input[name=player-seed]")?.value || "" : "";
  const headers = { "Content-Type": "application/json" };
  if (tokenField) {
    const given = tokenField.value.trim();
    if (!given) {
      say(error, "Starting a story on this server needs its API token: fill it in above.");
      tokenField.focus();
      return;
    }
    headers.Authorization = `Bearer ${given}`;
  }
  say(error, "");
  button.disabled = true;
  const answer = await request("/api/stories", {
    method: "POST",
    headers,
    body: JSON.stringify({
      world: form.dataset.world,
      dice,
      fair,
      dice_from: diceFrom,
      ...(playerSeed.trim() ? { player_seed: playerSeed } : {}),
    }),
  });
  if (answer.status !== 201) {
    button.disabled = false;
    say(error, `The story was not started: ${await sentence(answer)}`);
    return;
  }
  const { story, token } = await answer.json();
  if (tokenField) rememberApiToken(tokenField.value.trim());
  saveStory(story.id, token, story.title);
  window.location.assign(`/play/${encodeURIComponent(story.id)}#token=${encodeURIComponent(token)}`);
}

for (const form of document.querySelectorAll("form.start")) {
  const fair = form.querySelector("input[name=fair]");
  const seed = form.querySelector("input[name=player-seed]");
  // A player's seed only means something for fair dice.
  fair?.addEventListener("change", () => (seed.disabled = !fair.checked));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    start(form);
  });
}

const saved = savedStories();
if (saved.length) {
  const list = document.getElementById("saved-list");
  for (const story of saved) {
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = `/play/${encodeURIComponent(story.id)}`;
    link.textContent = story.title;
    item.append(link);
    list.append(item);
  }
  document.getElementById("saved").hidden = false;
}
