// The play page: a story's rounds, an input for the player, and the round played as server-sent events.
// Narration and player text are untrusted: every piece of data goes into the page with textContent.

import { request, saveStory, say, sentence, storyToken } from "./common.js";
import { events, follow } from "./live.js";

const page = document.getElementById("play");
const storyId = page.dataset.story;
const base = `/api/stories/${encodeURIComponent(storyId)}`;

const titleLine = document.getElementById("story-title");
const list = document.getElementById("rounds");
const emptyNote = document.getElementById("empty");
const earlierNote = document.getElementById("earlier");
const status = document.getElementById("status");
const errorLine = document.getElementById("error");
const form = document.getElementById("say");
const input = document.getElementById("text");
const sendButton = document.getElementById("send");
const regenerateButton = document.getElementById("regenerate");
const diceSetting = document.getElementById("dice-setting");
const facesForm = document.getElementById("faces-form");
const facesInput = document.getElementById("faces");
const questionLine = document.getElementById("question");
const abandonButton = document.getElementById("abandon");
const sheetPanel = document.getElementById("sheets");
const sheetList = document.getElementById("sheet-list");

const THINKING = "The game master is thinking…";
const RESULT_WORDS = { succeeded: "success", partial: "partial success", failed: "failure" };

let token = null;
let dice = "shown"; // the story's Dice setting: "shown" or "hidden"
let rounds = []; // the transcript's rounds, as GET /api/stories/{id} gives them (its newest page)
let live = null; // the round being played: {round, replaces, base}
let busy = false;
let gathered = ""; // who a together round still waits for, once this page's action is gathered
let sheetsAfter = null; // the changes of the round just played, drawn on the sheets once it is over
let asking = null; // the question of a round paused for the player's dice (dice rolled at the table), or null
let paused = null; // that round as drawn so far in this page (its player text and rolls), or null
let watched = null; // a round another viewer is playing, as its live events draw it, or null
// The words of this page's own actions, until the live stream tells each back: on PostgreSQL an action's event can
// reach the stream after the page's own round is over, and it would be drawn as another viewer's round.
const ownActions = [];
const MOST_OWN_ACTIONS = 8; // an action refused before it started is never told back
let loaded = false; // the story has been read once (events before that only mark it stale)
let stale = false; // an event came while the story was being read: read it again
const openCards = new Set(); // ids of the rolls whose card the player opened

// ---- dice cards: the same words as gm.engine.transcript's card() and opened() ----

function signed(number) {
  return number > 0 ? `+${number}` : String(number);
}

/** The closed card: "Risky attempt - Mara: Partial success" (as card() in gm/engine/transcript.py). */
export function cardText(roll) {
  const who = roll.character || "the game master";
  if (roll.kind === "check") {
    const told = roll.void ? "void (no band)" : String(roll.band);
    const side = roll.opponent ? `${who} vs ${roll.opponent}` : who;
    return `${roll.check_name || roll.check} - ${side}: ${told}`;
  }
  if (roll.kind === "player") {
    const purpose = roll.reason ? ` for ${roll.reason}` : "";
    return `Roll - ${who}: ${roll.notation}${purpose} = ${roll.total}`;
  }
  const purpose = roll.reason ? ` (${roll.reason})` : "";
  return `Dice${purpose}: ${roll.notation} = ${roll.total}`;
}

/** The card opened: what opened() shows in brackets (the itemised dice, modifier, target, value, result). */
export function diceLine(roll) {
  const earlier =
    (roll.from_earlier_attempt ? ", rolled in an earlier attempt" : "") + (roll.typed ? ", typed at the table" : "");
  if (roll.kind !== "check") return `${roll.dice}${earlier}`;
  let reading = roll.edge ? `with ${roll.edge}: ${roll.dice}` : String(roll.dice);
  if (roll.opponent) reading += `, ${signed(roll.modifier)} against ${roll.opponent} ${signed(roll.opponent_modifier || 0)}`;
  else if (roll.modifier) reading += `, ${signed(roll.modifier)}`;
  if (roll.target !== null && roll.target !== undefined) reading += `, target ${roll.target}`;
  reading += ` -> ${roll.value}`;
  if (!roll.void) reading += `, ${RESULT_WORDS[roll.result] || roll.result}`;
  if (roll.critical) reading += ", critical";
  if (roll.natural) reading += `; ${roll.natural}`;
  return reading + earlier;
}

