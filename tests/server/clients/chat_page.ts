// Drives augur serve's chat page (GET /, src/server/chat_page.html) in headless Chromium, as a
// person would: a wrong API key shows an error bubble, the right one shows the model's name, and
// two messages sent at temperature 0 stream their answers (seen growing through a
// MutationObserver in the page), each ending with the stats line and equal to a direct greedy
// request with the same conversation.
//
// Usage: node dist/chat_page.js CONFIG.json
// CONFIG (written by tests/server/chat_page_test.cpp):
//   { "url": "http://127.0.0.1:PORT", "api_key": "KEY", "model": "...", "max_tokens": N,
//     "messages": ["first", "second"], "first_text": "augur run's greedy answer to the first",
//     "chromium": "/usr/bin/chromium", "screenshot": "PATH.png" | null }
// Prints one line per check; exits 1 with the first mismatch, named, on stderr.
import * as fs from "node:fs";
import puppeteer, { type Browser, type Page } from "puppeteer-core";

interface Config {
  url: string;
  api_key: string;
  model: string;
  max_tokens: number;
  messages: string[];
  first_text: string;
  chromium: string;
  screenshot: string | null;
}

interface ChatMessage {
  role: "user" | "assistant";
  content: string;
}

// What the page observed while one answer streamed in.
interface Observed {
  text: string;
  stats: string;
  partials: string[]; // distinct texts of the answer bubble, in the order seen
}

class Mismatch extends Error {}

function check(cond: boolean, what: string): asserts cond {
  if (!cond) throw new Mismatch(what);
}

function show(value: unknown): string {
  return JSON.stringify(value);
}

const kTimeoutMs = 60_000;

