// Shared by the start page and the play page: where story tokens are kept, and how API answers are read.
// Nothing here (or anywhere in these pages) writes data as HTML: text goes in with textContent.

const STORIES = "gm.stories";
const API_TOKEN = "gm.api-token";

let memory = {}; // used when the browser refuses storage (a private window with storage off)

function readStories() {
  try {
    const kept = JSON.parse(window.localStorage.getItem(STORIES) || "{}");
    return kept && typeof kept === "object" ? kept : {};
  } catch {
    return memory;
  }
}

function writeStories(stories) {
  try {
    window.localStorage.setItem(STORIES, JSON.stringify(stories));
  } catch {
    memory = stories;
  }
}

/** The stories started in this browser: [{id, title, token}], newest first. */
export function savedStories() {
  return Object.entries(readStories())
    .map(([id, story]) => ({ id, title: String(story.title || "A story"), token: story.token, at: story.at || 0 }))
    .filter((story) => typeof story.token === "string")
    .sort((a, b) => b.at - a.at);
}

export function saveStory(id, token, title) {
  const stories = readStories();
  const before = stories[id] || {};
  stories[id] = { token, title: title || before.title || "A story", at: before.at || Date.now() };
  writeStories(stories);
}

export function storyToken(id) {
  const story = readStories()[id];
  return story && typeof story.token === "string" ? story.token : null;
}

export function rememberApiToken(token) {
  try {
    if (token) window.sessionStorage.setItem(API_TOKEN, token);
  } catch {
    // not kept: it is typed again next time
  }
}

export function apiToken() {
  try {
    return window.sessionStorage.getItem(API_TOKEN) || "";
  } catch {
    return "";
  }
}

/** One readable sentence for a failed answer: the API's {"error": ...}, never its raw body. */
export async function problem(response) {
  try {
    const body = await response.json();
    if (body && typeof body.error === "string" && body.error) return body.error;
  } catch {
    // not JSON: fall through to the status
  }
  const status = `${response.status} ${response.statusText || ""}`.trim();
  return `the server answered ${status}`;
}

/** fetch, with a network failure turned into an answer-like object carrying one sentence. */
export async function request(url, options = {}) {
  try {
    return await fetch(url, options);
  } catch {
    return { ok: false, status: 0, statusText: "", networkError: true };
  }
}

export async function sentence(response) {
  if (response.networkError) return "the server could not be reached; check your connection and try again";
  return problem(response);
}

/** Show `text` in a status or error line (hidden when empty). */
export function say(element, text) {
  element.textContent = text || "";
  element.hidden = !text;
}