/** A fraction in text ("9/20") as a percentage, as percent() in gm/engine/transcript.py writes it. */
export function percent(probability) {
  const [top, bottom] = String(probability).split("/");
  const numerator = BigInt(top);
  const denominator = BigInt(bottom || "1");
  const tenths = (numerator * 2000n + denominator) / (2n * denominator);
  return `${tenths / 10n}.${tenths % 10n}%`;
}

/** Each band's chance at the moment of the roll, as odds_text() in gm/engine/transcript.py. */
export function oddsText(roll) {
  const chances = roll.chances || [];
  const about = chances.every((chance) => chance.exact) ? "" : "about ";
  return about + chances.map((chance) => `${chance.label} ${percent(chance.probability)}`).join(", ");
}

// ---- drawing ----

function element(tag, className, text) {
  const made = document.createElement(tag);
  if (className) made.className = className;
  if (text !== undefined) made.textContent = text;
  return made;
}

function paragraphs(text) {
  return String(text || "")
    .split(/\n\s*\n/)
    .map((part) => part.trim())
    .filter(Boolean);
}

function diceCards(rolls) {
  const box = element("div", "dice");
  for (const roll of rolls) {
    const card = element("details", "card");
    card.dataset.roll = String(roll.id);
    if (roll.result) card.dataset.result = String(roll.result);
    if (roll.critical) card.classList.add("critical");
    card.open = openCards.has(roll.id);
    card.append(element("summary", null, cardText(roll)), element("p", "dice-line", diceLine(roll)));
    if (roll.chances && roll.chances.length) card.append(element("p", "dice-odds", `odds ${oddsText(roll)}`));
    card.addEventListener("toggle", () => (card.open ? openCards.add(roll.id) : openCards.delete(roll.id)));
    box.append(card);
  }
  return box;
}

function roundElement(round, pending = false) {
  const item = element("li", pending ? "round pending" : "round");
  if (round.number) item.dataset.number = String(round.number);
  item.append(element("p", "player", round.player_text));
  const narration = element("div", "narration");
  for (const paragraph of paragraphs(round.narration)) narration.append(element("p", null, paragraph));
  item.append(narration);
  // In a world with a calendar, each round shows the date and time it ended at.
  if (round.time) item.append(element("p", "round-time", round.time));
  if (dice === "shown" && round.rolls.length) item.append(diceCards(round.rolls));
  return item;
}

// ---- the sheet panel: the characters' sheets from GET /sheet, what the last round changed marked ----

function sheetCards(shown, changes) {
  const changed = new Map();
  for (const change of changes) changed.set(`${change.character}\u0000${change.variable}`, String(change.reason || ""));
  const cards = [];
  for (const [character, entries] of Object.entries(shown)) {
    const card = element("section", "sheet");
    card.dataset.character = character;
    card.append(element("h3", null, character));
    const list = element("dl");
    for (const [variable, text] of Object.entries(entries)) {
      const row = element("div", "sheet-entry");
      row.dataset.variable = variable;
      row.append(element("dt", null, variable), element("dd", null, String(text)));
      const key = `${character}\u0000${variable}`;
      if (changed.has(key)) {
        row.classList.add("changed");
        row.title = `changed in the last round${changed.get(key) ? `: ${changed.get(key)}` : ""}`;
      }
      list.append(row);
    }
    card.append(list);
    cards.push(card);
  }
  return cards;
}

/** Fetch the sheets as the database holds them and draw them; `changes`: the last round's, to mark. */
async function showSheets(changes = []) {
  const answer = await api(`${base}/sheet`);
  if (!answer.ok) return;
  const data = await answer.json();
  sheetPanel.hidden = !data.sheet;
  if (data.sheet) sheetList.replaceChildren(...sheetCards(data.shown || {}, changes));
  sheetPanel.dataset.round = String(rounds.length ? rounds[rounds.length - 1].number : 0);
}

function shownRounds() {
  const others = watched ? [watched] : [];
  if (!live) return [...rounds, ...others];
  return live.replaces ? [...rounds.slice(0, -1), live.round] : [...rounds, live.round];
}

