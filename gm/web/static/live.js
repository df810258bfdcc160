// A story's live events (GET /api/stories/{id}/events): server-sent events read with fetch, so the token goes in
// the Authorization header (EventSource sends no headers), followed again after a broken connection from the last
// event's id (Last-Event-ID), so that nothing is missed while it was down.

/** The server-sent events of a response, as {kind, data, id} with data parsed from JSON (id null if none). */
export async function* events(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let cut;
    while ((cut = buffer.search(/\r?\n\r?\n/)) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut).replace(/^\r?\n\r?\n/, "");
      const event = parseEvent(block);
      if (event) yield event;
    }
  }
  const event = parseEvent(buffer);
  if (event) yield event;
}

function parseEvent(block) {
  let kind = "message";
  let id = null;
  const data = [];
  for (const line of block.split(/\r?\n/)) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") kind = value;
    else if (field === "data") data.push(value);
    else if (field === "id") id = value;
  }
  if (!data.length) return null;
  try {
    return { kind, data: JSON.parse(data.join("\n")), id };
  } catch {
    return null;
  }
}

const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
const FIRST_WAIT = 500; // ms before following again after a broken connection; doubled each time, up to LONGEST_WAIT
const LONGEST_WAIT = 10000;
const ENDS = new Set(["gone", "revoked"]);

/** Follow the story's events at `url` for ever (until `gone` or `revoked`), calling `handle(event)` for each. */
export async function follow(url, token, handle) {
  let lastId = null;
  let wait = FIRST_WAIT;
  for (;;) {
    try {
      const headers = { Authorization: `Bearer ${token}` };
      if (lastId !== null) headers["Last-Event-ID"] = lastId;
      const response = await fetch(url, { headers, cache: "no-store" });
      if (response.status === 401 || response.status === 404) {
        handle({ kind: "revoked", data: {}, id: null }); // the token opens the story no more
        return;
      }
      if (response.ok) {
        wait = FIRST_WAIT;
        for await (const event of events(response)) {
          if (event.id !== null) lastId = event.id;
          handle(event);
          if (ENDS.has(event.kind)) return;
        }
      }
    } catch {
      // the connection broke: follow again below, from the last event seen
    }
    await sleep(wait);
    wait = Math.min(wait * 2, LONGEST_WAIT);
  }
}