// A direct greedy request (no browser) with the same conversation: what the page must show.
async function directAnswer(config: Config, messages: ChatMessage[]): Promise<string> {
  const res = await fetch(`${config.url}/v1/chat/completions`, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${config.api_key}` },
    body: JSON.stringify({ messages, temperature: 0, max_tokens: config.max_tokens }),
  });
  check(res.ok, `direct request: HTTP ${res.status}`);
  const body = (await res.json()) as { choices: Array<{ message: { content: string } }> };
  return body.choices[0].message.content;
}

async function setField(page: Page, selector: string, value: string): Promise<void> {
  await page.$eval(
    selector,
    (el, v) => {
      const input = el as HTMLInputElement;
      input.value = v;
      input.dispatchEvent(new Event("change", { bubbles: true }));
    },
    value,
  );
}

// Records every distinct text of the newest assistant bubble as it changes.
async function installObserver(page: Page): Promise<void> {
  await page.evaluate(() => {
    const w = window as unknown as { __partials: string[] };
    w.__partials = [];
    const log = document.getElementById("log");
    if (!log) throw new Error("the page has no #log");
    new MutationObserver(() => {
      const bubbles = document.querySelectorAll(".msg.assistant .text");
      const last = bubbles[bubbles.length - 1];
      const text = last ? (last.textContent ?? "") : "";
      if (text !== "" && w.__partials[w.__partials.length - 1] !== text) w.__partials.push(text);
    }).observe(log, { childList: true, subtree: true, characterData: true });
  });
}

// Types a message, sends it with Enter, and waits for the answer's stats line (or an error).
async function send(page: Page, message: string, n_assistant: number): Promise<Observed> {
  await page.evaluate(() => {
    (window as unknown as { __partials: string[] }).__partials = [];
  });
  await page.click("#input");
  await page.type("#input", message);
  await page.keyboard.press("Enter");
  await page.waitForFunction(
    (n) =>
      document.querySelectorAll(".msg.assistant .stats").length >= n ||
      document.querySelector(".msg.error") !== null,
    { timeout: kTimeoutMs },
    n_assistant,
  );
  const error = await page.$(".msg.error");
  if (error) {
    throw new Mismatch(`the page shows an error: ${await error.evaluate((e) => e.textContent)}`);
  }
  return page.evaluate((n) => {
    const bubble = document.querySelectorAll(".msg.assistant")[n - 1];
    return {
      text: bubble.querySelector(".text")?.textContent ?? "",
      stats: bubble.querySelector(".stats")?.textContent ?? "",
      partials: (window as unknown as { __partials: string[] }).__partials,
    };
  }, n_assistant);
}

function checkAnswer(observed: Observed, expected: string, what: string): void {
  check(
    observed.text === expected,
    `${what}: the page shows ${show(observed.text)}, a direct greedy request gives ${show(expected)}`,
  );
  for (const field of ["drafter", "tau", "tok/s"]) {
    check(observed.stats.includes(field), `${what}: stats line ${show(observed.stats)} lacks ${field}`);
  }
  // Streaming happened: the bubble showed growing prefixes of the answer before the whole.
  const before = observed.partials.filter((p) => p !== observed.text);
  check(
    before.length >= 2,
    `${what}: saw ${before.length} partial texts before the answer (${show(observed.partials)})`,
  );
  for (const partial of before) {
    check(expected.startsWith(partial), `${what}: partial ${show(partial)} is not a prefix`);
  }
}

async function run(config: Config, browser: Browser): Promise<number> {
  let passed = 0;
  const ok = (name: string) => {
    ++passed;
    console.log(`ok ${name}`);
  };
  const page = await browser.newPage();
  page.setDefaultTimeout(kTimeoutMs);
  const pageErrors: string[] = [];
  page.on("pageerror", (e) => pageErrors.push(String(e)));

  const res = await page.goto(config.url + "/", { waitUntil: "load" });
  check(res?.status() === 200, `GET / answered ${res?.status()}`);
  check((await page.title()) === "augur chat", `title ${show(await page.title())}`);
  await installObserver(page);
  ok("page loads");

  await setField(page, "#api_key", "wrong-" + config.api_key);
  await page.type("#input", "hello");
  await page.keyboard.press("Enter");
  const error = await page.waitForSelector(".msg.error", { timeout: kTimeoutMs });
  const errorText = (await error?.evaluate((e) => e.textContent)) ?? "";
  check(errorText.includes("API key"), `wrong key: error bubble says ${show(errorText)}`);
  ok("a wrong API key shows the server's error");

  await page.click("#clear");
  await setField(page, "#api_key", config.api_key);
  await page.waitForFunction(
    (model) => document.getElementById("model")?.textContent === model,
    { timeout: kTimeoutMs },
    config.model,
  );
  ok("the right API key shows the model's name");

  await setField(page, "#temperature", "0");
  await setField(page, "#max_tokens", String(config.max_tokens));
  const history: ChatMessage[] = [];
  for (const [turn, message] of config.messages.entries()) {
    const observed = await send(page, message, turn + 1);
    history.push({ role: "user", content: message });
    const direct = await directAnswer(config, history);
    if (turn === 0) {
      check(
        direct === config.first_text,
        `direct request ${show(direct)} != augur run ${show(config.first_text)}`,
      );
    }
    checkAnswer(observed, direct, `turn ${turn + 1}`);
    history.push({ role: "assistant", content: observed.text });
    ok(`turn ${turn + 1} streamed ${observed.partials.length} states, stats ${show(observed.stats)}`);
  }
  check(pageErrors.length === 0, `errors in the page: ${show(pageErrors)}`);
  if (config.screenshot) await page.screenshot({ path: config.screenshot, fullPage: true });
  return passed;
}

async function main(): Promise<void> {
  if (process.argv.length !== 3) {
    console.error("usage: node chat_page.js CONFIG.json");
    process.exit(2);
  }
  const config = JSON.parse(fs.readFileSync(process.argv[2], "utf8")) as Config;
  // --no-sandbox: the tests run as root, where Chromium's sandbox refuses to start.
  const browser = await puppeteer.launch({
    executablePath: config.chromium,
    headless: true,
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  try {
    const passed = await run(config, browser);
    console.log(`chat page: all ${passed} checks passed`);
  } catch (e) {
    console.error(`MISMATCH ${e instanceof Error ? e.message : String(e)}`);
    process.exitCode = 1;
  } finally {
    await browser.close();
  }
}

main().catch((e: unknown) => {
  console.error(`MISMATCH ${e instanceof Error ? e.message : String(e)}`);
  process.exit(1);
});