function draw() {
  const shown = shownRounds();
  const pending = live !== null || watched !== null;
  list.replaceChildren(...shown.map((round, at) => roundElement(round, pending && at === shown.length - 1)));
  emptyNote.hidden = shown.length > 0;
  regenerateButton.disabled = busy || rounds.length === 0;
}

/** Redraw only the last round (the one being played), and keep it in view. */
function drawLast(pending) {
  const shown = shownRounds();
  const fresh = roundElement(shown[shown.length - 1], pending);
  const drawn = list.children.length === shown.length;
  if (drawn && list.lastElementChild) list.lastElementChild.replaceWith(fresh);
  else list.append(fresh);
  emptyNote.hidden = true;
  form.scrollIntoView({ block: "end" });
}

function markDice() {
  for (const choice of diceSetting.querySelectorAll("input[name=dice]")) choice.checked = choice.value === dice;
}

function setBusy(now) {
  busy = now;
  sendButton.disabled = now || asking !== null;
  input.disabled = asking !== null;
  regenerateButton.disabled = now || rounds.length === 0 || asking !== null;
  for (const control of [facesInput, abandonButton, document.getElementById("send-faces")]) control.disabled = now;
}

/** Show the question of a round paused for the player's dice (or hide the form, with null). */
function ask(question) {
  asking = question;
  facesForm.hidden = question === null;
  questionLine.textContent = question ? String(question.text) : "";
  setBusy(busy);
  if (question) facesInput.focus();
}

/** The story's date and time now, in a world with a calendar (null in one without). */
function showTime(time) {
  const now = document.getElementById("now");
  now.hidden = !time;
  document.getElementById("now-time").textContent = time ? String(time) : "";
}

/** A fair story's current commitment (and the player's own seed, if any) under the title. */
function showFairness(story, integrity) {
  document.getElementById("fair").hidden = !story.fair;
  if (!story.fair) return;
  document.getElementById("commitment").textContent = String(story.commitment || "");
  const playerSeed = integrity && integrity.player_seed;
  document.getElementById("player-seed-note").hidden = !playerSeed;
  document.getElementById("player-seed").textContent = playerSeed ? String(playerSeed) : "";
}

// ---- the API ----

function api(path, options = {}) {
  const headers = { ...(options.headers || {}), Authorization: `Bearer ${token}` };
  return request(path, { ...options, headers });
}

/** Play a round (or play the last one again) through a streaming endpoint; true if it was accepted. */
async function play(path, body, round, replaces) {
  const options = { method: "POST" };
  if (body) {
    options.headers = { "Content-Type": "application/json" };
    options.body = JSON.stringify(body);
  }
  return playAnswered(api(path, options), round, replaces);
}

