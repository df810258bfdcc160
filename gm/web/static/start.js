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

// Each story started in this browser, with when it began and how many rounds it has, so two stories of
// one world can be told apart; the date and count come from the API (the story may be played elsewhere).
function when(moment) {
  const date = new Date(moment);
  return Number.isNaN(date.getTime()) ? "" : date.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}

function rounds(count) {
  return count === 1 ? "1 round" : `${count} rounds`;
}

async function describe(story, meta) {
  const answer = await request(`/api/stories/${encodeURIComponent(story.id)}`, {
    headers: { Authorization: `Bearer ${story.token}` },
  });
  if (!answer.ok) {
    meta.textContent = answer.status === 404 ? " · not on this server any more" : meta.textContent;
    return;
  }
  const { story: found } = await answer.json();
  const started = when(found.created_at);
  meta.textContent = `${started ? ` · started ${started}` : ""} · ${rounds(Number(found.rounds) || 0)}`;
}

const saved = savedStories();
if (saved.length) {
  const list = document.getElementById("saved-list");
  for (const story of saved) {
    const item = document.createElement("li");
    const link = document.createElement("a");
    link.href = `/play/${encodeURIComponent(story.id)}`;
    link.textContent = story.title;
    const meta = document.createElement("span");
    meta.className = "meta";
    meta.textContent = story.at ? ` · started ${when(story.at)}` : "";
    item.append(link, meta);
    list.append(item);
    describe(story, meta);
  }
  document.getElementById("saved").hidden = false;
}