/** Follow a streamed round from its answer (a response, or a promise of one); true if it ended or paused. */
async function playAnswered(response, round, replaces = false) {
  const failedBefore = replaces ? "The round was not told again" : "The round did not happen";
  setBusy(true);
  say(errorLine, "");
  say(status, THINKING);
  live = { round, replaces, base: round.narration };
  drawLast(true);
  const answer = await response;
  let failure = null;
  let ended = false;
  if (!answer.ok) {
    failure = `${replaces ? failedBefore : "Not sent"}: ${await sentence(answer)}`;
  } else {
    try {
      for await (const { kind, data } of events(answer)) {
        if (kind === "working") {
          say(status, THINKING);
        } else if (kind === "roll") {
          // roll events come in the transcript's shape
          round.rolls = [...round.rolls.filter((kept) => kept.id !== data.id), data];
          drawLast(true);
        } else if (kind === "refusal") {
          round.narration = live.base; // what was told so far does not stand
          drawLast(true);
        } else if (kind === "narration") {
          round.narration = String(data.text ?? "");
          drawLast(true);
        } else if (kind === "asking") {
          say(status, "");
        } else if (kind === "done" && data.round === null && data.gathering) {
          // A together round gathers this action until every seat has acted: it waits, drawn as pending.
          ended = true;
          gathered = GATHERING_WORDS(data.gathering);
          watched = round;
          live = null;
          draw();
        } else if (kind === "done" && data.round === null) {
          ended = true; // the round waits for the player's dice: it stays drawn, and the question is asked
          paused = round;
          ask(data.asking);
        } else if (kind === "done") {
          ended = true;
          paused = null;
          ask(null);
          const accepted = data.round;
          const others = rounds.filter((kept) => kept.number !== accepted.number); // read meanwhile, perhaps
          rounds = replaces ? [...rounds.slice(0, -1), accepted] : [...others, accepted];
          if (accepted.time) showTime(accepted.time); // the newest round ended when the story now stands
          live = null;
          drawLast(false);
          sheetsAfter = accepted.changes || [];
        } else if (kind === "failed") {
          failure = `${failedBefore}: ${typeof data.error === "string" ? data.error : "the round failed"}`;
        }
      }
    } catch {
      failure = `${failedBefore}: the connection broke off; reload the page to see where the story stands`;
    }
    if (!ended && failure === null) {
      failure = `${failedBefore}: the answer stopped before the round ended; reload the page to see where the story stands`;
    }
  }
  if (!ended) {
    live = null;
    draw();
  }
  if (ended && asking !== null) drawLast(true);
  say(status, gathered);
  gathered = "";
  say(errorLine, failure);
  setBusy(false);
  if (sheetsAfter !== null) {
    // Read once the page answers again: a player may type the next action while the sheets are read.
    const changes = sheetsAfter;
    sheetsAfter = null;
    await showSheets(changes);
  }
  if (readAfter) {
    readAfter = false;
    reread();
  }
  return ended;
}

async function send() {
  const text = input.value.trim();
  if (!text || busy) return;
  input.value = "";
  ownActions.push(text);
  if (ownActions.length > MOST_OWN_ACTIONS) ownActions.shift();
  const played = await play(`${base}/messages/stream`, { text }, { player_text: text, narration: "", rolls: [] }, false);
  if (!played && !input.value) input.value = text; // give the player their words back to fix or retry
  input.focus();
}

async function regenerate() {
  if (busy || !rounds.length) return;
  const last = rounds[rounds.length - 1];
  await play(`${base}/regenerate/stream`, null, { ...last, rolls: [...last.rolls] }, true);
}

async function sendFaces() {
  const faces = facesInput.value.trim();
  if (!faces || busy || !asking) return;
  // The paused round goes on: drawn from what this page saw of it, or from nothing after a reload.
  const round = paused || { player_text: "", narration: "", rolls: [] };
  const wrong = await api(`${base}/faces/stream`, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ faces }),
  });
  if (wrong.status === 400) {
    say(errorLine, `Those faces do not answer: ${await sentence(wrong)}`); // the question stands
    facesInput.focus();
    return;
  }
  facesInput.value = "";
  await playAnswered(wrong, round);
}

async function abandon() {
  if (busy || !asking) return;
  const answer = await api(`${base}/abandon`, { method: "POST" });
  if (!answer.ok) {
    say(errorLine, `The round was not abandoned: ${await sentence(answer)}`);
    return;
  }
  say(errorLine, "");
  paused = null;
  live = null;
  ask(null);
  draw();
  input.focus();
}

async function changeDice(wanted) {
  say(errorLine, "");
  diceSetting.disabled = true;
  const answer = await api(`${base}/settings`, {
    method: "PUT",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ dice: wanted }),
  });
  diceSetting.disabled = false;
  if (!answer.ok) {
    say(errorLine, `The Dice setting was not changed: ${await sentence(answer)}`);
  } else {
    dice = (await answer.json()).settings.dice;
    draw();
  }
  markDice();
}

function takeToken() {
  const given = new URLSearchParams(window.location.hash.slice(1)).get("token");
  if (given) {
    saveStory(storyId, given);
    // The token stays in this browser's storage, not in the address bar (or in a copied link).
    window.history.replaceState(null, "", window.location.pathname + window.location.search);
    return given;
  }
  return storyToken(storyId);
}

/** Say that the story's earlier rounds are not shown: the page holds its newest (GET /api/stories/{id}). */
function showEarlier(page) {
  earlierNote.hidden = !(page && page.earlier && page.first);
  if (!earlierNote.hidden) {
    const before = page.first - 1;
    earlierNote.textContent = `The ${before} earlier round${before === 1 ? " is" : "s are"} not shown here.`;
  }
}

/** Read the story as this viewer may see it, and draw it. */
async function read() {
  const answer = await api(base);
  if (!answer.ok) {
    say(errorLine, `This story cannot be opened: ${await sentence(answer)}`);
    return false;
  }
  const data = await answer.json();
  titleLine.textContent = data.story.title;
  document.title = `${data.story.title} · gm`;
  saveStory(storyId, token, data.story.title);
  dice = data.story.settings.dice;
  rounds = data.rounds;
  showEarlier(data.page);
  showFairness(data.story, data.integrity);
  showTime(data.story.time);
  markDice();
  if (!busy) ask(data.story.asking || null);
  draw();
  await showSheets(rounds.length ? rounds[rounds.length - 1].changes || [] : []);
  return true;
}

/** Read the story again (another viewer's round ended, a seat joined...), or note it for after the read under way. */
async function reread() {
  if (!loaded) {
    stale = true;
    return;
  }
  await read();
}

const GATHERING_WORDS = (data) =>
  data.waiting_for && data.waiting_for.length ? `Waiting for ${data.waiting_for.join(", ")} to act.` : "";

/** One event of the story's live stream (gm.web._api_live): what other viewers are doing, as it happens. */
function onEvent({ kind, data }) {
  if (kind === "ready") {
    page.dataset.live = "true";
    if (readyNow) readyNow();
    return;
  }
  if (kind === "action") {
    const own = ownActions.indexOf(String(data.player_text ?? ""));
    if (own !== -1) {
      ownActions.splice(own, 1); // this page's own action, told while it plays or after
      return;
    }
  }
  if (busy && (kind === "action" || kind === "roll" || kind === "asking")) return; // this page's own round
  if (kind === "action") {
    const who = data.character ? `${data.character}: ` : "";
    watched = { player_text: `${who}${data.player_text || ""}`, narration: "", rolls: [] };
    say(status, THINKING);
    draw();
  } else if (kind === "roll" && watched) {
    watched.rolls = [...watched.rolls.filter((kept) => kept.id !== data.id), data];
    draw();
  } else if (kind === "gathering") {
    say(status, GATHERING_WORDS(data));
    if (data.deadline) setTimeout(reread, Math.max(0, Date.parse(data.deadline) - Date.now()) + 1000);
  } else if (kind === "gone" || kind === "revoked") {
    say(errorLine, kind === "gone" ? "This story was deleted." : "This key opens the story no more.");
    input.disabled = true;
    sendButton.disabled = true;
  } else if (busy) {
    readAfter = true; // this page's own round is under way: read the story once it is done
  } else {
    // round, failed, abandoned, asking, ended, changed, reset: read the story as this viewer may see it
    if (kind !== "asking") {
      watched = null;
      if (!busy) say(status, "");
    }
    reread();
  }
}

let readyNow = null;
let readAfter = false;

async function load() {
  token = takeToken();
  if (!token) {
    say(
      errorLine,
      "This story cannot be opened here: its key is in the link given when it started (after #token=). " +
        "Start a story from the start page.",
    );
    return;
  }
  if (!(await read())) return; // a story this token does not open: one refusal, and no stream
  // Then the live stream; once it is ready, the story is read again, so nothing between the two is missed.
  const ready = new Promise((done) => (readyNow = done));
  follow(`${base}/events`, token, onEvent);
  await Promise.race([ready, new Promise((done) => setTimeout(done, 3000))]);
  await read();
  loaded = true;
  while (stale) {
    stale = false;
    await read();
  }
  diceSetting.disabled = false;
  input.disabled = false;
  setBusy(false);
  page.dataset.ready = "true";
  if (rounds.length) form.scrollIntoView({ block: "end" });
  input.focus();
}

form.addEventListener("submit", (event) => {
  event.preventDefault();
  send();
});
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send();
  }
});
regenerateButton.addEventListener("click", regenerate);
facesForm.addEventListener("submit", (event) => {
  event.preventDefault();
  sendFaces();
});
abandonButton.addEventListener("click", abandon);
diceSetting.addEventListener("change", (event) => changeDice(event.target.value));

load();
